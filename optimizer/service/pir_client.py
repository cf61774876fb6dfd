"""The PIR client as a Python object (``PirClient``): private lookups against a spiralpir server.

The client keeps its secret state in a local file (service/client_state.py) together with the
client id the server assigned, so public parameters are uploaded once per server. It learns the
server's build from ``GET /v1/params``. With a local copy of that build (``source_dir``, or
generated/NAME in the working directory) it compiles and loads it; without one it builds a
client from the plan the server publishes, once per parameter set (service/client_cache.py).
Either way only after the checks of service/client_wire.py: a plain build name inside the
generated root, the server's parameters equal to the local ``params.json`` (or the published
plan's) before anything is compiled or loaded (and the loaded library's after), every reply
read with a size limit.

Under load the client waits rather than fails: a 503 (the server's queue or upload slots are
full) is sent again after the server's Retry-After, and an unknown client id (evicted, or a
restarted server) uploads the public parameters again, each with exponential backoff and
jitter, at most RETRIES times.

``stream(i)`` retrieves record i of every block of a streaming server (``serve --stream``):
one query is uploaded once, then each block's answer is fetched and decoded; the report
separates the one-time part (query upload and the server's preparation) from the per-block
figures.
"""

from __future__ import annotations

import base64
import json
import queue
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import batch_client, keyword_client
from spiralpir.optimizer.service import http_api as api
from spiralpir.optimizer.service.batch_results import BatchResult
from spiralpir.optimizer.service.binding import Build, ClientKeys, build_literal
from spiralpir.optimizer.service.builds import open_build
from spiralpir.optimizer.service.client_cache import client_build
from spiralpir.optimizer.service.client_state import (
    STATE_VERSION,
    default_state_path,
    read_state_file,
    state_keys,
    write_private_file,
)
from spiralpir.optimizer.service.client_wire import (
    MAX_JSON_BYTES,
    RETRIES,
    Reply,
    backoff_seconds,
    check_build_name,
    check_same_params,
    generated_source,
    read_reply,
    reported_count,
    reported_seconds,
    reported_stages,
)
from spiralpir.optimizer.service.results import BlockResult, QueryResult, StreamResult
from spiralpir.optimizer.service.server_wait import wait_until_answering
from spiralpir.optimizer.service.value_frame import VALUES_FIXED, VALUES_FRAMED, unframe
from tqdm import tqdm

MAX_REOPENS = 3  # re-uploads of a streamed query when the server drops its session


class _Session:
    """The client side of one stream session, shared by the threads fetching blocks: opens it
    on first use and again after the server dropped it."""

    def __init__(self, client: PirClient, query: bytes, report: StreamResult) -> None:
        self.client = client
        self.query = query
        self.report = report
        self.sid: str | None = None
        self.lock = threading.Lock()

    def current(self) -> str:
        with self.lock:
            if self.sid is None:
                sid, secs, uploaded = self.client._open_stream(self.query)
                self.report.public_params_bytes_uploaded += uploaded
                self.report.opens += 1
                for name, v in secs.items():
                    self.report.prepare_seconds[name] = self.report.prepare_seconds.get(name, 0) + v
                self.sid = sid
            return self.sid

    def dropped(self, sid: str) -> None:
        with self.lock:
            if self.sid == sid:
                self.sid = None

    def close(self) -> None:
        with self.lock:
            sid, self.sid = self.sid, None
        if sid is not None:
            self.client._close_stream(sid)


