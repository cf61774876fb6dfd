"""The update journal: the write-ahead record that makes a batch of record changes durable
before any file is touched, and names the database's version (runtime/FORMATS.md §10).

``DB.spiralpir-journal`` next to a binary records file holds every change since the store's
last checkpoint, merged: the version they make, the fingerprints of the records at the
checkpoint and after the changes, the new bytes of every changed record, and the store trailer
of the checkpoint. It is written whole or not at all (atomic_file: temporary file, fsync,
rename, directory fsync) for each batch, and only then are the records file and the store
patched in place. A start (``recover``, db_updates.py) therefore finds the records either at
the journal's version or at a mix of older and new bytes of its records (a kill while
patching): writing the changes again gives the version, which the fingerprint confirms. The
journal stays after the batch is applied: it is how a start knows the version.
"""

from __future__ import annotations

import itertools
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import xxhash
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import atomic_file

MAGIC = b"SPRLJRNL"
FORMAT = 1
SUFFIX = ".spiralpir-journal"
# magic, format, flags, version, file record size, records, base fingerprint, new fingerprint,
# changes, store trailer bytes
_HEAD = struct.Struct("<8sIIQQQ16s16sQQ")
_TAIL = struct.Struct("<Q8s")  # xxh3-64 of everything before, magic
PIECE_CHANGES = 4096


class JournalError(SpiralpirError):
    """An unreadable journal (the message says why)."""


@dataclass(frozen=True)
class Journal:
    """The changes since the checkpoint: ``values`` (index -> new bytes of ``record_size``,
    the records file's size) take the records from ``base_fingerprint`` to ``fingerprint``
    (records.py fitted to the build, store.records_fingerprint); ``store_trailer``: the store's
    trailer at the checkpoint (empty if there was no valid store)."""

    version: int
    record_size: int
    num_records: int
    base_fingerprint: bytes
    fingerprint: bytes
    values: dict[int, bytes]
    store_trailer: bytes = b""

    def pieces(self) -> Iterator[bytes]:
        """The encoding without its tail, in pieces of PIECE_CHANGES changes: a server
        answering in other threads lets them run between pieces (one join of a 26 MB journal
        held the interpreter lock for tens of milliseconds)."""
        yield _HEAD.pack(MAGIC, FORMAT, 0, self.version, self.record_size, self.num_records,
                         self.base_fingerprint, self.fingerprint, len(self.values),
                         len(self.store_trailer))
        entry = struct.Struct("<Q")
        items = iter(self.values.items())
        while piece := list(itertools.islice(items, PIECE_CHANGES)):
            parts: list[bytes] = []
            for index, value in piece:
                if len(value) != self.record_size:
                    raise SpiralpirError(f"journal: record {index} is {len(value)} bytes, not "
                                         f"{self.record_size}")
                parts.append(entry.pack(index))
                parts.append(value)
            yield b"".join(parts)
        yield self.store_trailer

    def write(self, fh: BinaryIO) -> None:
        """Write the encoding to ``fh`` piece by piece."""
        check = xxhash.xxh3_64()
        for piece in self.pieces():
            check.update(piece)
            fh.write(piece)
        fh.write(_TAIL.pack(check.intdigest(), MAGIC))


def path_for(db_path: Path) -> Path:
    db_path = Path(db_path)
    return db_path.with_name(db_path.name + SUFFIX)


