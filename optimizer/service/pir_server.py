"""The PIR server as a Python object (``PirServer``), without HTTP.

``PirServer`` holds the preprocessed database(s) of a build and the public parameters of its
clients (keyed by client id = a hash of the uploaded parameters, least recently used evicted
first). Usually one database; in streaming mode a sequence of databases of the same build
("blocks", e.g. the blocks of a media file), answered with one uploaded query: the server does
the query's one-time work (parse, expansion, conversion) once, keeps the prepared query in a
bounded session cache (service/sessions.py) and answers each block from it.
service/http_server.py exposes it over HTTP (service/http_api.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models import host_memory
from spiralpir.optimizer.params import sizes
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service import store
from spiralpir.optimizer.service.binding import (
    ANSWER_STAGES,
    PREPARE_STAGES,
    Build,
    ClientKeys,
    PublicParams,
    ServerDb,
    prepared_query_bytes,
)
from spiralpir.optimizer.service.http_api import API_VERSION, client_id_of
from spiralpir.optimizer.service.live_db import LiveDb
from spiralpir.optimizer.service.progress_lines import ProgressLines
from spiralpir.optimizer.service.served_estimate import served_estimate
from spiralpir.optimizer.service.sessions import StreamSession, StreamSessions, UnknownStream
from spiralpir.optimizer.service.value_frame import VALUES_FIXED, VALUES_FRAMED


class UnknownClient(SpiralpirError):
    """The client id is not (or no longer) registered: the client should run setup again."""


class ServerFull(SpiralpirError):
    """Every client place holds a client that has just set up and not queried yet: try the
    setup again shortly (HTTP 503)."""


class BadBlock(SpiralpirError):
    """A block index outside the server's sequence of databases."""


class StaleVersion(SpiralpirError):
    """The request asked for a newer database version than the server holds (HTTP 412)."""


class Unavailable(SpiralpirError):
    """The server cannot answer right now, through no fault of the request (a shard of a
    sharded deployment is restarting): HTTP 503, retry after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass
class Block:
    """One database the server answers: block ``index`` of the stream (or the only one)."""

    index: int
    source: str
    db: ServerDb
    num_records: int
    db_bytes: int  # num_records x the build's record size: the throughput's numerator
    preprocess_seconds: float = 0.0
    loaded_from_cache: bool = False

    def info(self) -> dict[str, Any]:
        return {"index": self.index, "source": Path(self.source).name,
                "num_records": self.num_records, "db_bytes": self.db_bytes}


CACHE_SUFFIXES = (".spiralpir-db", ".spiralpir-db" + store.LEGACY_SIDECAR)

DEFAULT_CLIENT_MEMORY = 1 << 30  # bytes of clients' public parameters held by default (serve)
# seconds a newly set-up client is kept for its first query: with more clients than places,
# later setups wait (ServerFull) instead of evicting it before it could query even once
SETUP_GRACE = 10.0


def _natural_key(path: Path) -> list[Any]:
    """block2 before block10 (ASCII digits only: a name with other digits, say '2²' or
    'part١', has no unambiguous place in the order and is refused)."""
    odd = [c for c in path.name if c.isdigit() and not c.isascii()]
    if odd:
        raise SpiralpirError(f"stream block {path}: its name holds the non-ASCII digit "
                             f"{odd[0]!r}, so its place in the block order is ambiguous; "
                             "rename it with ASCII digits (or move it out of the directory)")
    return [(0, int(t), "") if t.isdigit() else (1, 0, t)
            for t in re.split(r"([0-9]+)", path.name) if t]


def resident_bytes(pid: int | str = "self") -> int:
    """A process's resident set size from /proc (0 where there is no /proc)."""
    try:
        fields = Path(f"/proc/{pid}/statm").read_text().split()
    except OSError:
        return 0
    return int(fields[1]) * os.sysconf("SC_PAGE_SIZE")


