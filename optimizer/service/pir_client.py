"""The PIR client as a Python object (``PirClient``): private lookups against a spiralpir server.

The client keeps its secret state in a local file (mode 0600, written to an exclusive temporary
and renamed) together with the client id the server assigned, so public parameters are uploaded
once per server. It learns the server's build from ``GET /v1/params`` and loads the matching
local build (the same generated directory, compiled here). Nothing the server sends is trusted
to pick code: the build name must be a plain name (``[A-Za-z0-9_-]+``) naming a directory that
resolves inside the generated root, and the server's parameters must equal the local
``params.json`` before anything is compiled or loaded, and the loaded library's after. Every
reply body is read with a size limit: the exact response size of the build for answers, a
small limit for JSON.

Under load the client waits rather than fails: a 503 (the server's queue or upload slots are
full) is sent again after the server's Retry-After, and an unknown client id (evicted, or a
restarted server) uploads the public parameters again, each with exponential backoff and
jitter, at most RETRIES times. The state file is checked when read: a file that is not a
client state, or whose client id is not the id of its keys, is an error naming the file.

``stream(i)`` retrieves record i of every block of a streaming server (``serve --stream``):
one query is uploaded once, then each block's answer is fetched and decoded; the report
separates the one-time part (query upload and the server's preparation) from the per-block
figures.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import queue
import random
import re
import secrets
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.resources import GENERATED_DIR
from spiralpir.optimizer.service import http_api as api
from spiralpir.optimizer.service.binding import Build, ClientKeys, build_literal
from spiralpir.optimizer.service.builds import open_build
from spiralpir.optimizer.service.results import BlockResult, QueryResult, StreamResult
from tqdm import tqdm

STATE_VERSION = 1

BUILD_NAME = re.compile(r"[A-Za-z0-9_-]+")
MAX_JSON_BYTES = 1 << 20  # a JSON reply (parameters, ids, errors) is far smaller
# resending after a 503 or an unknown client id: at most RETRIES times, the n-th after
# BACKOFF_BASE * 2^n seconds (at most BACKOFF_CAP, jittered down to half) or the server's
# Retry-After (believed up to MAX_RETRY_AFTER), whichever is longer
RETRIES = 8
BACKOFF_BASE = 0.1
BACKOFF_CAP = 5.0
MAX_RETRY_AFTER = 30
_SECONDS = re.compile(r"[0-9]{1,12}(\.[0-9]{1,12})?", re.ASCII)
# local params.json names that the runtime's parameter JSON spells differently
_RUNTIME_NAMES = {"records": "num_records", "secret_distribution": "secret_dist"}


def check_build_name(name: object) -> str:
    """The server's build name, if it is a plain directory name; else an error."""
    if not isinstance(name, str) or not BUILD_NAME.fullmatch(name):
        raise SpiralpirError(f"the server reported the build name {name!r}: not a plain name "
                             "([A-Za-z0-9_-]+); refusing to build or load anything for it")
    return name


def generated_source(name: str, root: Path = GENERATED_DIR) -> Path:
    """generated/NAME, required to resolve inside the generated root (no symlink escapes)."""
    base = Path(root).resolve()
    src = (base / check_build_name(name)).resolve()
    if not src.is_relative_to(base) or src == base:
        raise SpiralpirError(f"build '{name}' resolves to {src}, outside {base}")
    return src


def differing_fields(server: Mapping[str, Any], local: Mapping[str, Any]) -> list[str]:
    """The fields of `local` whose value the server reports differently, as readable lines."""
    out = []
    for key, want in sorted(local.items()):
        got = server.get(_RUNTIME_NAMES.get(key, key), server.get(key))
        if got != want:
            out.append(f"{key}: server {json.dumps(got)}, local {json.dumps(want)}")
    return out


