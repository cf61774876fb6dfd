"""`spiralpir serve`: serve a database with a generated build over HTTP (aiohttp).

aiohttp in front of the C++ runtime (through the build's C ABI, loaded with ctypes): a kept
asynchronous HTTP library, no extension module to compile beyond the generated build, and
answers run in a thread pool so the event loop keeps serving while the runtime computes.

``--stream`` serves a sequence of databases of the build's shape instead of one ``--db`` (the
blocks of a media file, say): a client uploads one query, the server prepares it once and
answers every block from it (POST /v1/stream, GET /v1/stream/ID/blocks/K).
"""

from __future__ import annotations

import re
from pathlib import Path

import click
from spiralpir.optimizer.cli.keyword_options import keyword_input_options, keyword_options
from spiralpir.optimizer.cli.keyword_serve import keyword_server
from spiralpir.optimizer.cli.serve_page import page_options, prepare_page
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import (
    batch_server,
    db_updates,
    http_server,
    pir_server,
    sharded_server,
    shards,
    store,
)
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service.admin_http import Admin, read_token
from spiralpir.optimizer.service.binding import prepared_query_bytes
from spiralpir.optimizer.service.builds import open_build
from spiralpir.optimizer.service.db_lock import DbLock
from spiralpir.optimizer.service.keyword_server import KEYWORD_FILE
from spiralpir.optimizer.service.listener import bind_listener


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
@click.option("--preprocessed", type=click.Path(path_type=Path), default=None,
              help="Preprocessed database file (default: DB.NAME.spiralpir-db next to DB); with "
              "--stream, a directory for the blocks' files (default: next to each block).")
@click.option("--no-cache", is_flag=True, help="Do not save or reuse preprocessed files.")
@click.option("--max-clients", type=click.IntRange(min=1), default=None,
              help="Clients whose public parameters are kept (the least recently used is "
              "dropped first and uploads again). Default: --client-memory divided by the "
              "memory one client's parameters take, measured at startup.")
@click.option("--client-memory", default="1GiB", show_default=True, metavar="SIZE",
              help="Memory for clients' public parameters, sizing --max-clients: bytes, or "
              "with a KiB/MiB/GiB (or kB/MB/GB) suffix.")
@click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True,
              help="Requests answered concurrently.")
@click.option("--max-queue", type=click.IntRange(min=0), default=http_server.Limits.max_queue,
              show_default=True, help="Requests admitted beyond the --workers running; more "
              "get 503 with Retry-After.")
@click.option("--max-uploads", type=click.IntRange(min=1), default=http_server.Limits.max_uploads,
              show_default=True, help="Request bodies received at once; more get 503.")
@click.option("--header-timeout", type=click.FloatRange(min=0, min_open=True),
              default=http_server.Limits.header_timeout, show_default=True,
              help="Seconds for a request's head to arrive (and an idle connection's life).")
@click.option("--body-timeout", type=click.FloatRange(min=0, min_open=True),
              default=http_server.Limits.body_timeout, show_default=True,
              help="Seconds for a request's whole body to arrive (total, not per read).")
@click.option("--max-streams", type=int, default=8, show_default=True,
              help="Stream sessions (prepared queries) kept; the least recently used goes first.")
@click.option("--stream-ttl", type=float, default=600.0, show_default=True,
              help="Seconds an idle stream session is kept.")
@click.option("--quiet", is_flag=True, help="No access log (one line per request on stderr: "
              "peer, method, path, status, response bytes, seconds).")