def decode(data: bytes, what: str) -> Journal:
    if len(data) < _HEAD.size + _TAIL.size:
        raise JournalError(f"{what}: truncated ({len(data)} bytes)")
    check, magic = _TAIL.unpack_from(data, len(data) - _TAIL.size)
    body = memoryview(data)[: len(data) - _TAIL.size]
    if magic != MAGIC or xxhash.xxh3_64_intdigest(body) != check:
        raise JournalError(f"{what}: corrupted (checksum mismatch)")
    (head_magic, fmt, _flags, version, record_size, num_records, base_fp, new_fp, count,
     trailer_len) = _HEAD.unpack_from(body)
    if head_magic != MAGIC or fmt != FORMAT:
        raise JournalError(f"{what}: journal format {fmt}, this spiralpir reads {FORMAT}")
    if len(body) != _HEAD.size + count * (8 + record_size) + trailer_len:
        raise JournalError(f"{what}: {len(body)} bytes do not fit {count} changes of "
                           f"{record_size} bytes")
    values: dict[int, bytes] = {}
    off = _HEAD.size
    for _ in range(count):
        (index,) = struct.unpack_from("<Q", body, off)
        if index >= num_records:
            raise JournalError(f"{what}: record {index} out of range [0, {num_records})")
        values[index] = bytes(body[off + 8 : off + 8 + record_size])
        off += 8 + record_size
    return Journal(version, record_size, num_records, base_fp, new_fp, values,
                   bytes(body[off : off + trailer_len]))


def load(db_path: Path) -> Journal | None:
    """The journal of the database at ``db_path``, or None if it has none."""
    path = path_for(db_path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise JournalError(f"cannot read {path}: {exc.strerror}") from None
    return decode(data, str(path))


def commit(db_path: Path, journal: Journal) -> None:
    """Make ``journal`` durable (it replaces the previous one whole)."""
    path = path_for(db_path)
    try:
        with atomic_file.replacing(path) as tmp, open(tmp, "wb") as fh:
            journal.write(fh)
    except OSError as exc:
        raise SpiralpirError(f"cannot write the update journal {path}: "
                             f"{exc.strerror or exc}") from None


def remove_stale(db_path: Path) -> list[Path]:
    """Temporary journals left by killed writers."""
    return atomic_file.remove_stale_temps(path_for(db_path))


def write_records(db_path: Path, values: dict[int, bytes], record_size: int,
                  image: Any = None) -> None:
    """Write ``values`` into the binary records file in place and fsync it. With ``image`` (the
    whole file's bytes as they are to be: the in-memory records, already holding ``values``),
    changed records less than RUN_GAP bytes apart are written as one run from it, the unchanged
    bytes between them included: a large batch of random records is a few large writes
    instead of one system call per record."""
    try:
        fd = os.open(db_path, os.O_WRONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise SpiralpirError(f"cannot open {db_path} for writing: {exc.strerror}") from None
    try:
        if image is None:
            for index, value in values.items():
                if os.pwrite(fd, value, index * record_size) != len(value):
                    raise SpiralpirError(f"{db_path}: short write at record {index}")
        else:
            view = memoryview(image).cast("B")
            for lo, hi in runs(sorted(values), record_size):
                if os.pwrite(fd, view[lo:hi], lo) != hi - lo:
                    raise SpiralpirError(f"{db_path}: short write at byte {lo}")
        os.fsync(fd)
    except OSError as exc:
        raise SpiralpirError(f"cannot write {db_path}: {exc.strerror}") from None
    finally:
        os.close(fd)


# unchanged bytes written between two changed records rather than a second write (copying 16 KiB
# costs about what a system call does); a run stops growing at RUN_MAX bytes
RUN_GAP = 16 << 10
RUN_MAX = 8 << 20


def runs(indices: list[int], record_size: int) -> list[tuple[int, int]]:
    """Byte ranges [lo, hi) covering the records at ``indices`` (ascending), merged across gaps
    of at most RUN_GAP bytes, each at most RUN_MAX bytes (or one record)."""
    out: list[tuple[int, int]] = []
    for index in indices:
        lo, hi = index * record_size, (index + 1) * record_size
        if out and lo - out[-1][1] <= RUN_GAP and hi - out[-1][0] <= RUN_MAX:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def patch_memory(data: Any, values: dict[int, bytes], stride: int) -> None:
    """Write ``values`` (each at most ``stride`` bytes, zero-padded to it) into a records
    buffer of ``stride``-byte records."""
    view = memoryview(data).cast("B")
    for index, value in values.items():
        view[index * stride : (index + 1) * stride] = value.ljust(stride, b"\0")
