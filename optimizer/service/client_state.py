"""The PIR client's secret state on disk: the keys (base64 of the runtime's client state) and
the client id the server assigned, in a JSON file written atomically to an exclusive 0600
temporary (never through a symlink) and checked when read: a file that is not a client state
of this build, or whose client id is not the id of its keys, is an error naming the file.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import secrets
from pathlib import Path
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import http_api as api
from spiralpir.optimizer.service.binding import Build, ClientKeys

STATE_VERSION = 1


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
