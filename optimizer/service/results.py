"""What a client lookup returns: one record (`QueryResult`), or one record of every streamed
block (`StreamResult` of `BlockResult`s), with sizes and seconds, JSON-ready."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class QueryResult:
    """One private lookup: the record and what it cost."""

    index: int
    record: bytes
    query_bytes: int
    response_bytes: int
    public_params_bytes_uploaded: int
    seconds: dict[str, float] = field(default_factory=dict)
    version: int | None = None  # the database version the server answered from

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "version": self.version,
            "record_hex": self.record.hex(),
            "query_bytes": self.query_bytes,
            "response_bytes": self.response_bytes,
            "public_params_bytes_uploaded": self.public_params_bytes_uploaded,
            "seconds": self.seconds,
        }


@dataclass
class BlockResult:
    """Record ``index`` of one block of a stream and what this block alone cost."""

    block: int
    record: bytes | None  # None: the block holds fewer records (its answer decodes to padding)
    response_bytes: int
    db_bytes: int  # the block's database bytes, what the server streamed through
    seconds: dict[str, float] = field(default_factory=dict)  # server (this block), round_trip,
    # decode, server_<stage> (first_dimension, folding, packing, modswitch)

    def to_json(self) -> dict[str, Any]:
        return {"block": self.block,
                "record_hex": None if self.record is None else self.record.hex(),
                "response_bytes": self.response_bytes, "db_bytes": self.db_bytes,
                "seconds": self.seconds}


@dataclass
class StreamResult:
    """Record ``index`` of every streamed block; one-time figures apart from per-block ones."""

    index: int
    blocks: list[BlockResult] = field(default_factory=list)
    query_bytes: int = 0
    public_params_bytes_uploaded: int = 0
    opens: int = 0  # query uploads (more than 1 if the server dropped the session)
    prepare_seconds: dict[str, float] = field(default_factory=dict)  # the one-time part:
    # query_gen, upload_round_trip, server_expansion, server_conversion, server_total
    wall_seconds: float = 0.0

    @property
    def record(self) -> bytes:
        """The records of all blocks, in block order (e.g. item ``index`` of a media file)."""
        return b"".join(b.record for b in self.blocks if b.record is not None)

    def totals(self) -> dict[str, float]:
        """Per-block totals and throughput, without the one-time part."""
        server = sum(b.seconds["server"] for b in self.blocks)
        trip = sum(b.seconds["round_trip"] for b in self.blocks)
        streamed = sum(b.db_bytes for b in self.blocks)
        return {
            "blocks": len(self.blocks),
            "db_bytes": streamed,
            "server_seconds": server,
            "round_trip_seconds": trip,
            "server_seconds_per_block": server / len(self.blocks) if self.blocks else 0.0,
            "server_throughput_bytes_per_second": streamed / server if server > 0 else 0.0,
            "round_trip_throughput_bytes_per_second": streamed / trip if trip > 0 else 0.0,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "query_bytes": self.query_bytes,
            "public_params_bytes_uploaded": self.public_params_bytes_uploaded,
            "query_uploads": self.opens,
            "prepare_seconds": self.prepare_seconds,
            "per_block": self.totals(),
            "wall_seconds": self.wall_seconds,
            "blocks": [b.to_json() for b in self.blocks],
        }
