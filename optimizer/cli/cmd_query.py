"""`spiralpir query`: retrieve one record privately from a spiralpir server (with ``--stream``:
record I of every block of a streaming server, one query uploaded once)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import click
from spiralpir.optimizer.cli.keyword_query import query_key
from spiralpir.optimizer.cli.out_paths import check_out_file
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service.batch_results import BatchResult
from spiralpir.optimizer.service.http_api import parse_decimal
from spiralpir.optimizer.service.pir_client import PirClient
from spiralpir.optimizer.service.results import QueryResult, StreamResult


def parse_blocks(text: str | None, count: int) -> list[int] | None:
    """'K' (one block), 'A:B' (A .. B-1), 'A:' or ':B' -> block indices; None -> all."""
    if text is None:
        return None
    lo, sep, hi = text.partition(":")
    start = parse_decimal(lo) if lo else 0
    stop = (parse_decimal(hi) if hi else count) if sep else (None if start is None else start + 1)
    if start is None or stop is None:
        raise SpiralpirError(f"--blocks '{text}': expected K, A:B, A: or :B (ASCII digits)")
    if not 0 <= start < stop <= count:
        raise SpiralpirError(f"--blocks '{text}': the server streams {count} block(s); "
                             f"need 0 <= A < B <= {count}")
    return list(range(start, stop))


def ascii_index(_ctx: click.Context, _param: click.Parameter,
                values: tuple[str, ...]) -> list[int]:
    """--index: a record index in ASCII digits ('١' or '²' are not numbers here), or several
    separated by commas (a batch: I,J,K). The option is declared repeatable only so that a
    second --index is refused instead of silently replacing the first."""
    if not values:
        return []
    if len(values) != 1:
        raise SpiralpirError("give one --index (several records: --index I,J,K)")
    out = []
    for value in values[0].split(","):
        index = parse_decimal(value.strip())
        if index is None:
            raise SpiralpirError(f"--index '{values[0]}': expected record indices (ASCII "
                                 f"digits, separated by commas), not '{value}'")
        out.append(index)
    return out


def server_url(text: str) -> str:
    """--server: an http(s) URL; a bare HOST:PORT means http://HOST:PORT, since `spiralpir
    serve` speaks plain HTTP (https is for a TLS proxy in front of it)."""
    url = text.strip()
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 -- raises on a port that is not a number
    except ValueError:
        parts = parts._replace(netloc="")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SpiralpirError(f"--server '{text}': expected a server URL such as "
                             "http://127.0.0.1:8080")
    return url


def write_atomic(out: Path, data: bytes) -> None:
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, out)


@click.command(name="query")
@click.option("--server", "url", required=True, help="Server URL, e.g. http://127.0.0.1:8080")
@click.option("--index", multiple=True, callback=ascii_index,
              help="Record index (0-based), or several separated by commas (3,17,99): "
              "fetched in one request from a batch build, printed in that order.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write exactly the record's bytes to this file (--stream: the records of "
              "the blocks, concatenated in block order).")
@click.option("--stream", "streaming", is_flag=True,
              help="Retrieve record INDEX from every block of a streaming server (serve "
              "--stream): the query is uploaded and prepared once.")
@click.option("--blocks", "blocks_text", default=None, metavar="K|A:B",
              help="With --stream: only block K, or blocks A .. B-1.")
@click.option("--in-flight", type=click.IntRange(min=1), default=2, show_default=True,
              help="With --stream: block requests sent at once (the server answers --workers "
              "requests at a time).")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="With --stream: a progress bar over the blocks (on a terminal).")
@click.option("--state", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Client state file (keys, client id); default under ~/.local/state/spiralpir.")
@click.option("--build", "source_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Local generated/NAME of the server's build (default: found "
              "by the name the server reports).")
@click.option("--build-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--min-version", type=click.IntRange(min=0), default=0,
              help="Refuse an answer from a database version older than this (the server "
              "says which version it holds; updates raise it).")
@click.option("--wait", type=click.FloatRange(min=0), default=60.0, show_default=True,
              metavar="SECONDS", help="Wait this long for a server that is still starting "
              "(0: fail at once).")
@click.option("--text", "as_text", is_flag=True,
              help="Print the record as UTF-8 text instead of hex (an error if it is not).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report (records in hex).")
@click.option("--key", default=None, help="Look this key up on a keyword server (instead of "
              "--index): prints its value, or 'not found' with exit status 1.")
def query(url: str, index: list[int], out: Path | None, streaming: bool, blocks_text: str | None,
          in_flight: int, progress: bool, state: Path | None, source_dir: Path | None,
          build_dir: Path | None, min_version: int, wait: float, as_text: bool,
          as_json: bool, key: str | None) -> None:
    """Fetch record INDEX (or the value of KEY) without the server learning which."""
    if (key is None) == (not index):
        raise SpiralpirError("give --index I (or I,J,K) or --key KEY")
    if (blocks_text is not None or in_flight != 2) and not streaming:
        raise SpiralpirError("--blocks and --in-flight need --stream")
    if min_version and streaming:
        raise SpiralpirError("--min-version applies to a server of one database, not --stream")
    if as_text and (as_json or out is not None):
        raise SpiralpirError("--text prints the record; it does not go with --json or --out")
    check_out_file(out, "--out")
    if key is not None and (streaming or min_version):
        raise SpiralpirError("--key looks up one keyword server; not with --stream or "
                             "--min-version")
    client = PirClient(server_url(url), source_dir=source_dir, build_dir=build_dir,
                       state_path=state, wait=wait)
    if key is not None:
        query_key(client, key, out, as_json, record_text if as_text else bytes.hex,
                  write_atomic)
        return
    batch = "batch" in client.info
    if len(index) > 1 and (streaming or not batch):
        client.close()
        raise SpiralpirError(f"--index with several records needs a batch build (`generate "
                             f"--batch K`); {url} serves " + ("streams" if streaming else
                                                              "one database"))
    if min_version and batch:
        client.close()
        raise SpiralpirError("--min-version applies to a server of one database, not a batch "
                             "build")
    try:
        if streaming:
            blocks = parse_blocks(blocks_text, len(client.blocks))
            result: QueryResult | StreamResult | BatchResult = client.stream(
                index[0], blocks, progress, in_flight)
        elif batch:
            result = client.get_many(index)
        else:
            result = client.query(index[0], min_version)
    finally:
        client.close()
    if out is not None:
        write_atomic(out, result.record)
    if as_json:
        click.echo(json.dumps(result.to_json(), sort_keys=True))
        return
    shown = record_text if as_text else bytes.hex
    if isinstance(result, BatchResult):
        report_batch(result, out, shown)
    elif isinstance(result, StreamResult):
        report_stream(result, out, shown)
    else:
        report_one(result, out, shown)
    sys.stdout.flush()


