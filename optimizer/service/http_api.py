"""The HTTP API both sides speak: routes, header names, body limits and stage-header encoding.

  POST /v1/setup   body: public parameters (octet-stream)  -> {"client_id": ...}
  POST /v1/query   header X-Spiralpir-Client-Id, body: query -> response (octet-stream)
                   (a server holding one database)
  POST /v1/stream  header X-Spiralpir-Client-Id, body: query -> {"stream_id": ..., ...}
  GET  /v1/stream/{stream_id}/blocks/{k}  -> block k's response (octet-stream); the headers
                   give this block's server seconds and stages, without the one-time part
  DELETE /v1/stream/{stream_id}           -> releases the session
  POST /v1/batch   header X-Spiralpir-Client-Id, body: one query per bucket (batch_wire.py)
                   -> one response per bucket, same framing (a server of a batch build)
  POST /v1/keyword header X-Spiralpir-Client-Id, body: one query (blocked: a row per row
                   block and a column, FORMATS.md §11) -> h responses, framed like a batch
                   reply (a server of a keyword build)
  GET  /v1/params  the build's parameters, shapes, blocks, exact message sizes, limits
  GET  /v1/health  {"status": "ok", ...}
  POST /v1/admin/update  header Authorization: Bearer TOKEN, body: CHANGES (JSON Lines)
                   -> {"version": ..., ...} (only with serve --admin-token-file; else 404)

A query's response names the database version it was computed against (VERSION_HEADER); a
query may ask for at least a version (MIN_VERSION_HEADER: 412 if the server is older).

Errors are JSON {"error": message} with a 4xx status (503 with Retry-After when the server
is full; the request may be sent again after that many seconds).
"""

from __future__ import annotations

import hashlib
import json
import re

API_VERSION = 1

SETUP = "/v1/setup"
QUERY = "/v1/query"
STREAM = "/v1/stream"
BATCH = "/v1/batch"
KEYWORD = "/v1/keyword"
PARAMS = "/v1/params"
HEALTH = "/v1/health"
ADMIN_UPDATE = "/v1/admin/update"

CLIENT_HEADER = "X-Spiralpir-Client-Id"
BLOCK_HEADER = "X-Spiralpir-Block"
BLOCK_BYTES_HEADER = "X-Spiralpir-Block-Bytes"
SECONDS_HEADER = "X-Spiralpir-Server-Seconds"
STAGES_HEADER = "X-Spiralpir-Stages"
VERSION_HEADER = "X-Spiralpir-Db-Version"
MIN_VERSION_HEADER = "X-Spiralpir-Min-Version"
STREAM_HEADERS = (BLOCK_HEADER, BLOCK_BYTES_HEADER, SECONDS_HEADER, STAGES_HEADER)

# numbers and ids in paths and headers: ASCII only (str.isdigit accepts '²', int() accepts '١')
_DECIMAL = re.compile(r"[0-9]{1,18}", re.ASCII)
_HEX_ID = re.compile(r"[0-9a-f]{32}", re.ASCII)

# a request body may exceed the exact message size by this much (framing slack)
BODY_SLACK_BYTES = 4096


def stream_path(stream_id: str) -> str:
    return f"{STREAM}/{stream_id}"


def block_path(stream_id: str, block: int | str) -> str:
    return f"{STREAM}/{stream_id}/blocks/{block}"


def body_limit(message_bytes: int) -> int:
    """The largest request body accepted for a message of `message_bytes`."""
    return message_bytes + BODY_SLACK_BYTES


def answer_headers(seconds: float, stages: dict[str, float]) -> dict[str, str]:
    """The headers of an answer: its server seconds and per-stage seconds."""
    return {SECONDS_HEADER: f"{seconds:.6f}", STAGES_HEADER: json.dumps(stages, sort_keys=True)}


def client_id_of(public_params: bytes) -> str:
    """The client id of a set of public parameters (the server's and the client's view)."""
    return hashlib.sha256(public_params).hexdigest()[:32]


def parse_decimal(text: str) -> int | None:
    """A non-negative decimal of ASCII digits (at most 18), or None."""
    return int(text) if _DECIMAL.fullmatch(text) else None


def is_hex_id(text: str) -> bool:
    """Whether `text` has the form of a client or stream id (32 lowercase hex digits)."""
    return _HEX_ID.fullmatch(text) is not None
