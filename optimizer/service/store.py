"""The stored (preprocessed) database: the runtime's preprocessed-database object followed by a
trailer that ties it to the records it was built from and proves its own contents
(runtime/FORMATS.md §8).

The trailer holds the params hash, the shape, an XXH3-128 fingerprint of the records and an
XXH3-64 checksum of every 1 MiB chunk of the object, and is written before the file is renamed
into place (atomic_file.py), so a store is either whole and tied to its source or absent; no
sidecar file can disagree with it. ``opened`` checks all of it before the runtime maps the
file (one sequential read, about 0.17 s per GiB from the page cache: FORMATS.md §8) and
refuses, with the reason, anything else: a flipped bit, another database's store, a truncated
or older file, a file renamed over it between the check and the mapping.
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import xxhash
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import atomic_file

MAGIC = b"SPRLSTOR"
VERSION = 1
CHUNK_BYTES = 1 << 20
OBJECT_MAGIC = b"SPRL"
OBJECT_KIND = 5  # preprocessed database (FORMATS.md §2)
# its format version (FORMATS.md §2, §5.1): a store of another layout is rebuilt, never mapped
OBJECT_VERSION = 3
# magic, version, flags, params hash, object bytes, records, record size, fingerprint,
# chunk bytes, chunks
_HEAD = struct.Struct("<8sII8sQQQ16sQQ")
_TAIL = struct.Struct("<QQ8s")  # trailer checksum, trailer length, magic
_OBJECT_HEADER = struct.Struct("<4sHH8sQQ")  # the runtime's 32-byte header (FORMATS.md §2)


class StoreRejected(SpiralpirError):
    """A stored database that must not be served; the message says why."""


class StoreMissing(StoreRejected):
    """No stored database at that path."""


@dataclass(frozen=True)
class Tie:
    """What a store must have been built for: parameters, shape and records."""

    params_hash: bytes  # 8 bytes (FORMATS.md §1)
    object_bytes: int  # the runtime object's size (FORMATS.md §3 preprocessed_db_bytes)
    num_records: int
    record_size: int
    fingerprint: bytes  # records_fingerprint(...)


def records_fingerprint(data: Any, num_records: int, record_size: int) -> bytes:
    """XXH3-128 of the shape and the record bytes (about 12 GB/s)."""
    h = xxhash.xxh3_128(f"spiralpir-records\n{num_records}x{record_size}\n".encode())
    view = memoryview(data).cast("B")
    total = num_records * record_size
    step = 1 << 24
    for off in range(0, total, step):
        h.update(view[off : min(off + step, total)])
    return h.digest()


def _chunks(fd: int, length: int, what: str) -> Iterator[tuple[int, memoryview]]:
    """(offset, bytes) of each CHUNK_BYTES chunk of the first ``length`` bytes, read with
    pread: a file shortened under us is a short read (an error), never a SIGBUS."""
    buf = bytearray(CHUNK_BYTES)
    view = memoryview(buf)
    for off in range(0, length, CHUNK_BYTES):
        n = min(CHUNK_BYTES, length - off)
        got = os.preadv(fd, [view[:n]], off)
        if got != n:
            raise StoreRejected(f"{what}: truncated while reading (short read at byte {off + got})")
        yield off, view[:n]


def _object_header(fd: int, tie: Tie, what: str) -> None:
    raw = os.pread(fd, _OBJECT_HEADER.size, 0)
    if len(raw) != _OBJECT_HEADER.size:
        raise StoreRejected(f"{what}: truncated ({len(raw)} bytes)")
    magic, version, kind, params_hash, payload, aux = _OBJECT_HEADER.unpack(raw)
    if magic != OBJECT_MAGIC or kind != OBJECT_KIND:
        raise StoreRejected(f"{what}: not a preprocessed database (magic {magic!r}, kind {kind})")
    if version != OBJECT_VERSION:
        raise StoreRejected(f"{what}: preprocessed database format version {version}, this "
                            f"spiralpir reads {OBJECT_VERSION}")
    if params_hash != tie.params_hash:
        raise StoreRejected(f"{what}: built for other parameters (params hash "
                            f"{params_hash.hex()}, this build's {tie.params_hash.hex()})")
    if payload != tie.object_bytes - _OBJECT_HEADER.size or aux != tie.num_records:
        raise StoreRejected(f"{what}: header says {aux} records and {payload} payload bytes, "
                            f"expected {tie.num_records} and "
                            f"{tie.object_bytes - _OBJECT_HEADER.size}")


def _trailer(tie: Tie, sums: list[int]) -> bytes:
    body = _HEAD.pack(MAGIC, VERSION, 0, tie.params_hash, tie.object_bytes, tie.num_records,
                      tie.record_size, tie.fingerprint, CHUNK_BYTES, len(sums))
    body += struct.pack(f"<{len(sums)}Q", *sums)
    return body + _TAIL.pack(xxhash.xxh3_64_intdigest(body), len(body) + _TAIL.size, MAGIC)


def save(path: Path, tie: Tie, write_object: Callable[[Path], None]) -> None:
    """Write the store at ``path`` atomically: ``write_object(tmp)`` writes the runtime object
    (ServerDb.save_db), then the trailer is appended, the file fsynced and renamed."""
    path = Path(path)
    try:
        _save(path, tie, write_object)
    except OSError as exc:
        raise SpiralpirError(f"cannot write the preprocessed database {path}: "
                             f"{exc.strerror or exc}") from None


def _save(path: Path, tie: Tie, write_object: Callable[[Path], None]) -> None:
    with atomic_file.replacing(path) as tmp:
        write_object(tmp)
        with open(tmp, "r+b") as fh:
            fd = fh.fileno()
            size = os.fstat(fd).st_size
            what = f"preprocessed database {tmp}"
            if size != tie.object_bytes:
                raise SpiralpirError(f"{what}: the runtime wrote {size} bytes, expected "
                                     f"{tie.object_bytes}")
            _object_header(fd, tie, what)
            sums = [xxhash.xxh3_64_intdigest(c) for _, c in _chunks(fd, size, what)]
            fh.seek(size)
            fh.write(_trailer(tie, sums))


def _check(fd: int, tie: Tie, what: str) -> None:
    size = os.fstat(fd).st_size
    base = tie.object_bytes
    if size == base:
        raise StoreRejected(f"{what}: no store trailer (cut at the database's end, or written by "
                            "an older spiralpir)")
    if size < base + _HEAD.size + _TAIL.size:
        raise StoreRejected(f"{what}: truncated ({size} bytes; the database alone is {base})")
    check, total, magic = _TAIL.unpack(os.pread(fd, _TAIL.size, size - _TAIL.size))
    if magic != MAGIC:
        raise StoreRejected(f"{what}: no store trailer at its end (truncated, or not a store "
                            f"of these parameters: {size} bytes)")
    if total != size - base:
        raise StoreRejected(f"{what}: {size} bytes do not fit a {base}-byte database and a "
                            f"{total}-byte trailer (truncated or another build's store)")
    body = os.pread(fd, total - _TAIL.size, base)
    if len(body) != total - _TAIL.size or xxhash.xxh3_64_intdigest(body) != check:
        raise StoreRejected(f"{what}: the store trailer is corrupted (checksum mismatch)")
    (_, version, _flags, params_hash, object_bytes, num_records, record_size, fingerprint,
     chunk_bytes, chunks) = _HEAD.unpack_from(body)
    if version != VERSION:
        raise StoreRejected(f"{what}: store version {version}, this spiralpir reads {VERSION}")
    if params_hash != tie.params_hash or object_bytes != base:
        raise StoreRejected(f"{what}: built for other parameters (params hash "
                            f"{params_hash.hex()}, this build's {tie.params_hash.hex()})")
    if (num_records, record_size) != (tie.num_records, tie.record_size):
        raise StoreRejected(f"{what}: built from {num_records} records x {record_size} bytes, "
                            f"the database now has {tie.num_records} x {tie.record_size}")
    if fingerprint != tie.fingerprint:
        raise StoreRejected(f"{what}: built from other records (fingerprint "
                            f"{fingerprint.hex()[:16]}…, the database now "
                            f"{tie.fingerprint.hex()[:16]}…)")
    if chunk_bytes != CHUNK_BYTES or chunks != -(-base // chunk_bytes) or \
            len(body) != _HEAD.size + 8 * chunks:
        raise StoreRejected(f"{what}: the trailer's chunk table does not fit the database")
    _object_header(fd, tie, what)
    sums = struct.unpack_from(f"<{chunks}Q", body, _HEAD.size)
    for k, (off, chunk) in enumerate(_chunks(fd, base, what)):
        if xxhash.xxh3_64_intdigest(chunk) != sums[k]:
            raise StoreRejected(f"{what}: chunk {k} (bytes {off} .. {off + len(chunk) - 1}) "
                                "does not match its checksum (corrupted)")


@contextlib.contextmanager
def opened(path: Path, tie: Tie) -> Iterator[os.stat_result]:
    """Check the store at ``path`` against ``tie`` (trailer, header, every chunk) and yield
    the checked file's identity while it is held open; map ``path`` inside the context, then
    call ``ensure_same``. Raises StoreMissing or StoreRejected."""
    path = Path(path)
    what = f"preprocessed database {path}"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise StoreMissing(f"{what}: none yet") from None
    except OSError as exc:
        raise StoreRejected(f"{what}: cannot open: {exc.strerror}") from None
    try:
        _check(fd, tie, what)
        yield os.fstat(fd)
    finally:
        os.close(fd)


def ensure_same(path: Path, checked: os.stat_result) -> None:
    """Raise StoreRejected unless ``path`` still names the file ``opened`` checked: a file
    renamed over it between the check and the mapping is not the one checked."""
    try:
        now = os.stat(path)
    except OSError:
        now = None
    if now is None or (now.st_dev, now.st_ino) != (checked.st_dev, checked.st_ino):
        raise StoreRejected(f"preprocessed database {path}: replaced while being checked")


def default_path(db_path: Path, build: str) -> Path:
    """Where a database's store lives by default: next to it, named for the build."""
    db_path = Path(db_path)
    return db_path.with_name(db_path.name + f".{build}.spiralpir-db")