def stream_block_paths(paths: Sequence[Path]) -> list[Path]:
    """The blocks of a stream, in order: a file is one block; a directory expands to its
    entries sorted by name (numbers in names compare as numbers; a subdirectory entry is one
    block of values, records.py's directory format), skipping hidden entries and
    preprocessed-database files."""
    out: list[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise SpiralpirError(f"no such stream block or directory: {p}")
        if not p.is_dir():
            out.append(p)
            continue
        entries = sorted((e for e in p.iterdir()
                          if not e.name.startswith(".") and ".tmp" not in e.name
                          and not e.name.endswith(CACHE_SUFFIXES)), key=_natural_key)
        if not entries:
            raise SpiralpirError(f"stream directory {p} holds no blocks")
        out.extend(entries)
    return out


def disk_size(n: int) -> str:
    """Bytes as a short size: '2.1 GB', '512.0 MB', '4.6 kB'."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def free_space(path: Path) -> str:
    """'N GB free' on the file system that receives path (or that it is unknown)."""
    try:
        return f"{disk_size(shutil.disk_usage(path.parent).free)} free"
    except OSError:
        return "free space unknown"


def memory_warning(stored_bytes: int) -> str | None:
    """A log line when a preprocessed database of `stored_bytes` cannot stay in memory here
    (models/host_memory.py): the first dimension would read it from disk for every query."""
    budget = host_memory.database_budget_bytes()
    if stored_bytes <= budget:
        return None
    return (f"warning: the preprocessed database takes {disk_size(stored_bytes)}, more than the "
            f"{disk_size(budget)} ({host_memory.DATABASE_MEMORY_SHARE:.0%} of this machine's "
            "memory) it can stay in: queries will read it from disk; generate the build on this "
            "machine (its plan fits the memory, --max-db-bytes) or serve it on a larger one")


class PirServer:
    """One build serving one database, or (``blocks``) a sequence of databases of that build
    answered with one uploaded query each (streaming mode)."""

    def __init__(self, build: Build, records: database.Records | None = None,
                 db_path: Path | str | None = None, threads: int = 0,
                 preprocessed: Path | str | None = None, max_clients: int | None = None,
                 client_memory: int = DEFAULT_CLIENT_MEMORY,
                 progress: bool = True, log: Callable[[str], None] | None = None,
                 blocks: Sequence[tuple[database.Records, Path | str | None]] | None = None,
                 max_streams: int = 8, stream_ttl: float = 600.0, version: int = 0,
                 updatable: bool = False, record_size: int | None = None) -> None:
        self._init_clients(build, threads, log)
        self.streaming = blocks is not None
        if blocks is None:
            if records is None:
                if db_path is None:
                    raise SpiralpirError("PirServer needs records, a db_path or blocks")
                records = database.read_records(Path(db_path), build.record_size)
            blocks = [(records, preprocessed)]
        elif records is not None or db_path is not None or preprocessed is not None:
            raise SpiralpirError("PirServer takes either records/db_path/preprocessed or blocks "
                                 "(with each block's preprocessed path), not both")
        if not blocks:
            raise SpiralpirError("streaming mode needs at least one block (database)")
        framed = {recs.framed for recs, _ in blocks}
        if len(framed) > 1:
            raise SpiralpirError("the blocks mix files of values (stored with their lengths) "
                                 "and binary records; give blocks of one kind")
        self.values = VALUES_FRAMED if framed == {True} else VALUES_FIXED
        # the records' own size (a binary file may hold records shorter than the build's,
        # stored zero-padded; record_size when the caller padded them): what clients return
        self.record_size = record_size or max(recs.record_size for recs, _ in blocks)
        params = Parameters.from_literal(build.params)
        self._params_hash = params.params_hash()
        self._object_bytes = sizes.preprocessed_db_bytes(params)
        if not self.streaming:
            self._announce_memory(self._object_bytes)
        self.blocks: list[Block] = [
            self._load_block(k, recs, Path(pre) if pre is not None else None, progress)
            for k, (recs, pre) in enumerate(blocks)
        ]
        self.num_records = max(b.num_records for b in self.blocks)
        # the one database's versions (live_db.py); a stream's blocks are read-only
        if updatable and self.streaming:
            raise SpiralpirError("updates need a server of one database, not a stream")
        self.live: LiveDb | None = None
        if len(self.blocks) == 1:
            self.live = LiveDb(self.blocks[0].db, version, updatable, threads)
            self.blocks[0].db = self.live.db
        self.sessions = StreamSessions(max_streams, stream_ttl, on_drop=self._log_drop)
        self._size_clients(max_clients, client_memory)

    def _init_clients(self, build: Build, threads: int,
                      log: Callable[[str], None] | None) -> None:
        """The build and the (empty) client registry: what every server shape shares."""
        self.build = build
        self.lib = build.lib
        self.plan_document = json.loads(Path(build.inst.params_json).read_text())
        self.threads = threads
        self._log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self._clients: OrderedDict[str, PublicParams] = OrderedDict()
        self._fresh: dict[str, float] = {}  # set up, not queried yet: client id -> setup time
        self._lock = threading.Lock()

    def _announce_memory(self, stored_bytes: int) -> None:
        warning = memory_warning(stored_bytes)
        if warning is not None:
            self._log(warning)

    def _size_clients(self, max_clients: int | None, client_memory: int) -> None:
        """Measure the messages and one client's memory, then bound the clients kept."""
        self._measure_sizes()
        if max_clients is None:
            max_clients = max(1, client_memory // self.client_bytes)
        elif max_clients < 1:
            raise SpiralpirError(f"max_clients must be >= 1, not {max_clients}")
        self.max_clients = max_clients

    # -- loading ---------------------------------------------------------------------------
    @property
    def db(self) -> ServerDb:
        """The (first) database."""
        return self.live.db if self.live is not None else self.blocks[0].db

    @property
    def preprocess_seconds(self) -> float:
        return sum(b.preprocess_seconds for b in self.blocks)

    @property
    def loaded_from_cache(self) -> bool:
        return all(b.loaded_from_cache for b in self.blocks)

    def _load_block(self, index: int, records: database.Records, preprocessed: Path | None,
                    progress: bool) -> Block:
        records = database.fit_to_build(records, self.build.num_records, self.build.record_size,
                                        self.build.label)
        block = Block(index, records.source, ServerDb(self.lib, self.threads),
                      records.num_records, records.num_records * self.build.record_size)
        what = f"block {index} ({records.source})" if self.streaming else "database"
        tie = store.Tie(self._params_hash, self._object_bytes, records.num_records,
                        records.record_size, store.records_fingerprint(
                            records.data, records.num_records, records.record_size))
        if preprocessed is not None:
            for stale in store.remove_stale(preprocessed):
                self._log(f"removed {stale}, left by an earlier run")
            if self._map_store(block, preprocessed, tie, what):
                return block
        start = time.perf_counter()
        bar: Any = None
        lines = None
        if progress and sys.stderr.isatty():
            from tqdm import tqdm

            bar = tqdm(total=None, desc=f"preprocessing {what}", unit="pt", file=sys.stderr,
                       leave=False, mininterval=0.5)
        elif progress:  # a log file or pipe: lines, not a bar
            lines = ProgressLines(f"preprocessing {what}", self._log)

        def on_progress(done: int, total: int) -> None:
            if bar is not None:
                bar.total = total
                bar.update(done - bar.n)
            if lines is not None:
                lines(done, total)

        try:
            block.db.load_records(records.data, records.num_records, records.record_size,
                                  on_progress)
        finally:
            if bar is not None:
                bar.close()
        block.preprocess_seconds = time.perf_counter() - start
        self._log(f"preprocessed {what}: {records.num_records} records in "
                  f"{block.preprocess_seconds:.2f} s")
        if preprocessed is not None:
            self._log(f"writing {disk_size(self._object_bytes)} to {preprocessed} "
                      f"({free_space(preprocessed)}; --no-cache to skip)")
            start = time.perf_counter()
            store.save(preprocessed, tie, block.db.save_db)
            self._log(f"saved preprocessed {what} to {preprocessed} in "
                      f"{time.perf_counter() - start:.1f} s")
            if self.streaming:
                # serve the saved file memory-mapped, as after a restart: the blocks of a long
                # stream then need not all fit in memory at once (the kernel pages them)
                mapped = ServerDb(self.lib, self.threads)
                mapped.map_db(preprocessed)
                block.db.close()
                block.db = mapped
        return block

    def _map_store(self, block: Block, path: Path, tie: store.Tie, what: str) -> bool:
        """Serve ``block`` from its stored database if that proves to hold exactly these
        records for these parameters (store.py); else say why (one line) and return False."""
        start = time.perf_counter()
        try:
            with store.opened(path, tie) as checked:
                block.db.map_db(path)
                store.ensure_same(path, checked)
        except store.StoreMissing:
            return False
        except SpiralpirError as exc:  # StoreRejected, or the runtime's own checks
            self._log(f"not using {path}: {exc}; preprocessing again")
            block.db.close()
            block.db = ServerDb(self.lib, self.threads)
            return False
        block.loaded_from_cache = True
        self._log(f"mapped preprocessed {what} {path} (checked, "
                  f"{time.perf_counter() - start:.2f} s)")
        return True

    def _measure_sizes(self) -> None:
        """Exact sizes of the messages, from a throwaway client of the same library, and the
        memory one client's parsed public parameters hold (``client_bytes``: the growth of
        the resident set while two copies are held, at least their serialized size)."""
        keys = ClientKeys.new(self.lib)
        try:
            pp = keys.public_params()
            self.public_params_bytes = len(pp)
            self.query_bytes = len(keys.query(0))
        finally:
            keys.close()
        before = resident_bytes()
        held = [PublicParams(self.lib, pp) for _ in range(2)]
        grown = resident_bytes() - before
        for copy in held:
            copy.close()
        self.client_bytes = max(len(pp), grown // len(held))

    # -- protocol --------------------------------------------------------------------------
    def setup(self, data: bytes) -> str:
        """Register public parameters; returns the client id (same parameters, same id). A
        full server evicts the least recently used client, except one set up less than
        SETUP_GRACE seconds ago that has not queried yet: if all are such, ServerFull."""
        client_id = client_id_of(data)
        with self._lock:
            if client_id in self._clients:
                self._clients.move_to_end(client_id)
                return client_id
            self._make_room(time.monotonic(), evict=False)  # refuse before parsing
        pp = PublicParams(self.lib, data)  # validates (header, params hash, length, ranges)
        with self._lock:
            if client_id not in self._clients:
                now = time.monotonic()
                self._make_room(now, evict=True)
                self._clients[client_id] = pp
                self._fresh[client_id] = now
            self._clients.move_to_end(client_id)
        return client_id

    def _make_room(self, now: float, evict: bool) -> None:
        """Ensure a place for one more client (under the lock): evict the least recently used
        clients past their grace, or raise ServerFull."""
        while len(self._clients) >= self.max_clients:
            victim = next((cid for cid in self._clients
                           if now - self._fresh.get(cid, -SETUP_GRACE) >= SETUP_GRACE), None)
            if victim is None:
                raise ServerFull(f"all {self.max_clients} client places hold clients set up in "
                                 f"the last {SETUP_GRACE:g} s that have not queried yet (serve "
                                 "--max-clients / --client-memory)")
            if not evict:
                return
            del self._clients[victim]
            self._fresh.pop(victim, None)

    def pin(self, client_id: str) -> PublicParams:
        """The client's public parameters, held by the caller: evicting the client later
        does not free them while a query that was admitted with them waits or runs."""
        with self._lock:
            pp = self._clients.get(client_id)
            if pp is not None:
                self._clients.move_to_end(client_id)
                self._fresh.pop(client_id, None)
        if pp is None:
            raise UnknownClient(f"unknown client id '{client_id[:64]}': upload public parameters "
                                "with POST /v1/setup first")
        return pp

    def answer(self, client_id: str, query: bytes, pinned: PublicParams | None = None
               ) -> tuple[bytes, dict[str, float], float]:
        """The response of the (only) database to one query (with the client's public
        parameters ``pinned`` when the query was admitted, else looked up now)."""
        if len(self.blocks) != 1:
            raise BadBlock(f"this server streams {len(self.blocks)} databases: upload the query "
                           "with POST /v1/stream and fetch each block")
        resp, stages, secs, _version = self.answer_versioned(client_id, query, pinned)
        return resp, stages, secs

    def answer_versioned(self, client_id: str, query: bytes, pinned: PublicParams | None = None,
                         min_version: int = 0) -> tuple[bytes, dict[str, float], float, int]:
        """answer() and the database version it was computed against (StaleVersion if that
        is below ``min_version``)."""
        if self.live is None:
            raise BadBlock(f"this server streams {len(self.blocks)} databases: upload the query "
                           "with POST /v1/stream and fetch each block")
        pp = pinned if pinned is not None else self.pin(client_id)
        start = time.perf_counter()
        with self.live.reading() as (db, version):
            if version < min_version:
                raise StaleVersion(f"the server holds database version {version}, the request "
                                   f"asks for at least {min_version}; retry later")
            resp, stages = db.answer(pp, query)
        return resp, stages, time.perf_counter() - start, version

    # -- streaming -------------------------------------------------------------------------
    def open_stream(self, client_id: str, query: bytes, pinned: PublicParams | None = None
                    ) -> tuple[str, dict[str, float]]:
        """The one-time part: prepare ``query`` once for every block; returns the stream id
        and its seconds per stage (PREPARE_STAGES, plus "total" wall time)."""
        pp = pinned if pinned is not None else self.pin(client_id)
        start = time.perf_counter()
        prepared = self.db.prepare(pp, query)
        seconds = {**prepared.seconds, "total": time.perf_counter() - start}
        sid = self.sessions.add(prepared, client_id)
        self._log(f"stream {sid[:8]}: prepared a {len(query):,} B query once for "
                  f"{len(self.blocks)} block(s) in {seconds['total'] * 1e3:.1f} ms ("
                  + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in prepared.seconds.items())
                  + ")")
        return sid, seconds

    def block(self, index: int) -> Block:
        if not 0 <= index < len(self.blocks):
            raise BadBlock(f"block {index} out of range: this server streams "
                           f"{len(self.blocks)} block(s), 0 .. {len(self.blocks) - 1}")
        return self.blocks[index]

    def answer_block(self, stream_id: str, index: int) -> tuple[bytes, dict[str, float], float]:
        """Block ``index``'s response to a prepared stream query: response, seconds per stage
        (ANSWER_STAGES) and the wall seconds of this block alone."""
        blk = self.block(index)
        sess = self.sessions.get(stream_id)
        start = time.perf_counter()
        try:
            resp, stages = blk.db.answer_prepared(sess.prepared)
        except SpiralpirError:
            if sess.prepared.closed:  # dropped between the lookup and the answer
                raise UnknownStream(f"stream session '{stream_id[:64]}' was dropped (at most "
                                    f"{self.sessions.max_sessions} sessions, idle expiry "
                                    f"{self.sessions.ttl:g} s); upload the query again "
                                    "with POST /v1/stream") from None
            raise
        secs = time.perf_counter() - start
        with self._lock:
            sess.blocks_answered += 1
            sess.block_seconds += secs
            sess.block_bytes += blk.db_bytes
        rate = blk.db_bytes / secs if secs > 0 else float("inf")
        self._log(f"stream {stream_id[:8]}: block {index} (of {len(self.blocks)}) in "
                  f"{secs * 1e3:.1f} ms, {rate / 1e6:.1f} MB/s ("
                  + ", ".join(f"{k} {v * 1e3:.1f}" for k, v in stages.items() if v) + " ms)")
        return resp, stages, secs

    def close_stream(self, stream_id: str) -> StreamSession:
        return self.sessions.close(stream_id)

    def _log_drop(self, sid: str, sess: StreamSession, reason: str) -> None:
        self._log(f"stream {sid[:8]} {reason.split(':')[0]}: {sess.summary()}")

    def info(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "api": API_VERSION,
            "build": self.build.name,
            "ci": self.build.ci,
            "variant": self.lib.variant,
            "params": self.lib.params,
            # the build's params.json: a client generates and compiles its own library from it
            "plan": self.plan_document,
            "num_records": self.num_records,
            "record_size": self.record_size,
            "values": self.values,  # how a record holds its value: service/value_frame.py
            "sizes": {
                "public_params_bytes": self.public_params_bytes,
                "query_bytes": self.query_bytes,
            },
            "stages": self.lib.stage_names,
            "estimate": served_estimate(self.build.params, self.threads),
        }
        if self.live is not None:
            out["version"] = self.live.version
            out["updatable"] = self.live.updatable
        if self.streaming:
            out["stream"] = {
                "blocks": [b.info() for b in self.blocks],
                "prepared_query_bytes": prepared_query_bytes(self.build.params),
                "max_streams": self.sessions.max_sessions,
                "stream_ttl_seconds": self.sessions.ttl,
                "prepare_stages": list(PREPARE_STAGES),
                "block_stages": list(ANSWER_STAGES),
            }
        return out

    @property
    def client_count(self) -> int:
        with self._lock:
            return len(self._clients)
