"""The framing of a batch: equal-length messages in one body, for POST /v1/batch's request
(ceil(B/G) queries, query j carrying buckets j·G .. j·G + G − 1 when the build's queries pack
G buckets, G = 1: one query per bucket) and reply (B bucket responses, in bucket order).

    magic (8 bytes: "SPRLBATQ" request, "SPRLBATR" reply) | version u32 | count u32 |
    message length u64 | count x message           (little-endian)

Every message keeps its own object header (params hash, kind, length; FORMATS.md §2), which
the runtime checks, so a batch mixing parameter sets is refused bucket by bucket. The framing
knows nothing of which records a bucket holds (models/bucket_layout.py): any request that
answers B sub-databases of one build at once (a keyword table's candidate buckets) can use it.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from spiralpir.optimizer.errors import SpiralpirError

REQUEST_MAGIC = b"SPRLBATQ"
REPLY_MAGIC = b"SPRLBATR"
VERSION = 1
_HEAD = struct.Struct("<8sIIQ")
HEAD_BYTES = _HEAD.size


class BadBatch(SpiralpirError):
    """A batch body that does not have the expected framing (HTTP 400)."""


def query_groups(buckets: int, per_query: int) -> list[range]:
    """The buckets each query of a request carries: query j holds buckets [j·G, (j+1)·G) ∩
    [0, B) for a build whose queries pack G = per_query buckets (FORMATS.md §9)."""
    return [range(j, min(j + per_query, buckets)) for j in range(0, buckets, per_query)]


def framed_bytes(count: int, message_bytes: int) -> int:
    return HEAD_BYTES + count * message_bytes


def pack(messages: Sequence[bytes], magic: bytes = REQUEST_MAGIC) -> bytes:
    if not messages:
        raise BadBatch("a batch needs at least one message")
    size = len(messages[0])
    if any(len(m) != size for m in messages):
        raise BadBatch("the messages of a batch must all have the same length")
    return _HEAD.pack(magic, VERSION, len(messages), size) + b"".join(messages)


def unpack(body: bytes, count: int, message_bytes: int, magic: bytes = REQUEST_MAGIC,
           what: str = "batch request") -> list[bytes]:
    """The ``count`` messages of ``message_bytes`` each, or BadBatch naming the field."""
    if len(body) < HEAD_BYTES:
        raise BadBatch(f"{what}: {len(body)} bytes, shorter than its {HEAD_BYTES}-byte head")
    got_magic, version, got_count, size = _HEAD.unpack_from(body)
    if got_magic != magic:
        raise BadBatch(f"{what}: magic {got_magic!r}, expected {magic!r}")
    if version != VERSION:
        raise BadBatch(f"{what}: version {version}, this spiralpir speaks {VERSION}")
    if got_count != count:
        raise BadBatch(f"{what}: {got_count} buckets, this build has {count}")
    if size != message_bytes:
        raise BadBatch(f"{what}: message length {size}, expected {message_bytes}")
    if len(body) != framed_bytes(count, size):
        raise BadBatch(f"{what}: {len(body)} bytes, expected {framed_bytes(count, size)} "
                       "(truncated or padded)")
    view = memoryview(body)
    return [bytes(view[HEAD_BYTES + j * size: HEAD_BYTES + (j + 1) * size])
            for j in range(count)]
