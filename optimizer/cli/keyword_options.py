"""The options that say how to read a keyword database (JSON Lines or CSV), shared by
`generate --keys FILE` and `serve` of a keyword build."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
from spiralpir.optimizer.service.keyword_input import KeywordOptions


def keyword_input_options(f: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed([
        click.option("--base64-values", is_flag=True,
                     help="Keyword database: values are base64 (default: UTF-8 text)."),
        click.option("--key-column", default="key", show_default=True,
                     help="Keyword database in CSV: the column holding the keys."),
        click.option("--value-column", default="value", show_default=True,
                     help="Keyword database in CSV: the column holding the values."),
    ]):
        f = opt(f)
    return f


def keyword_options(base64_values: bool, key_column: str, value_column: str) -> KeywordOptions:
    return KeywordOptions(base64_values, key_column, value_column)
