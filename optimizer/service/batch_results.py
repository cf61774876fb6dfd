"""What a batch lookup returns: the records in the caller's order, with sizes and seconds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class BatchResult:
    """k records fetched in one request of B bucket queries."""

    indices: list[int]  # as the caller asked, duplicates included
    records: list[bytes]  # records[j] is record indices[j]
    buckets: int
    request_bytes: int
    response_bytes: int
    public_params_bytes_uploaded: int
    seconds: dict[str, float] = field(default_factory=dict)
    server_stages: dict[str, float] = field(default_factory=dict)

    @property
    def record(self) -> bytes:
        """The records' bytes concatenated in the caller's order (what --out writes)."""
        return b"".join(self.records)

    def to_json(self) -> dict[str, Any]:
        distinct = len(set(self.indices))
        return {
            "records": [{"index": i, "record_hex": r.hex()}
                        for i, r in zip(self.indices, self.records, strict=True)],
            "distinct_records": distinct,
            "buckets": self.buckets,
            "request_bytes": self.request_bytes,
            "response_bytes": self.response_bytes,
            "public_params_bytes_uploaded": self.public_params_bytes_uploaded,
            "per_record_bytes": (self.request_bytes + self.response_bytes) / max(distinct, 1),
            "seconds": self.seconds,
            "server_stages": self.server_stages,
        }