@click.option("--admin-token-file", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Enable POST /v1/admin/update (live record updates of a "
              "binary --db, or key changes of a keyword table) for requests bearing the token in "
              "this file; the database is then "
              "held in memory twice. Without it there is no admin endpoint.")
@click.option("--ci", is_flag=True, help="Use the build's CI-sized twin.")
@click.option("--build-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--ray", "ray_address", default=None, metavar="ADDRESS|local",
              help="Serve the shards of --shards on the Ray cluster at ADDRESS (`ray start "
              "--head` prints it), or on a cluster started in this process with 'local'.")
@click.option("--shards", "shard_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="With --ray: a directory written by `spiralpir shard` (its "
              "manifest.json and one file per shard), at the same path on every node.")
@click.option("--shard-cpus", type=click.FloatRange(min=0, min_open=True), default=1.0,
              show_default=True, help="With --ray: CPUs each shard's actor reserves (and the "
              "runtime threads it uses, rounded down, at least 1).")
@click.option("--expand-at", type=click.Choice(["auto", "split", "shards", "coordinator"]),
              default="auto", show_default=True, help="With --ray: where a query is expanded "
              "and converted — split between the shards (each prepares 1/2^S and receives the "
              "others' shares), on every shard (only the query travels), or once here (its "
              "expanded form, far larger, goes to each). auto: split when every shard runs "
              "on this node or the shards' network moves the expanded query faster than one "
              "core prepares it (--shard-network-gbps), else shards.")
@click.option("--shard-network-gbps", type=click.FloatRange(min=0), default=0.0,
              show_default=True, help="With --expand-at auto: each shard node's network "
              "bandwidth in Gb/s (0: unknown, split only when all shards share one node).")
@click.option("--strict-spread", is_flag=True, help="With --ray: never place two shards on one "
              "node (Ray's STRICT_SPREAD; the default SPREAD spreads where it can).")
@click.option("--batch-layout", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Serve --db as the buckets of this batch layout (a batch.json); default: "
              "the build's batch.json if it has one (`generate --batch K`).")
@click.option("--keyword-table", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Serve --db (key/value .jsonl or .csv) as a keyword table of this shape (a "
              "keyword.json); default: the build's keyword.json if it has one (`generate "
              "--keys ...`).")
@keyword_input_options
@page_options
def serve(source_dir: Path, db_path: Path | None, stream_paths: tuple[Path, ...],
          record_size: int | None, fmt: str | None, host: str, port: int, threads: int,
          preprocessed: Path | None, no_cache: bool, max_clients: int | None,
          client_memory: str, workers: int, max_queue: int, max_uploads: int,
          header_timeout: float, body_timeout: float, max_streams: int, stream_ttl: float,
          quiet: bool, admin_token_file: Path | None, ci: bool, build_dir: Path | None,
          ray_address: str | None, shard_dir: Path | None, shard_cpus: float,
          expand_at: str, shard_network_gbps: float, strict_spread: bool,
          batch_layout: Path | None,
          keyword_table: Path | None, base64_values: bool, key_column: str,
          value_column: str, page: bool, cors_origins: tuple[str, ...]) -> None:
    """Serve DB privately: POST /v1/setup, POST /v1/query, GET /v1/params, GET /v1/health
    (with --stream: POST /v1/stream, GET /v1/stream/ID/blocks/K, DELETE /v1/stream/ID), and
    a lookup page at / (--no-page: none)."""
    if (ray_address is None) != (shard_dir is None):
        raise SpiralpirError("--ray ADDRESS|local and --shards DIR go together")
    if shard_dir is not None:
        if db_path is not None or stream_paths or admin_token_file is not None:
            raise SpiralpirError("--shards serves the database `spiralpir shard` wrote: no "
                                 "--db, --stream or --admin-token-file")
        memory = parse_size(client_memory, "--client-memory")
        limits = http_server.Limits(header_timeout, body_timeout, max_uploads, max_queue)
        sock = bind_listener(host, port)
        srv = serve_shards(source_dir, build_dir, ci, shard_dir, str(ray_address), shard_cpus,
                           strict_spread, max_clients, memory, expand_at, shard_network_gbps)
        try:
            http_server.run(srv, host, port, workers, limits, sock=sock, quiet=quiet,
                            page=prepare_page(source_dir, ci, build_dir, page, cors_origins))
        finally:
            srv.cluster.close()
        return
    if (db_path is None) == (not stream_paths):
        raise SpiralpirError("give either --db FILE or --stream DIR_OR_FILE (repeatable)")
    if admin_token_file is not None and db_path is None:
        raise SpiralpirError("--admin-token-file updates one --db, not a --stream")
    token = read_token(admin_token_file) if admin_token_file is not None else None
    memory = parse_size(client_memory, "--client-memory")
    limits = http_server.Limits(header_timeout, body_timeout, max_uploads, max_queue)
    paths = pir_server.stream_block_paths(stream_paths) if stream_paths else []
    sock = bind_listener(host, port)  # a port in use is an error now, not after preprocessing
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

    common = {"threads": threads, "max_clients": max_clients, "client_memory": memory,
              "max_streams": max_streams, "stream_ttl": stream_ttl}
    admin = None
    if keyword_table is None and (source_dir / KEYWORD_FILE).is_file():
        keyword_table = source_dir / KEYWORD_FILE
    if keyword_table is not None and (db_path is None or batch_layout is not None):
        raise SpiralpirError("a keyword build serves one --db of keys and values (not "
                             "--stream or --batch-layout)")
    if batch_layout is None and keyword_table is None and \
            (source_dir / batch_server.BATCH_FILE).is_file():
        batch_layout = source_dir / batch_server.BATCH_FILE
    if keyword_table is not None and db_path is not None:
        srv, admin = keyword_server(build, keyword_table, db_path,
                                    keyword_options(base64_values, key_column, value_column),
                                    cache_path(db_path), common, token, STORE_EVERY)
    elif batch_layout is not None:
        if db_path is None:
            raise SpiralpirError("a batch build serves one --db (as buckets), not --stream")
        if token is not None:
            raise SpiralpirError("--admin-token-file: a batch build's buckets take no updates "
                                 "yet; serve it without updates")
        layout = batch_server.read_layout(batch_layout)
        records = database.read_records(db_path, build.record_size, record_size, fmt)
        store_dir = None if no_cache else (
            preprocessed or batch_server.default_store_dir(db_path, tag))
        srv = batch_server.BatchServer(build, layout, records, preprocessed_dir=store_dir,
                                       **common)
        click.echo(f"serving {srv.num_records} records x {srv.record_size} bytes as "
                   f"{layout.buckets} buckets of {layout.capacity} (each record in {layout.w}) "
                   f"with build {build.label}; POST /v1/batch answers all buckets, "
                   f"{srv.pool_threads} at a time" + assumed_size(records, record_size),
                   err=True)
    elif db_path is not None:
        records = database.read_records(db_path, build.record_size, record_size, fmt)
        file_record_size = records.record_size  # open_files pads records to the build's size
        version = 0
        if token is not None:
            db_updates.check_updatable(records)
        if records.fmt == "binary":  # the versions of a file updates can change (db_updates.py)
            # held until exit; a reader alone may finish an interrupted update first
            lock, alone = (DbLock(db_path, writer=True), True) if token is not None else \
                DbLock.reader_first_writing(db_path)
            files, records, version = db_updates.open_files(
                build, db_path, records, cache_path(db_path),
                lambda m: click.echo(m, err=True), may_write=alone,
                resident=token is not None)
            if token is None and alone:
                lock.downgrade()
        srv = pir_server.PirServer(build, records, preprocessed=cache_path(db_path), **common,
                                   version=version, updatable=token is not None,
                                   record_size=file_record_size)
        if token is not None:
            # the store is a checked cache of the fsynced records file and journal: its pages
            # go to disk with the kernel's write-back (a power loss at worst forces a rebuild)
            updater = db_updates.Updater(files, version, srv.live, sync_store=False,
                                         store_every=STORE_EVERY,
                                         log=lambda m: click.echo(m, err=True))
            admin = Admin(token, updater, srv.num_records)
        click.echo(f"serving {srv.num_records} records x {srv.record_size} bytes with build "
                   f"{build.label}" + assumed_size(records, record_size)
                   + (f", database version {version}" if records.fmt == "binary" else "")
                   + (", updates enabled (POST /v1/admin/update)" if admin else ""), err=True)
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
    web = prepare_page(source_dir, ci, build_dir, page, cors_origins)
    sized = "" if max_clients is not None else f" (--client-memory {client_memory})"
    # an admitted query holds its client's parameters even after eviction: at most
    # workers + max_queue such sets beyond max_clients
    click.echo(f"keeping up to {srv.max_clients} clients{sized}, ~{srv.client_bytes / 1e6:.1f} MB "
               f"of public parameters each (+ up to {workers + max_queue} held by admitted "
               f"queries); {workers} worker(s), {max_queue} queued, "
               f"{max_uploads} uploads at once; timeouts: header {header_timeout:g} s, body "
               f"{body_timeout:g} s", err=True)
    try:
        http_server.run(srv, host, port, workers, limits, sock=sock, quiet=quiet, admin=admin,
                        page=web)
    finally:
        if admin is not None:  # bring the store to the last version before exiting
            admin.updater.close()


def serve_shards(source_dir: Path, build_dir: Path | None, ci: bool, shard_dir: Path,
                 address: str, cpus: float, strict_spread: bool, max_clients: int | None,
                 memory: int, expand_at: str, network_gbps: float = 0.0
                 ) -> sharded_server.ShardedPirServer:
    """The coordinator of a shard set on a Ray cluster (its actors started and mapped)."""
    from spiralpir.optimizer.service import ray_shards

    manifest = shards.read_manifest(shard_dir)
    build = open_build(source_dir, build_dir, ci=ci)
    manifest.check_build(build)
    ray_shards.connect_ray(address, max(2, manifest.shards))
    threads = max(1, int(cpus))
    cluster = ray_shards.RayShards(source_dir, build_dir, ci, manifest, cpus=cpus,
                                   threads=threads, max_clients=max_clients or 64,
                                   strict_spread=strict_spread, expand_at=expand_at,
                                   combine_threads=threads, network_gbps=network_gbps)
    srv = sharded_server.ShardedPirServer(build, cluster, threads, max_clients, memory)
    click.echo(f"serving {srv.num_records} records x {srv.record_size} bytes with build "
               f"{build.label} from {manifest.shards} shards on Ray ({address}; query "
               f"preparation: {cluster.expand_at}; actor pids "
               f"{', '.join(map(str, cluster.pids))})", err=True)
    return srv


# seconds between the looks of a server's checkpoint thread (db_updates.Updater: it checkpoints
# the store once one is due, CHECKPOINT_*): the journal holds the changes meanwhile, so one pass
# over the store serves many batches
STORE_EVERY = 10.0


def assumed_size(records: database.Records, record_size: int | None) -> str:
    """A binary file does not record its record size: say which one was assumed, since a file
    of shorter records whose length happens to divide would be read as fewer, longer ones."""
    if records.fmt != "binary" or record_size is not None:
        return ""
    return (f" ({records.source} read as {records.record_size}-byte records, the build's "
            "record size; give --record-size if its records are shorter)")


SIZE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
              "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}
SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([a-z]*)", re.ASCII)


def parse_size(text: str, option: str) -> int:
    """'2GiB', '512MB', '1000000' -> bytes (ASCII digits; units KiB..TiB, kB..TB)."""
    m = SIZE.fullmatch(text.strip().lower())
    if m is None or m.group(2) not in SIZE_UNITS:
        raise SpiralpirError(f"{option} '{text}': expected a size such as 2GiB, 512MB or "
                             "1000000 (bytes)")
    size = int(float(m.group(1)) * SIZE_UNITS[m.group(2)])
    if size < 1:
        raise SpiralpirError(f"{option} '{text}': must be at least 1 byte")
    return size
