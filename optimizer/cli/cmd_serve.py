"""`spiralpir serve`: serve a database with a generated build over HTTP (aiohttp).

aiohttp in front of the C++ runtime (through the build's C ABI, loaded with ctypes): a kept
asynchronous HTTP library, no extension module to compile beyond the generated build, and
answers run in a thread pool so the event loop keeps serving while the runtime computes.

``--stream`` serves a sequence of databases of the build's shape instead of one ``--db`` (the
blocks of a media file, say): a client uploads one query, the server prepares it once and
answers every block from it (POST /v1/stream, GET /v1/stream/ID/blocks/K).
"""

from __future__ import annotations

from pathlib import Path

import click
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import http_server, pir_server, store
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service.binding import prepared_query_bytes
from spiralpir.optimizer.service.builds import open_build


@click.command(name="serve")
@click.option("--build", "source_dir", required=True,
              type=click.Path(file_okay=False, path_type=Path), help="generated/NAME")
@click.option("--db", "db_path", type=click.Path(path_type=Path), default=None,
              help="Records: binary file, directory, or .jsonl file.")
@click.option("--stream", "stream_paths", multiple=True, type=click.Path(path_type=Path),
              help="Streaming mode, instead of --db: a directory whose entries (sorted by name) "
              "are the blocks, or one block (a database like --db's); repeat for more blocks. "
              "Each client query is prepared once and answers every block.")
@click.option("--record-size", type=int, default=None,
              help="Record size of a binary file (default: the build's record size).")
@click.option("--format", "fmt", type=click.Choice(database.FORMATS), default=None,
              help="Input format (default: from the path).")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8080, show_default=True, help="0 picks a free port.")
@click.option("--threads", type=int, default=0, help="Runtime threads per answer (0: all cores).")
@click.option("--workers", type=int, default=2, show_default=True,
              help="Requests answered concurrently.")
@click.option("--preprocessed", type=click.Path(path_type=Path), default=None,
              help="Preprocessed database file (default: DB.NAME.spiralpir-db next to DB); with "
              "--stream, a directory for the blocks' files (default: next to each block).")
@click.option("--no-cache", is_flag=True, help="Do not save or reuse preprocessed files.")
@click.option("--max-clients", type=int, default=32, show_default=True)
@click.option("--max-streams", type=int, default=8, show_default=True,
              help="Stream sessions (prepared queries) kept; the least recently used goes first.")
@click.option("--stream-ttl", type=float, default=600.0, show_default=True,
              help="Seconds an idle stream session is kept.")
@click.option("--ci", is_flag=True, help="Use the build's CI-sized twin.")
@click.option("--build-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
def serve(source_dir: Path, db_path: Path | None, stream_paths: tuple[Path, ...],
          record_size: int | None, fmt: str | None, host: str, port: int, threads: int,
          workers: int, preprocessed: Path | None, no_cache: bool, max_clients: int,
          max_streams: int, stream_ttl: float, ci: bool, build_dir: Path | None) -> None:
    """Serve DB privately: POST /v1/setup, POST /v1/query, GET /v1/params, GET /v1/health
    (with --stream: POST /v1/stream, GET /v1/stream/ID/blocks/K, DELETE /v1/stream/ID)."""
    if (db_path is None) == (not stream_paths):
        raise SpiralpirError("give either --db FILE or --stream DIR_OR_FILE (repeatable)")
    paths = pir_server.stream_block_paths(stream_paths) if stream_paths else []
    build = open_build(source_dir, build_dir, ci=ci)
    tag = build.name + ("_ci" if ci else "")

    def cache_path(path: Path) -> Path | None:
        if no_cache:
            return None
        if preprocessed is None:
            return store.default_path(path, tag)
        if not stream_paths:
            return preprocessed
        if preprocessed.exists() and not preprocessed.is_dir():
            raise SpiralpirError(f"--preprocessed {preprocessed}: with --stream, give a "
                                 "directory for the blocks' preprocessed files")
        preprocessed.mkdir(parents=True, exist_ok=True)
        return preprocessed / store.default_path(path, tag).name

    common = {"threads": threads, "max_clients": max_clients, "max_streams": max_streams,
              "stream_ttl": stream_ttl}
    if db_path is not None:
        records = database.read_records(db_path, build.record_size, record_size, fmt)
        srv = pir_server.PirServer(build, records, preprocessed=cache_path(db_path), **common)
        click.echo(f"serving {srv.num_records} records x {srv.record_size} bytes with build "
                   f"{build.label}", err=True)
    else:
        caches = [cache_path(p) for p in paths]  # option errors before reading any block
        blocks = [(database.read_records(p, build.record_size, record_size, fmt), pre)
                  for p, pre in zip(paths, caches, strict=True)]
        srv = pir_server.PirServer(build, blocks=blocks, **common)
        each = prepared_query_bytes(build.params)
        click.echo(f"streaming {len(srv.blocks)} blocks of up to {srv.num_records} records x "
                   f"{srv.record_size} bytes with build {build.label} (at most {max_streams} "
                   f"stream sessions of ~{each / 1e6:.1f} MB each, idle expiry {stream_ttl:g} s)",
                   err=True)
    http_server.run(srv, host, port, workers)
