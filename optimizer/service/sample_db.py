"""The built-in default database: 2^16 records of 32-byte hashes, like the Ethereum deployment.

Record i is SHA-256 of i as an 8-byte big-endian integer: deterministic, so anyone can check
a retrieved record against the plaintext without the file. For the streaming mode (``serve
--stream``), ``write_sample_blocks`` writes a sequence of such databases: record i of block k
is SHA-256 of k·2^32 + i (block 0 is the sample database itself).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from spiralpir.optimizer.service import atomic_file

SAMPLE_RECORDS = 1 << 16
SAMPLE_RECORD_SIZE = 32


def sample_record(i: int, block: int = 0) -> bytes:
    if not 0 <= i < 1 << 32:
        raise ValueError(f"sample record index {i} not in [0, 2^32)")
    return hashlib.sha256(((block << 32) | i).to_bytes(8, "big")).digest()


def sample_bytes(num_records: int = SAMPLE_RECORDS, block: int = 0) -> bytes:
    return b"".join(sample_record(i, block) for i in range(num_records))


def write_sample_db(path: Path, num_records: int = SAMPLE_RECORDS, block: int = 0) -> Path:
    """Write the sample database (block ``block`` of the sample stream) atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_file.write_bytes(path, sample_bytes(num_records, block))
    return path


def block_name(block: int) -> str:
    return f"block-{block:06d}.bin"


def write_sample_blocks(directory: Path, blocks: int,
                        num_records: int = SAMPLE_RECORDS) -> list[Path]:
    """Write blocks 0 .. blocks-1 of the sample stream into directory (block-000000.bin, ...)."""
    return [write_sample_db(Path(directory) / block_name(k), num_records, k)
            for k in range(blocks)]
