"""A database split into 2^S shards on disk (runtime/FORMATS.md §12): one stored database per
shard (the §8 store format: the runtime's object and a trailer with its checksums) and a
manifest tying them to the build, the split and the records.

Shard s of 2^S holds the columns j ≡ s (mod 2^S) of the last-folded dimensions (runtime
shard.hpp), so a coordinator folds the shards' partial answers into the one-process server's
response. ``write_shards`` writes a set (``spiralpir shard``); ``read_manifest`` and
``open_shard`` read one back, checking every shard file against the manifest before it is
mapped.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import xxhash
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.service import atomic_file, store
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service.binding import Build, ShardDb
from spiralpir.optimizer.service.progress_lines import ProgressLines

MANIFEST = "manifest.json"
FORMAT = "spiralpir-shards"
VERSION = 1


def shard_file(index: int, shards: int) -> str:
    return f"shard-{index}-of-{shards}.spiralpir-db"


def shard_bits(shards: int, max_bits: int, nu_2: int) -> int:
    """S for 2^S shards, within what the build splits (1 <= S <= max_bits <= nu_2)."""
    if shards < 2 or shards & (shards - 1):
        raise SpiralpirError(f"--shards {shards}: must be a power of two >= 2")
    bits = shards.bit_length() - 1
    if bits > nu_2:
        raise SpiralpirError(f"--shards {shards}: the parameters split into at most 2^nu_2 = "
                             f"{1 << nu_2} shards (one folding column each)")
    if bits > max_bits:
        raise SpiralpirError(f"--shards {shards}: this build splits into at most "
                             f"{1 << max_bits} shards; generate it with --max-shards {shards} "
                             "(a build serves 2^min(3, nu_2) unless generated for more)")
    return bits


def build_shard_bits(build: Build, shards: int) -> int:
    """S for 2^S shards of ``build``, or an error naming the limit."""
    return shard_bits(shards, int(build.lib.fn("shard_max_bits")()),
                      int(build.lib.params["nu_2"]))


@dataclass(frozen=True)
class ShardEntry:
    index: int
    path: Path
    plaintexts: int  # the file's header aux: the shard's plaintexts that hold records
    bytes: int  # the whole file: object and trailer
    trailer_digest: str  # XXH3-128 of the trailer, which holds every chunk's checksum


@dataclass(frozen=True)
class Manifest:
    """A shard set as its manifest describes it."""

    directory: Path
    build: str
    ci: bool
    params_hash: str  # the whole build's (FORMATS.md §1), hex
    shard_params_hash: str  # the shards' files' (their own nu_2), hex
    object_bytes: int  # each shard's database object
    bits: int
    num_records: int
    record_size: int
    fingerprint: str  # the whole database's records fingerprint (store.records_fingerprint)
    framed: bool
    entries: tuple[ShardEntry, ...]

    @property
    def shards(self) -> int:
        return 1 << self.bits

    def tie(self, entry: ShardEntry) -> store.Tie:
        """What shard ``entry``'s store must prove: its layout, its records count, the
        database's record size and records fingerprint."""
        return store.Tie(bytes.fromhex(self.shard_params_hash), self.object_bytes,
                         entry.plaintexts, self.record_size, bytes.fromhex(self.fingerprint))

    def check_build(self, build: Build) -> None:
        want = Parameters.from_literal(build.params).params_hash().hex()
        if want != self.params_hash:
            raise SpiralpirError(f"{self.directory / MANIFEST}: shards of build {self.build} "
                                 f"(params hash {self.params_hash}), not of {build.label} "
                                 f"({want})")


def _trailer_digest(path: Path, object_bytes: int) -> str:
    with open(path, "rb") as fh:
        fh.seek(object_bytes)
        return xxhash.xxh3_128_hexdigest(fh.read())


def write_shards(build: Build, records: database.Records, shards: int, out_dir: Path,
                 threads: int = 0, progress: bool = True,
                 log: Callable[[str], None] | None = None) -> Manifest:
    """Split ``records`` into ``shards`` stored shards under ``out_dir`` and write the manifest
    last (a set without a manifest is incomplete)."""
    say = log or (lambda m: print(m, file=sys.stderr, flush=True))
    bits = build_shard_bits(build, shards)
    records = database.fit_to_build(records, build.num_records, build.record_size, build.label)
    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SpiralpirError(f"--out {out_dir}: cannot create it: {exc.strerror}") from None
    fingerprint = store.records_fingerprint(records.data, records.num_records,
                                            records.record_size)
    entries: list[ShardEntry] = []
    layout: tuple[bytes, int] = (b"", 0)
    for s in range(shards):
        db = ShardDb(build.lib, bits, s, threads)
        try:
            layout = db.layout()
            what = f"shard {s} of {shards}"
            start = time.perf_counter()
            db.load_records(records.data, records.num_records, records.record_size,
                            _progress(f"preprocessing {what}", progress, say))
            path = out_dir / shard_file(s, shards)
            tie = store.Tie(layout[0], layout[1], db.stored_plaintexts(), records.record_size,
                            fingerprint)
            store.remove_stale(path)
            store.save(path, tie, db.save_db)
            entries.append(ShardEntry(s, path, tie.num_records, path.stat().st_size,
                                      _trailer_digest(path, layout[1])))
            say(f"wrote {what} to {path} ({entries[-1].bytes / 1e6:.1f} MB, "
                f"{time.perf_counter() - start:.1f} s)")
        finally:
            db.close()
    manifest = Manifest(out_dir, build.name, build.ci,
                        Parameters.from_literal(build.params).params_hash().hex(),
                        layout[0].hex(), layout[1], bits, records.num_records,
                        records.record_size, fingerprint.hex(), records.framed, tuple(entries))
    atomic_file.write_bytes(out_dir / MANIFEST, (json.dumps(_to_json(manifest), indent=1)
                                                 + "\n").encode())
    return manifest


