"""The PIR client as a Python object (``PirClient``): private lookups against a spiralpir server.

The client keeps its secret state in a local file (mode 0600) together with the client id the
server assigned, so public parameters are uploaded once per server. It learns the server's
build from ``GET /v1/params``, loads the matching local build (the same generated directory,
compiled here) and refuses to talk to a server whose parameters differ.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.instance import Build, ClientKeys, open_build
from spiralpir.optimizer.server import CLIENT_HEADER

STATE_VERSION = 1
REPO_ROOT = Path(__file__).resolve().parents[1]


def default_state_path(server_url: str, build: str) -> Path:
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    tag = hashlib.sha256(server_url.encode()).hexdigest()[:12]
    return base / "spiralpir" / f"client-{build}-{tag}.json"


@dataclass
class QueryResult:
    """One private lookup: the record and what it cost."""

    index: int
    record: bytes
    query_bytes: int
    response_bytes: int
    public_params_bytes_uploaded: int
    seconds: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "record_hex": self.record.hex(),
            "query_bytes": self.query_bytes,
            "response_bytes": self.response_bytes,
            "public_params_bytes_uploaded": self.public_params_bytes_uploaded,
            "seconds": self.seconds,
        }


class PirClient:
    """Talks to one server; ``query(i)`` returns record i without revealing i."""

    def __init__(self, server_url: str, build: Build | None = None,
                 source_dir: Path | None = None, build_dir: Path | None = None,
                 state_path: Path | str | None = None, timeout: float = 600.0,
                 show_progress: bool = False) -> None:
        import requests

        self.url = server_url.rstrip("/")
        self.timeout = timeout
        self.http = requests.Session()
        self.info = self._get_json("/v1/params")
        name = self.info.get("build")
        if not isinstance(name, str):
            raise SpiralpirError(f"{self.url} did not report its build")
        if build is None:
            src = Path(source_dir) if source_dir else REPO_ROOT / "generated" / name
            if not (src / "params.json").is_file():
                raise SpiralpirError(
                    f"the server runs build '{name}' but {src} does not exist here: pass "
                    "--build with the server's generated directory"
                )
            build = open_build(src, build_dir, ci=bool(self.info.get("ci")),
                               show_progress=show_progress)
        self.build = build
        if build.lib.params != self.info.get("params") or build.name != name:
            raise SpiralpirError(
                f"parameter mismatch: the server runs '{name}' with params "
                f"{json.dumps(self.info.get('params'), sort_keys=True)}, the local build "
                f"'{build.label}' has {json.dumps(build.lib.params, sort_keys=True)}"
            )
        self.num_records = int(self.info["num_records"])
        self.record_size = int(self.info["record_size"])
        self.state_path = Path(state_path) if state_path else default_state_path(self.url, name)
        self.keys, self.client_id = self._load_state()

    # -- state -----------------------------------------------------------------------------
    def _load_state(self) -> tuple[ClientKeys, str | None]:
        if self.state_path.is_file():
            try:
                state = json.loads(self.state_path.read_text())
            except (OSError, json.JSONDecodeError) as exc:
                raise SpiralpirError(f"unreadable client state {self.state_path}: {exc}") from exc
            same = (state.get("version") == STATE_VERSION
                    and state.get("params") == self.build.lib.params
                    and state.get("build") == self.build.name)
            if same:
                keys = ClientKeys.load(self.build.lib, base64.b64decode(state["client_state"]))
                cid = state.get("client_id") if state.get("server") == self.url else None
                return keys, cid
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
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.state_path.with_name(self.state_path.name + f".tmp{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(state, fh, sort_keys=True, indent=2)
        os.replace(tmp, self.state_path)

    # -- HTTP ------------------------------------------------------------------------------
    def _get_json(self, path: str) -> dict[str, Any]:
        import requests

        try:
            r = self.http.get(self.url + path, timeout=self.timeout)
        except requests.RequestException as exc:
            raise SpiralpirError(f"cannot reach {self.url}: {exc}") from exc
        return self._json(r)

    @staticmethod
    def _json(r: Any) -> dict[str, Any]:
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
        import requests

        pp = self.keys.public_params()
        try:
            r = self.http.post(self.url + "/v1/setup", data=pp, timeout=self.timeout,
                               headers={"Content-Type": "application/octet-stream"})
        except requests.RequestException as exc:
            raise SpiralpirError(f"cannot reach {self.url}: {exc}") from exc
        self.client_id = str(self._json(r)["client_id"])
        self._save_state(self.keys, self.client_id)
        return len(pp)

    def query(self, index: int) -> QueryResult:
        """Privately retrieve record ``index``."""
        import requests

        if not 0 <= index < self.num_records:
            raise SpiralpirError(f"index {index} out of range: the server holds "
                                 f"{self.num_records} records (0 .. {self.num_records - 1})")
        uploaded = self.setup()
        t0 = time.perf_counter()
        q = self.keys.query(index)
        t1 = time.perf_counter()
        for attempt in range(2):
            try:
                r = self.http.post(self.url + "/v1/query", data=q, timeout=self.timeout,
                                   headers={CLIENT_HEADER: str(self.client_id),
                                            "Content-Type": "application/octet-stream"})
            except requests.RequestException as exc:
                raise SpiralpirError(f"cannot reach {self.url}: {exc}") from exc
            if r.status_code == 404 and attempt == 0:  # server restarted or evicted us
                self.client_id = None
                uploaded += self.setup()
                continue
            break
        t2 = time.perf_counter()
        if r.status_code != 200:
            self._json(r)
        resp = r.content
        record = self.keys.decode(index, resp, self.build.record_size)[: self.record_size]
        t3 = time.perf_counter()
        return QueryResult(
            index=index, record=record, query_bytes=len(q), response_bytes=len(resp),
            public_params_bytes_uploaded=uploaded,
            seconds={"query_gen": t1 - t0, "round_trip": t2 - t1, "decode": t3 - t2,
                     "server": float(r.headers.get("X-Spiralpir-Server-Seconds", "nan"))},
        )

    def close(self) -> None:
        self.keys.close()
        self.http.close()