def check_same_params(server: object, local: Mapping[str, Any], what: str,
                      exact: bool = False) -> None:
    """An error naming each field the server reports differently from `local` (with `exact`,
    also the fields `local` lacks)."""
    if not isinstance(server, dict):
        raise SpiralpirError("the server did not report its parameters")
    diff = differing_fields(server, local)
    if exact:
        diff += [f"{k}: server {json.dumps(server[k])}, local absent"
                 for k in sorted(set(server) - set(local))]
    if diff:
        raise SpiralpirError(f"parameter mismatch between the server and {what}: "
                             + "; ".join(diff))


@dataclass
class Reply:
    """An HTTP reply whose body was read with a size limit."""

    status_code: int
    headers: Mapping[str, str]
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)

    @property
    def text(self) -> str:
        return self.content.decode(errors="replace")


def read_reply(r: Any, limit: int, what: str) -> Reply:
    """Read the body of a streamed `requests` reply, refusing one longer than `limit` bytes
    (the limit applies to 200/201 bodies; error bodies get the JSON limit)."""
    with r:
        cap = limit if r.status_code in (200, 201) else MAX_JSON_BYTES
        declared = r.headers.get("Content-Length", "")
        if declared.isascii() and declared.isdigit() and int(declared) > cap:
            raise SpiralpirError(f"{what}: the server announced a {declared}-byte reply, more "
                                 f"than the {cap} bytes expected; refusing it")
        body = bytearray()
        for chunk in r.iter_content(chunk_size=1 << 16):
            body += chunk
            if len(body) > cap:
                raise SpiralpirError(f"{what}: the server sent more than the {cap} bytes "
                                     "expected; refusing the reply")
        return Reply(r.status_code, r.headers, bytes(body))


