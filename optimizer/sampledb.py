"""The built-in default database: 2^16 records of 32-byte hashes, like the Ethereum deployment.

Record i is SHA-256 of i as an 8-byte big-endian integer: deterministic, so anyone can check
a retrieved record against the plaintext without the file.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

SAMPLE_RECORDS = 1 << 16
SAMPLE_RECORD_SIZE = 32


def sample_record(i: int) -> bytes:
    return hashlib.sha256(i.to_bytes(8, "big")).digest()


def sample_bytes(num_records: int = SAMPLE_RECORDS) -> bytes:
    return b"".join(sample_record(i) for i in range(num_records))


def write_sample_db(path: Path, num_records: int = SAMPLE_RECORDS) -> Path:
    """Write the sample database atomically; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_bytes(sample_bytes(num_records))
    os.replace(tmp, path)
    return path