def _progress(what: str, show: bool, say: Callable[[str], None]
              ) -> Callable[[int, int], None] | None:
    if not show:
        return None
    if sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=None, desc=what, unit="pt", file=sys.stderr, leave=False,
                   mininterval=0.5)

        def on_bar(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)
            if done >= total:
                bar.close()

        return on_bar
    return ProgressLines(what, say)


def _to_json(m: Manifest) -> dict[str, Any]:
    return {
        "format": FORMAT, "version": VERSION, "build": m.build, "ci": m.ci,
        "params_hash": m.params_hash, "shard_params_hash": m.shard_params_hash,
        "object_bytes": m.object_bytes, "shard_bits": m.bits, "shards": m.shards,
        "num_records": m.num_records, "record_size": m.record_size,
        "records_fingerprint": m.fingerprint, "framed": m.framed,
        "files": [{"index": e.index, "path": e.path.name, "plaintexts": e.plaintexts,
                   "bytes": e.bytes, "trailer_xxh3_128": e.trailer_digest}
                  for e in m.entries],
    }


def read_manifest(directory: Path) -> Manifest:
    """The manifest of the shard set in ``directory``; one-line errors naming the field."""
    directory = Path(directory)
    path = directory / MANIFEST
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise SpiralpirError(f"{path}: no manifest (not a shard set, or `spiralpir shard` did "
                             "not finish)") from None
    except (OSError, ValueError) as exc:
        raise SpiralpirError(f"{path}: unreadable: {exc}") from None

    def field(name: str, kind: type) -> Any:
        value = doc.get(name) if isinstance(doc, dict) else None
        if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
            raise SpiralpirError(f"{path}: field '{name}' missing or not a {kind.__name__}")
        return value

    if field("format", str) != FORMAT or field("version", int) != VERSION:
        raise SpiralpirError(f"{path}: not a {FORMAT} manifest of version {VERSION}")
    bits = field("shard_bits", int)
    if not 1 <= bits <= 16 or field("shards", int) != 1 << bits:
        raise SpiralpirError(f"{path}: field 'shards' is not 2^shard_bits")
    files = field("files", list)
    if len(files) != 1 << bits:
        raise SpiralpirError(f"{path}: field 'files' lists {len(files)} shards, expected "
                             f"{1 << bits}")
    entries = []
    for k, f in enumerate(files):
        if not isinstance(f, dict) or f.get("index") != k or not isinstance(f.get("path"), str) \
                or "/" in f["path"] or not all(isinstance(f.get(x), int)
                                                for x in ("plaintexts", "bytes")) \
                or not isinstance(f.get("trailer_xxh3_128"), str):
            raise SpiralpirError(f"{path}: field 'files[{k}]' malformed (index, path, "
                                 "plaintexts, bytes, trailer_xxh3_128)")
        entries.append(ShardEntry(k, directory / f["path"], f["plaintexts"], f["bytes"],
                                  f["trailer_xxh3_128"]))
    return Manifest(directory, field("build", str), field("ci", bool), field("params_hash", str),
                    field("shard_params_hash", str), field("object_bytes", int), bits,
                    field("num_records", int), field("record_size", int),
                    field("records_fingerprint", str), field("framed", bool), tuple(entries))


def open_shard(build: Build, manifest: Manifest, index: int, threads: int = 0,
               in_memory: bool = False) -> ShardDb:
    """Shard ``index`` of the set, mapped after its file proved to be the one the manifest
    names (size, trailer digest) and intact (store.py: trailer, header, every chunk);
    ``in_memory``: then copied into the process's own memory (ShardDb.hold_in_memory)."""
    manifest.check_build(build)
    entry = manifest.entries[index]
    what = f"shard {index} of {manifest.shards} ({entry.path})"
    try:
        size = os.stat(entry.path).st_size
    except OSError as exc:
        raise store.StoreRejected(f"{what}: {exc.strerror}") from None
    if size != entry.bytes:
        raise store.StoreRejected(f"{what}: {size} bytes, the manifest says {entry.bytes}")
    db = ShardDb(build.lib, manifest.bits, index, threads)
    try:
        with store.opened(entry.path, manifest.tie(entry)) as checked:
            if _trailer_digest(entry.path, manifest.object_bytes) != entry.trailer_digest:
                raise store.StoreRejected(f"{what}: not the file the manifest names (trailer "
                                          "digest mismatch)")
            db.map_db(entry.path)
            store.ensure_same(entry.path, checked)
        if in_memory:
            db.hold_in_memory()
    except BaseException:
        db.close()
        raise
    return db
