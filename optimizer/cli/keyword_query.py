"""`spiralpir query --key KEY`: one keyword lookup, its value (or "not found", status 1)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click


def query_key(client: Any, key: str, out: Path | None, as_json: bool,
              shown: Callable[[bytes], str], write: Callable[[Path, bytes], None]) -> None:
    """Look ``key`` up with ``client`` (a PirClient) and report (the value printed by
    ``shown``, written to ``out`` by ``write``); exit status 1 when the key is absent."""
    try:
        result = client.lookup(key)
    finally:
        client.close()
    if out is not None and result.value is not None:
        write(out, result.value)
    if as_json:
        click.echo(json.dumps(result.to_json(), sort_keys=True))
    elif result.value is None:
        click.echo("not found")
    elif out is None:
        click.echo(shown(result.value))
    if not as_json:
        s = result.seconds
        click.echo(f"key {json.dumps(result.key)}: "
                   + (f"{len(result.value)} bytes" if result.found else "not found")
                   + (f" -> {out}" if out is not None and result.found else "")
                   + f"; one query, {result.bins} responses: request "
                   f"{result.request_bytes:,} B, reply {result.response_bytes:,} B"
                   + (f", public params uploaded {result.public_params_bytes_uploaded:,} B"
                      if result.public_params_bytes_uploaded else "")
                   + f"; server {s['server'] * 1e3:.1f} ms, round trip "
                   f"{s['round_trip'] * 1e3:.1f} ms", err=True)
    sys.stdout.flush()
    if not result.found:
        sys.exit(1)  # click returns (not exits) the code of its Exit when not standalone