def write_private_file(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically: an exclusive new temporary (mode 0600, never through
    a symlink), fsync'd, then renamed over `path`."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    try:  # make the rename itself durable
        dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def reported_count(value: object, what: str) -> int:
    """A count the server reported in JSON: a non-negative integer, nothing else."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SpiralpirError(f"the server reported {what} = {json.dumps(value)[:60]}: not a "
                             "non-negative integer")
    return value


def reported_seconds(text: str | None) -> float:
    """Seconds the server reported in a header (figures only): NaN unless plain ASCII."""
    return float(text) if text and _SECONDS.fullmatch(text) else float("nan")


def reported_stages(text: str | None) -> dict[str, float]:
    """The per-stage seconds header: {stage: seconds}, empty if malformed."""
    try:
        stages = json.loads(text or "{}")
    except ValueError:
        return {}
    if not isinstance(stages, dict):
        return {}
    return {str(k): float(v) for k, v in stages.items()
            if isinstance(v, int | float) and not isinstance(v, bool)}


def backoff_seconds(attempt: int, retry_after: str | None = None,
                    rng: random.Random | None = None) -> float:
    """Seconds to wait before resending for the `attempt`-th time (0-based)."""
    rng = rng or random.Random()
    ceiling = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** attempt)
    delay = rng.uniform(ceiling / 2, ceiling)
    hint = api.parse_decimal((retry_after or "").strip())
    if hint is not None:
        delay = max(delay, min(hint, MAX_RETRY_AFTER) * rng.uniform(1.0, 1.25))
    return delay


def read_state_file(path: Path) -> dict[str, Any]:
    """A client state file's JSON object; an error naming the file otherwise."""
    try:
        state = json.loads(path.read_bytes())
    except OSError as exc:
        raise SpiralpirError(f"unreadable client state {path}: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpiralpirError(f"client state {path}: not JSON ({exc})") from exc
    if not isinstance(state, dict):
        raise SpiralpirError(f"client state {path}: expected a JSON object, found "
                             f"{type(state).__name__ if state is not None else 'null'}")
    return state


def state_keys(path: Path, state: dict[str, Any], build: Build) -> tuple[ClientKeys, str | None]:
    """The keys and client id a state file holds, checked: ``client_state`` is base64 of a
    client state of `build`, and ``client_id`` (if any) is the id of those keys' public
    parameters (a mismatched id would make the server answer with another client's
    parameters, which decodes to garbage)."""
    text = state.get("client_state")
    if not isinstance(text, str):
        what = "missing" if text is None else f"a JSON {type(text).__name__}, not a string"
        raise SpiralpirError(f"client state {path}: 'client_state' is {what}")
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error):
        raise SpiralpirError(f"client state {path}: 'client_state' is not base64") from None
    try:
        keys = ClientKeys.load(build.lib, raw)
    except SpiralpirError as exc:
        raise SpiralpirError(f"client state {path}: 'client_state' is not a client of build "
                             f"'{build.label}' ({' '.join(str(exc).split())})") from None
    cid = state.get("client_id")
    if cid is None:
        return keys, None
    expected = api.client_id_of(keys.public_params())
    if cid != expected:
        keys.close()
        shown = json.dumps(cid)[:80]
        raise SpiralpirError(f"client state {path}: 'client_id' {shown} is not the id of the "
                             f"keys in 'client_state' ({expected}); the file was edited or "
                             "mixed up: remove it to start a new client")
    return keys, cid


def default_state_path(server_url: str, build: str) -> Path:
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    tag = hashlib.sha256(server_url.encode()).hexdigest()[:12]
    return base / "spiralpir" / f"client-{build}-{tag}.json"


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
                 show_progress: bool = False) -> None:
        self.url = server_url.rstrip("/")
        self.timeout = timeout
        self.retries = {"busy": 0, "setup": 0}  # resends after a 503 / an unknown client id
        self.http = requests.Session()
        self.info = self._get_json(api.PARAMS)
        name = check_build_name(self.info.get("build"))
        server_params = self.info.get("params")
        if build is None:
            src = Path(source_dir) if source_dir else generated_source(name)
            if not (src / "params.json").is_file():
                raise SpiralpirError(
                    f"the server runs build '{name}' but {src} does not exist here: pass "
                    "--build with the server's generated directory"
                )
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
        self.state_path = Path(state_path) if state_path else default_state_path(self.url, name)
        self.keys, self.client_id = self._load_state()

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

    def _post_query(self, path: str, q: bytes, limit: int) -> tuple[Reply, int]:
        """POST a query for our client id; while the server does not know the id (evicted,
        restarted), upload the public parameters again and resend (at most RETRIES times,
        with backoff). Returns (reply, bytes uploaded)."""
        uploaded = self.setup()
        for attempt in range(RETRIES + 1):
            r = self._post(path, q, {api.CLIENT_HEADER: str(self.client_id)}, limit)
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

    def query(self, index: int) -> QueryResult:
        """Privately retrieve record ``index``."""
        if len(self.blocks) > 1:
            raise SpiralpirError(f"{self.url} streams {len(self.blocks)} databases: retrieve "
                                 "from it with `spiralpir query --stream` (PirClient.stream)")
        self._check_index(index, self.num_records)
        uploaded = self.setup()  # before the clock: the round trip is the query's alone
        t0 = time.perf_counter()
        q = self.keys.query(index)
        t1 = time.perf_counter()
        r, again = self._post_query(api.QUERY, q, self.response_limit)
        t2 = time.perf_counter()
        uploaded += again
        if r.status_code != 200:
            self._json(r)
        resp = r.content
        record = self.keys.decode(index, resp, self.build.record_size)[: self.record_size]
        t3 = time.perf_counter()
        return QueryResult(
            index=index, record=record, query_bytes=len(q), response_bytes=len(resp),
            public_params_bytes_uploaded=uploaded,
            seconds={"query_gen": t1 - t0, "round_trip": t2 - t1, "decode": t3 - t2,
                     "server": reported_seconds(r.headers.get(api.SECONDS_HEADER))},
        )

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
                record = self.keys.decode(index, resp, self.build.record_size)[: self.record_size]
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