# the sidecar of earlier versions (the store's tie before the trailer): removed when a store is
# written, so that no stale copy lies next to a new store
LEGACY_SIDECAR = ".json"


def remove_stale(path: Path) -> list[Path]:
    """Temporary files of this store left by killed processes, and a legacy sidecar."""
    path = Path(path)
    removed = atomic_file.remove_stale_temps(path, also=(LEGACY_SIDECAR,))
    side = path.with_name(path.name + LEGACY_SIDECAR)
    with contextlib.suppress(FileNotFoundError):
        if side.is_file():
            side.unlink()
            removed.append(side)
    return removed


def trailer_for(path: Path, tie: Tie) -> bytes | None:
    """The trailer of the store at ``path`` if it is intact and tied to ``tie`` (parameters,
    shape, records' fingerprint), else None; the chunks are not read (patch() takes it)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        if size < tie.object_bytes + _HEAD.size + _TAIL.size:
            return None
        raw = os.pread(fd, size - tie.object_bytes, tie.object_bytes)
    finally:
        os.close(fd)
    return raw if _parsed_sums(raw, tie) is not None else None


def _parsed_sums(raw: bytes, tie: Tie) -> list[int] | None:
    """The chunk checksums of a trailer tied to ``tie``, or None."""
    if len(raw) < _HEAD.size + _TAIL.size:
        return None
    check, total, magic = _TAIL.unpack_from(raw, len(raw) - _TAIL.size)
    body = raw[: len(raw) - _TAIL.size]
    if magic != MAGIC or total != len(raw) or xxhash.xxh3_64_intdigest(body) != check:
        return None
    (_, version, _flags, params_hash, object_bytes, num_records, record_size, fingerprint,
     chunk_bytes, chunks) = _HEAD.unpack_from(body)
    if (version, params_hash, object_bytes, num_records, record_size, fingerprint,
        chunk_bytes) != (VERSION, tie.params_hash, tie.object_bytes, tie.num_records,
                         tie.record_size, tie.fingerprint, CHUNK_BYTES) or \
            chunks != -(-object_bytes // CHUNK_BYTES) or len(body) != _HEAD.size + 8 * chunks:
        return None
    return list(struct.unpack_from(f"<{chunks}Q", body, _HEAD.size))


def patch(path: Path, base: Tie, base_trailer: bytes, tie: Tie,
          write: Callable[[Path], list[int]], sync: bool = True) -> None:
    """Change the store at ``path`` in place from ``base`` (whose trailer was
    ``base_trailer``) to ``tie``: ``write(path)`` writes the changed words and returns the
    chunks it wrote; those are hashed again, the others keep their checksums, and the new
    trailer (same length) replaces the old one. A kill midway leaves a store that fails its
    check until the update journal's changes are written again (update_journal.py). Without
    ``sync`` the kernel writes the pages back when it will: a kill loses nothing, a power loss
    may, and the check at the next start then refuses the store (it is rebuilt)."""
    sums = _base_sums(path, base, base_trailer)
    what = f"preprocessed database {path}"
    try:
        touched = write(path)
        with open(path, "r+b") as fh:
            fd = fh.fileno()
            buf = bytearray(CHUNK_BYTES)
            for k in touched:
                n = min(CHUNK_BYTES, tie.object_bytes - k * CHUNK_BYTES)
                if os.preadv(fd, [memoryview(buf)[:n]], k * CHUNK_BYTES) != n:
                    raise StoreRejected(f"{what}: truncated while patching (chunk {k})")
                sums[k] = xxhash.xxh3_64_intdigest(memoryview(buf)[:n])
            _finish(fd, tie, sums, sync)
    except OSError as exc:
        raise SpiralpirError(f"cannot patch {what}: {exc.strerror or exc}") from None


class ChunkRewriter:
    """patch() from images of the new object held in memory, a few chunks at a time: each chunk
    is written whole from ``words`` (the bytes after the 32-byte header: the runtime's
    database words, as they are when that chunk is written) and hashed from memory, no page
    of the file read first; ``finish`` writes the trailer tied to ``tie``. Until then the
    file's trailer is the base's, so a kill leaves what the journal's patch finishes."""

    def __init__(self, path: Path, base: Tie, base_trailer: bytes) -> None:
        self.path = path
        self.sums = _base_sums(path, base, base_trailer)
        self.object_bytes = base.object_bytes
        try:
            self._fh = open(path, "r+b")  # closed by finish or close
            self._header = os.pread(self._fh.fileno(), _OBJECT_HEADER.size, 0)
        except OSError as exc:
            raise SpiralpirError(f"cannot patch preprocessed database {path}: "
                                 f"{exc.strerror or exc}") from None

    def write(self, chunks: list[int], words: memoryview) -> None:
        head = _OBJECT_HEADER.size
        if len(words) != self.object_bytes - head:
            raise SpiralpirError(f"preprocessed database {self.path}: {len(words)} bytes of "
                                 f"words for a {self.object_bytes}-byte object")
        fd = self._fh.fileno()
        try:
            for k in chunks:
                lo, hi = k * CHUNK_BYTES, min((k + 1) * CHUNK_BYTES, self.object_bytes)
                data = (self._header + words[: hi - head] if lo == 0
                        else words[lo - head : hi - head])
                if os.pwrite(fd, data, lo) != len(data):
                    raise SpiralpirError(f"preprocessed database {self.path}: short write")
                self.sums[k] = xxhash.xxh3_64_intdigest(data)
        except OSError as exc:
            raise SpiralpirError(f"cannot patch preprocessed database {self.path}: "
                                 f"{exc.strerror or exc}") from None

    def finish(self, tie: Tie, sync: bool = True) -> None:
        try:
            _finish(self._fh.fileno(), tie, self.sums, sync)
        except OSError as exc:
            raise SpiralpirError(f"cannot patch preprocessed database {self.path}: "
                                 f"{exc.strerror or exc}") from None
        finally:
            self.close()

    def close(self) -> None:
        self._fh.close()


def _base_sums(path: Path, base: Tie, base_trailer: bytes) -> list[int]:
    sums = _parsed_sums(base_trailer, base)
    if sums is None:
        raise StoreRejected(f"preprocessed database {path}: the base trailer does not fit it")
    return sums


def _finish(fd: int, tie: Tie, sums: list[int], sync: bool) -> None:
    os.pwrite(fd, _trailer(tie, sums), tie.object_bytes)
    if sync:
        os.fsync(fd)
