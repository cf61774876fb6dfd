"""`spiralpir serve`: serve a database with a generated build over HTTP (aiohttp).

aiohttp in front of the C++ runtime (through the build's C ABI, loaded with ctypes): a kept
asynchronous HTTP library, no extension module to compile beyond the generated build, and
answers run in a thread pool so the event loop keeps serving while the runtime computes.
"""

from __future__ import annotations

from pathlib import Path

import click
from spiralpir.optimizer import database, server
from spiralpir.optimizer.instance import open_build


@click.command(name="serve")
@click.option("--build", "source_dir", required=True,
              type=click.Path(file_okay=False, path_type=Path), help="generated/NAME")
@click.option("--db", "db_path", required=True, type=click.Path(path_type=Path),
              help="Records: binary file, directory, or .jsonl file.")
@click.option("--record-size", type=int, default=None,
              help="Record size of a binary file (default: the build's record size).")
@click.option("--format", "fmt", type=click.Choice(database.FORMATS), default=None,
              help="Input format (default: from the path).")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8080, show_default=True, help="0 picks a free port.")
@click.option("--threads", type=int, default=0, help="Runtime threads per answer (0: all cores).")
@click.option("--workers", type=int, default=2, show_default=True,
              help="Requests answered concurrently.")
@click.option("--preprocessed", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Preprocessed database file (default: DB.NAME.spiralpir-db next to DB).")
@click.option("--no-cache", is_flag=True, help="Do not save or reuse the preprocessed file.")
@click.option("--max-clients", type=int, default=32, show_default=True)
@click.option("--ci", is_flag=True, help="Use the build's CI-sized twin.")
@click.option("--build-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
def serve(source_dir: Path, db_path: Path, record_size: int | None, fmt: str | None, host: str,
          port: int, threads: int, workers: int, preprocessed: Path | None, no_cache: bool,
          max_clients: int, ci: bool, build_dir: Path | None) -> None:
    """Serve DB privately: POST /v1/setup, POST /v1/query, GET /v1/params, GET /v1/health."""
    build = open_build(source_dir, build_dir, ci=ci)
    records = database.read_records(db_path, build.record_size, record_size, fmt)
    if no_cache:
        preprocessed = None
    elif preprocessed is None:
        preprocessed = database.default_preprocessed_path(
            db_path, build.name + ("_ci" if ci else ""))
    srv = server.PirServer(build, records, threads=threads, preprocessed=preprocessed,
                           max_clients=max_clients)
    click.echo(f"serving {srv.num_records} records x {srv.record_size} bytes with build "
               f"{build.label}", err=True)
    server.run(srv, host, port, workers)
