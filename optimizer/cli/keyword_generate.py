"""`generate --keys FILE|N [--max-value-size B]` (and `plan --keys`): the shape of a keyword
build, its plan, and its table shape written as NAME/keyword.json beside the table
database's build."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from spiralpir.optimizer import codegen
from spiralpir.optimizer.cli.counts import parse_count
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.plan.keyword_plan import plan_keyword
from spiralpir.optimizer.service.keyword_input import KeywordOptions, read_keyword_db
from spiralpir.optimizer.service.keyword_server import KEYWORD_FILE, read_shape


def keyword_shape(keys: str, max_value_size: str | None, opts: KeywordOptions
                  ) -> tuple[int, int]:
    """(keys, longest value) to plan for: a key/value file's key count and its longest value
    (or --max-value-size, which every value must fit); else N keys and --max-value-size."""
    path = Path(keys)
    limit = parse_count(max_value_size, "--max-value-size") if max_value_size else None
    if path.suffix.lower() in (".jsonl", ".ndjson", ".csv") or path.is_file():
        data = read_keyword_db(path, opts, limit)
        count, longest = len(data.keys), (limit if limit is not None else data.longest)
        click.echo(f"{path}: {count:,} keys, longest value {data.longest} bytes; planning "
                   f"for values up to {longest} bytes", err=True)
        return count, longest
    if limit is None:
        raise SpiralpirError("--keys N needs --max-value-size B")
    return parse_count(keys, "--keys"), limit


def keyword_document(keys: str, max_value_size: str | None, opts: KeywordOptions,
                     **options: Any) -> dict[str, Any]:
    """The plan document of a keyword build (keyword_shape's keys and values)."""
    return plan_keyword(*keyword_shape(keys, max_value_size, opts), **options).to_json()


def write_keyword_file(target: Path, section: Any) -> bool:
    """NAME/keyword.json from a keyword plan's section (removed for a plan without one)."""
    path = target / KEYWORD_FILE
    if section is None:
        path.unlink(missing_ok=True)
        return False
    codegen.write_atomic(path, json.dumps({"keyword": section}, sort_keys=True, indent=2) + "\n")
    shape = read_shape(path)
    records = int(codegen.load_document(target / "params.json")["params"]["records"])
    if shape.capacity > records:
        raise SpiralpirError(f"the plan's keyword section: a table of {shape.capacity} slots "
                             "exceeds the plan's records")
    return True
