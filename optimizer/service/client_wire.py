"""What the PIR client takes from a server, and how it paces resends.

Nothing a server sends is trusted to pick code or to size a buffer: a build name must be a plain
name (``[A-Za-z0-9_-]+``) naming a directory that resolves inside the generated root; the
server's parameters are compared field by field with the local build's; every reply body is
read with a size limit (the exact response size for answers, a small limit for JSON); figures
the server reports are plain ASCII numbers or nothing. A 503 or an unknown client id is sent
again after an exponential, jittered backoff that respects the server's Retry-After.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.resources import GENERATED_DIR
from spiralpir.optimizer.service import http_api as api

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
