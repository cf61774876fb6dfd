"""`spiralpir query`: retrieve one record privately from a spiralpir server."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click
from spiralpir.optimizer.client import PirClient


@click.command(name="query")
@click.option("--server", "url", required=True, help="Server URL, e.g. http://127.0.0.1:8080")
@click.option("--index", type=int, required=True, help="Record index (0-based).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write exactly the record's bytes to this file.")
@click.option("--state", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Client state file (keys, client id); default under ~/.local/state/spiralpir.")
@click.option("--build", "source_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Local generated/NAME of the server's build (default: found "
              "by the name the server reports).")
@click.option("--build-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report (record in hex).")
def query(url: str, index: int, out: Path | None, state: Path | None, source_dir: Path | None,
          build_dir: Path | None, as_json: bool) -> None:
    """Fetch record INDEX without the server learning INDEX."""
    client = PirClient(url, source_dir=source_dir, build_dir=build_dir, state_path=state)
    try:
        result = client.query(index)
    finally:
        client.close()
    if out is not None:
        tmp = out.with_name(out.name + f".tmp{os.getpid()}")
        tmp.write_bytes(result.record)
        os.replace(tmp, out)
    if as_json:
        click.echo(json.dumps(result.to_json(), sort_keys=True))
        return
    if out is None:
        click.echo(result.record.hex())
    s = result.seconds
    click.echo(
        f"record {index}: {len(result.record)} bytes"
        + (f" -> {out}" if out else "")
        + f"; query {result.query_bytes:,} B, response {result.response_bytes:,} B"
        + (f", public params uploaded {result.public_params_bytes_uploaded:,} B"
           if result.public_params_bytes_uploaded else "")
        + f"; server {s['server'] * 1e3:.1f} ms, round trip {s['round_trip'] * 1e3:.1f} ms, "
        f"query {s['query_gen'] * 1e3:.1f} ms, decode {s['decode'] * 1e3:.1f} ms",
        err=True,
    )
    sys.stdout.flush()