class PirClient:
    """Talks to one server; ``query(i)`` returns record i without revealing i."""

    def __init__(self, server_url: str, build: Build | None = None,
                 source_dir: Path | None = None, build_dir: Path | None = None,
                 state_path: Path | str | None = None, timeout: float = 600.0,
                 show_progress: bool = False, cache_dir: Path | None = None,
                 wait: float = 0.0) -> None:
        self.url = server_url.rstrip("/")
        self.timeout = timeout
        self.retries = {"busy": 0, "setup": 0}  # resends after a 503 / an unknown client id
        self.http = requests.Session()
        wait_until_answering(self.http, self.url, wait,
                             lambda line: print(f"spiralpir: {line}", file=sys.stderr, flush=True))
        self.info = self._get_json(api.PARAMS)
        name = check_build_name(self.info.get("build"))
        server_params = self.info.get("params")
        if build is None and source_dir is None and not (
                generated_source(name) / "params.json").is_file():
            # no local copy of the server's build: one made from the plan it publishes
            build = client_build(name, self.info, cache_dir)
        if build is None:
            src = Path(source_dir) if source_dir else generated_source(name)
            if not (src / "params.json").is_file():
                raise SpiralpirError(f"--build {src}: no generated build there (no params.json)")
            ci = self.info.get("ci") is True
            # before anything is compiled: the server must run what this directory builds
            local = src / "params.json"
            check_same_params(server_params, build_literal(local, ci), str(local))
            build = open_build(src, build_dir, ci=ci, show_progress=show_progress)
        self.build = build
        if build.name != name:
            raise SpiralpirError(f"the server runs build '{name}', the local build is "
                                 f"'{build.label}'")
        check_same_params(server_params, build.lib.params, f"the local build '{build.label}'",
                          exact=True)
        self.response_limit = int(build.lib.params["response_bytes"])
        self.num_records = reported_count(self.info.get("num_records"), "num_records")
        self.record_size = reported_count(self.info.get("record_size"), "record_size")
        self.values = self.info.get("values", VALUES_FIXED)
        if self.values not in (VALUES_FIXED, VALUES_FRAMED):
            raise SpiralpirError(f"the server stores values as {json.dumps(self.values)[:40]}, "
                                 f"which this client does not know ({VALUES_FIXED}, "
                                 f"{VALUES_FRAMED})")
        self.state_path = Path(state_path) if state_path else default_state_path(self.url, name)
        self.keys, self.client_id = self._load_state()
        self._batch_table: Any = None  # the server's bucket layout, computed on first use
        self._keyword: Any = None  # the server's keyword table shape, read on first use

    # -- state -----------------------------------------------------------------------------
    def _load_state(self) -> tuple[ClientKeys, str | None]:
        path = self.state_path
        if path.exists() and not path.is_file():
            raise SpiralpirError(f"client state {path} is not a regular file")
        if path.is_file():
            state = read_state_file(path)
            same = (state.get("version") == STATE_VERSION
                    and state.get("params") == self.build.lib.params
                    and state.get("build") == self.build.name)
            if same:
                keys, cid = state_keys(path, state, self.build)
                return keys, cid if state.get("server") == self.url else None
        keys = ClientKeys.new(self.build.lib)
        self._save_state(keys, None)
        return keys, None

    def _save_state(self, keys: ClientKeys, client_id: str | None) -> None:
        state = {
            "version": STATE_VERSION,
            "server": self.url,
            "build": self.build.name,
            "params": self.build.lib.params,
            "client_id": client_id,
            "client_state": base64.b64encode(keys.save()).decode(),
        }
        write_private_file(self.state_path, json.dumps(state, sort_keys=True, indent=2).encode())

    # -- HTTP ------------------------------------------------------------------------------
    def _get_json(self, path: str) -> dict[str, Any]:
        return self._json(self._get(path, limit=MAX_JSON_BYTES))

    def _send(self, method: str, path: str, limit: int, http: Any = None, **kw: Any) -> Reply:
        """One request, sent again while the server answers 503 (busy; see RETRIES); the
        reply body read with `limit` (see read_reply)."""
        for attempt in range(RETRIES + 1):
            try:
                r = (http or self.http).request(method, self.url + path, timeout=self.timeout,
                                                stream=True, **kw)
                reply = read_reply(r, limit, f"{method} {self.url}{path}")
            except requests.RequestException as exc:
                raise SpiralpirError(f"cannot reach {self.url}: {exc}") from exc
            if reply.status_code != 503 or attempt == RETRIES:
                return reply
            self.retries["busy"] += 1
            time.sleep(backoff_seconds(attempt, reply.headers.get("Retry-After")))
        raise AssertionError("unreachable")

    @staticmethod
    def _json(r: Reply) -> dict[str, Any]:
        try:
            body = r.json()
        except ValueError:
            body = {"error": r.text[:300]}
        if r.status_code != 200:
            raise SpiralpirError(f"server answered {r.status_code}: {body.get('error', body)}")
        if not isinstance(body, dict):
            raise SpiralpirError("server sent a non-object JSON reply")
        return body

    def setup(self) -> int:
        """Upload public parameters (if not done yet); returns the bytes uploaded."""
        if self.client_id is not None:
            return 0
        pp = self.keys.public_params()
        r = self._post(api.SETUP, pp, limit=MAX_JSON_BYTES)
        client_id = self._json(r).get("client_id")
        if client_id != api.client_id_of(pp):
            raise SpiralpirError(f"the server assigned the client id {json.dumps(client_id)[:80]}"
                                 f", not the id of our public parameters "
                                 f"({api.client_id_of(pp)})")
        self.client_id = client_id
        self._save_state(self.keys, self.client_id)
        return len(pp)

    def _post(self, path: str, data: bytes, headers: dict[str, str] | None = None,
              limit: int = MAX_JSON_BYTES) -> Reply:
        return self._send("POST", path, limit, data=data,
                          headers={"Content-Type": "application/octet-stream", **(headers or {})})

    def _post_query(self, path: str, q: bytes, limit: int,
                    headers: dict[str, str] | None = None) -> tuple[Reply, int]:
        """POST a query for our client id; while the server does not know the id (evicted,
        restarted), upload the public parameters again and resend (at most RETRIES times,
        with backoff). Returns (reply, bytes uploaded)."""
        uploaded = self.setup()
        for attempt in range(RETRIES + 1):
            r = self._post(path, q, {api.CLIENT_HEADER: str(self.client_id), **(headers or {})},
                           limit)
            if r.status_code != 404 or attempt == RETRIES:
                break
            self.retries["setup"] += 1
            if attempt:  # evicted again right away: the server is crowded, give it time
                time.sleep(backoff_seconds(attempt - 1))
            self.client_id = None
            uploaded += self.setup()
        return r, uploaded

    def _check_index(self, index: int, num_records: int) -> None:
        if not 0 <= index < num_records:
            raise SpiralpirError(f"index {index} out of range: the server holds "
                                 f"{num_records} records (0 .. {num_records - 1})")

    def query(self, index: int, min_version: int = 0) -> QueryResult:
        """Privately retrieve record ``index`` (from database version ``min_version`` or
        later: an older server refuses, naming its version)."""
        if len(self.blocks) > 1:
            raise SpiralpirError(f"{self.url} streams {len(self.blocks)} databases: retrieve "
                                 "from it with `spiralpir query --stream` (PirClient.stream)")
        self._check_index(index, self.num_records)
        uploaded = self.setup()  # before the clock: the round trip is the query's alone
        t0 = time.perf_counter()
        q = self.keys.query(index)
        t1 = time.perf_counter()
        r, again = self._post_query(api.QUERY, q, self.response_limit,
                                    {api.MIN_VERSION_HEADER: str(min_version)}
                                    if min_version else None)
        t2 = time.perf_counter()
        uploaded += again
        if r.status_code != 200:
            self._json(r)
        resp = r.content
        record = self._value(self.keys.decode(index, resp, self.build.record_size), index)
        t3 = time.perf_counter()
        return QueryResult(
            index=index, record=record, query_bytes=len(q), response_bytes=len(resp),
            public_params_bytes_uploaded=uploaded,
            seconds={"query_gen": t1 - t0, "round_trip": t2 - t1, "decode": t3 - t2,
                     "server": reported_seconds(r.headers.get(api.SECONDS_HEADER))},
            version=api.parse_decimal(r.headers.get(api.VERSION_HEADER, "")),
        )

    def get_many(self, indices: Sequence[int]) -> BatchResult:
        """Privately retrieve records ``indices`` (in that order; duplicates allowed) in one
        request from a batch server (service/batch_client.py)."""
        if self._batch_table is None:
            self._batch_table = batch_client.layout_of(self.info,
                                                       self.build.num_records).table()
        return batch_client.get_many(self, indices, self._batch_table)

    def lookup(self, key: str | bytes) -> keyword_client.KeywordResult:
        """The value of ``key`` (None if absent) from a keyword server, with sizes and
        seconds: one blocked query in one request (service/keyword_client.py)."""
        if self._keyword is None:
            self._keyword = keyword_client.shape_of(self.info, self.build.lib.params,
                                                    self.build.record_size)
        return keyword_client.lookup(self, key, self._keyword)

    def get(self, key: str | bytes) -> bytes | None:
        """The value of ``key`` from a keyword server, or None if it holds no such key."""
        return self.lookup(key).value

    def _value(self, decoded: bytes, index: int, block: int | None = None) -> bytes:
        """The record's exact bytes: its value without the length and padding when the server
        stores values with their lengths (value_frame.py)."""
        record = decoded[: self.record_size]
        if self.values == VALUES_FIXED:
            return record
        where = f"record {index}" + ("" if block is None else f" of block {block}")
        return unframe(record, where)

    # -- streaming -------------------------------------------------------------------------
    @property
    def blocks(self) -> list[dict[str, Any]]:
        """The server's blocks (one for a server of one database): index, num_records, ..."""
        stream = self.info.get("stream")
        if isinstance(stream, dict) and isinstance(stream.get("blocks"), list):
            out = []
            for k, b in enumerate(stream["blocks"]):
                if not isinstance(b, dict):
                    raise SpiralpirError(f"the server reported block {k} as "
                                         f"{json.dumps(b)[:60]}, not an object")
                out.append({**b, "num_records": reported_count(b.get("num_records"),
                                                               f"block {k}'s num_records")})
            return out
        return [{"index": 0, "num_records": self.num_records,
                 "db_bytes": self.num_records * self.record_size}]

    def _open_stream(self, q: bytes) -> tuple[str, dict[str, float], int]:
        t0 = time.perf_counter()
        r, uploaded = self._post_query(api.STREAM, q, MAX_JSON_BYTES)
        reply = self._json(r) if r.status_code != 201 else r.json()
        seconds = {f"server_{k}": v for k, v in reported_stages(
            json.dumps(reply.get("prepare_seconds"))).items()}
        seconds["upload_round_trip"] = time.perf_counter() - t0
        return str(reply["stream_id"]), seconds, uploaded

    def iter_stream(self, index: int, blocks: Sequence[int] | None = None,
                    report: StreamResult | None = None,
                    in_flight: int = 2) -> Iterator[BlockResult]:
        """Yield record ``index`` of each block (default: all, in order) as it arrives. The
        query is generated and uploaded once; if the server dropped the session (eviction,
        expiry, restart) it is uploaded again, at most MAX_REOPENS times in a row per block.
        Up to ``in_flight`` block requests run at once (1: one after the other, none while
        the caller holds a block). ``report`` (optional) collects the one-time figures."""
        info = self.blocks
        self._check_index(index, max(b["num_records"] for b in info))
        wanted = list(range(len(info))) if blocks is None else list(blocks)
        for k in wanted:
            if not 0 <= k < len(info):
                raise SpiralpirError(f"block {k} out of range: the server streams {len(info)} "
                                     f"block(s), 0 .. {len(info) - 1}")
        if in_flight < 1:
            raise SpiralpirError(f"in_flight must be >= 1, not {in_flight}")
        report = report if report is not None else StreamResult(index)
        report.public_params_bytes_uploaded += self.setup()  # not part of the figures
        t0 = time.perf_counter()
        q = self.keys.query(index)
        report.query_bytes = len(q)
        report.prepare_seconds["query_gen"] = time.perf_counter() - t0
        sess = _Session(self, q, report)
        pool: queue.SimpleQueue[Any] = queue.SimpleQueue()  # one HTTP session per request slot
        https = [requests.Session() for _ in range(in_flight)]
        for h in https:
            pool.put(h)
        ex = ThreadPoolExecutor(max_workers=in_flight, thread_name_prefix="spiralpir-block")
        pending: deque[tuple[int, Future[tuple[Any, float]]]] = deque()
        todo = iter(wanted)

        def submit_next() -> None:
            k = next(todo, None)
            if k is not None:
                pending.append((k, ex.submit(self._fetch_block, sess, k, pool)))

        try:
            for _ in range(in_flight - 1):
                submit_next()
            while True:
                if len(pending) < in_flight:
                    submit_next()
                if not pending:
                    break
                k, fut = pending.popleft()
                r, trip = fut.result()
                t2 = time.perf_counter()
                resp = r.content
                record = self._value(self.keys.decode(index, resp, self.build.record_size),
                                     index, k)
                t3 = time.perf_counter()
                stages = reported_stages(r.headers.get(api.STAGES_HEADER))
                db_bytes = api.parse_decimal(r.headers.get(api.BLOCK_BYTES_HEADER, ""))
                if db_bytes is None:
                    raise SpiralpirError(f"block {k}: malformed {api.BLOCK_BYTES_HEADER} header")
                yield BlockResult(
                    block=k, record=record if index < info[k]["num_records"] else None,
                    response_bytes=len(resp), db_bytes=db_bytes,
                    seconds={"server": reported_seconds(r.headers.get(api.SECONDS_HEADER)),
                             "round_trip": trip, "decode": t3 - t2,
                             **{f"server_{s}": v for s, v in stages.items()}},
                )
        finally:
            ex.shutdown(wait=True, cancel_futures=True)
            sess.close()
            for h in https:
                h.close()

    def _fetch_block(self, sess: _Session, k: int,
                     pool: queue.SimpleQueue[Any]) -> tuple[Reply, float]:
        """GET block k's response (re-opening the session if the server dropped it); returns
        the reply and its round-trip seconds."""
        http = pool.get()
        try:
            for attempt in range(MAX_REOPENS + 1):
                sid = sess.current()
                t1 = time.perf_counter()
                r = self._get(api.block_path(sid, k), http, self.response_limit)
                trip = time.perf_counter() - t1
                if r.status_code == 404 and attempt < MAX_REOPENS:
                    sess.dropped(sid)  # the server dropped our session: prepare it again
                    continue
                break
        finally:
            pool.put(http)
        if r.status_code != 200:
            self._json(r)
        if r.headers.get(api.BLOCK_HEADER) != str(k):
            raise SpiralpirError(f"server sent block {r.headers.get(api.BLOCK_HEADER)} "
                                 f"when asked for block {k}")
        return r, trip

    def stream(self, index: int, blocks: Sequence[int] | None = None,
               progress: bool = False, in_flight: int = 2) -> StreamResult:
        """Privately retrieve record ``index`` from every block (or ``blocks``)."""
        result = StreamResult(index)
        total = len(self.blocks) if blocks is None else len(blocks)
        bar: Any = None
        if progress and total > 1:
            bar = tqdm(total=total, desc=f"record {index}", unit="block", file=sys.stderr,
                       leave=False, mininterval=0.5, disable=None)
        result.public_params_bytes_uploaded += self.setup()  # outside wall_seconds
        t0 = time.perf_counter()
        try:
            for res in self.iter_stream(index, blocks, result, in_flight):
                result.blocks.append(res)
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()
        result.wall_seconds = time.perf_counter() - t0
        return result

    def _get(self, path: str, http: Any = None, limit: int = MAX_JSON_BYTES) -> Reply:
        return self._send("GET", path, limit, http)

    def _close_stream(self, sid: str) -> None:
        """Release the server's session (best effort: it expires anyway)."""
        try:
            r = self.http.delete(self.url + api.stream_path(sid), timeout=min(self.timeout, 30),
                                 stream=True)
            r.close()  # the body is not needed
        except requests.RequestException:
            pass

    def close(self) -> None:
        self.keys.close()
        self.http.close()