def sizes_line(what: str, out: Path | None, responses: str,
               result: QueryResult | StreamResult) -> str:
    uploaded = result.public_params_bytes_uploaded
    return (what + (f" -> {out}" if out else "") + f"; query {result.query_bytes:,} B"
            + responses + (f", public params uploaded {uploaded:,} B" if uploaded else ""))


def record_text(record: bytes) -> str:
    """--text: the record as UTF-8 text; an error (not a garbled line) if it is not."""
    try:
        return record.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpiralpirError(f"the record is not UTF-8 text (byte 0x{record[exc.start]:02x} at "
                             f"offset {exc.start}); print it in hex without --text") from None


def report_one(result: QueryResult, out: Path | None,
               shown: Callable[[bytes], str] = bytes.hex) -> None:
    if out is None:
        click.echo(shown(result.record))
    s = result.seconds
    click.echo(
        sizes_line(f"record {result.index}: {len(result.record)} bytes"
                   + (f" (database version {result.version})" if result.version is not None
                      else ""), out,
                   f", response {result.response_bytes:,} B", result)
        + f"; server {s['server'] * 1e3:.1f} ms, round trip {s['round_trip'] * 1e3:.1f} ms, "
        f"query {s['query_gen'] * 1e3:.1f} ms, decode {s['decode'] * 1e3:.1f} ms",
        err=True,
    )


def report_stream(result: StreamResult, out: Path | None,
                  shown: Callable[[bytes], str] = bytes.hex) -> None:
    if out is None:
        for b in result.blocks:
            click.echo(f"{b.block} " + ("-" if b.record is None else shown(b.record)))
    t = result.totals()
    p = result.prepare_seconds
    response = sum(b.response_bytes for b in result.blocks)
    click.echo(
        sizes_line(f"record {result.index} of {t['blocks']} block(s): "
                   f"{len(result.record):,} bytes", out,
                   f" uploaded {result.opens}x, responses {response:,} B", result)
        + f"\n  one-time: server prepare {p.get('server_total', 0) * 1e3:.1f} ms, upload round "
        f"trip {p.get('upload_round_trip', 0) * 1e3:.1f} ms, query {p['query_gen'] * 1e3:.1f} ms"
        + f"\n  per block: server {t['server_seconds_per_block'] * 1e3:.1f} ms, "
        f"{t['server_throughput_bytes_per_second'] / 1e6:.1f} MB/s server, "
        f"{t['round_trip_throughput_bytes_per_second'] / 1e6:.1f} MB/s round trip",
        err=True,
    )


def report_batch(result: BatchResult, out: Path | None,
                 shown: Callable[[bytes], str] = bytes.hex) -> None:
    if out is None:
        for i, rec in zip(result.indices, result.records, strict=True):
            click.echo(f"{i} {shown(rec)}")
    s = result.seconds
    uploaded = result.public_params_bytes_uploaded
    click.echo(
        f"{len(result.indices)} record(s) ({len(set(result.indices))} distinct) from "
        f"{result.buckets} buckets in one request" + (f" -> {out}" if out else "")
        + f"; request {result.request_bytes:,} B, responses {result.response_bytes:,} B"
        + (f", public params uploaded {uploaded:,} B" if uploaded else "")
        + f"; server {s['server'] * 1e3:.1f} ms, round trip {s['round_trip'] * 1e3:.1f} ms, "
        f"queries {s['query_gen'] * 1e3:.1f} ms, decode {s['decode'] * 1e3:.1f} ms",
        err=True,
    )
