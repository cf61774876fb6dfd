"""ctypes binding of a built instance's C ABI (``libspiralpir_<name>.so``, declared by the
generated instance.cpp; templates/instance.cpp.j2).

One ``Library`` wraps the functions of one prefix (``spiralpir_<name>`` or the CI-sized twin
``spiralpir_<name>_ci``). Failing calls raise SpiralpirError with the library's own message.
Buffers returned by the library are copied into Python ``bytes`` and freed at once.

Streaming (every variant): ``ServerDb.prepare(pp, query)`` does a query's one-time
server work once (parse, expansion for the expansion variants, conversion) and returns a
``PreparedQuery``; ``ServerDb.answer_prepared(prepared)`` answers it against that server's
database, so one prepared query serves any number of databases of the same build.
"""

from __future__ import annotations

import ctypes
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.params.ci_twin import ci_literal
from spiralpir.optimizer.params.variants import is_pack

_c_void_pp = ctypes.POINTER(ctypes.c_void_p)
_c_u8_p = ctypes.POINTER(ctypes.c_uint8)
_c_u8_pp = ctypes.POINTER(_c_u8_p)
_c_size_p = ctypes.POINTER(ctypes.c_size_t)
PROGRESS_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64)

_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "last_error": (ctypes.c_char_p, []),
    "free": (None, [ctypes.c_void_p]),
    "params_json": (ctypes.c_char_p, []),
    "stage_names": (ctypes.c_char_p, []),
    "client_new": (ctypes.c_int, [ctypes.c_char_p, _c_void_pp]),
    "client_save": (ctypes.c_int, [ctypes.c_void_p, _c_u8_pp, _c_size_p]),
    "client_load": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t, _c_void_pp]),
    "client_free": (None, [ctypes.c_void_p]),
    "client_public_params": (ctypes.c_int, [ctypes.c_void_p, _c_u8_pp, _c_size_p]),
    "client_query": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint64, _c_u8_pp, _c_size_p]),
    "client_decode": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_char_p,
                                     ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]),
    "server_new": (ctypes.c_int, [ctypes.c_uint32, _c_void_pp]),
    "server_free": (None, [ctypes.c_void_p]),
    "server_load_records": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64,
                                           ctypes.c_uint64, PROGRESS_FN, ctypes.c_void_p]),
    "server_save_db": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]),
    "server_map_db": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]),
    "public_params_load": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t, _c_void_pp]),
    "public_params_free": (None, [ctypes.c_void_p]),
    "server_answer": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                                     ctypes.c_size_t, _c_u8_pp, _c_size_p,
                                     ctypes.POINTER(ctypes.c_double)]),
    # streaming additions (prepared.hpp, server.hpp)
    "variant": (ctypes.c_char_p, []),
    "server_prepare": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                                      ctypes.c_size_t, _c_void_pp,
                                      ctypes.POINTER(ctypes.c_double)]),
    "server_answer_prepared": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, _c_u8_pp,
                                              _c_size_p, ctypes.POINTER(ctypes.c_double)]),
    "prepared_free": (None, [ctypes.c_void_p]),
    # packed queries (capi_batch.hpp): one query ct carries G buckets' indices
    "query_buckets": (ctypes.c_uint32, []),
    "client_query_packed": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
                                           ctypes.c_size_t, _c_u8_pp, _c_size_p]),
    "server_expand_packed": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                                            ctypes.c_size_t, ctypes.c_size_t, _c_void_pp,
                                            ctypes.POINTER(ctypes.c_double)]),
    "server_prepare_bucket": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                             ctypes.c_size_t, _c_void_pp,
                                             ctypes.POINTER(ctypes.c_double)]),
    "expansion_free": (None, [ctypes.c_void_p]),
    # record updates (capi_update.hpp)
    "server_copy_db": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
    "server_update_records": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64,
                                             ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64,
                                             ctypes.c_uint32]),
    "db_patch_file": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_uint64,
                                     ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64,
                                     ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p,
                                     ctypes.c_uint64]),
    "db_touched_chunks": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64,
                                         ctypes.c_void_p, ctypes.c_uint64]),
    "server_db_words": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                       ctypes.POINTER(ctypes.c_uint64)]),
    # blocked queries (server.hpp answer_blocked; the keyword table, FORMATS.md §11)
    "client_query_blocked": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
                                            ctypes.c_uint32, ctypes.c_uint64, _c_u8_pp,
                                            _c_size_p]),
    "client_decode_plaintexts": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p,
                                                ctypes.c_size_t, _c_u8_pp, _c_size_p]),
    "server_answer_blocked": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                                             ctypes.c_size_t, ctypes.c_uint32, _c_u8_pp,
                                             _c_size_p, ctypes.POINTER(ctypes.c_double)]),
    # the sharded server (capi_shard.hpp)
    "shard_max_bits": (ctypes.c_uint32, []),
    "shard_new": (ctypes.c_int, [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32, _c_void_pp]),
    "shard_free": (None, [ctypes.c_void_p]),
    "shard_load_records": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64,
                                          ctypes.c_uint64, PROGRESS_FN, ctypes.c_void_p]),
    "shard_save_db": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]),
    "shard_map_db": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]),
    "shard_hold_in_memory": (ctypes.c_int, [ctypes.c_void_p]),
    "shard_stored_plaintexts": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64)]),
    "shard_layout": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p,
                                    ctypes.POINTER(ctypes.c_uint64)]),
    "shard_answer": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                                    ctypes.c_size_t, ctypes.c_uint32, _c_u8_pp, _c_size_p,
                                    ctypes.POINTER(ctypes.c_double)]),
    "shard_combine": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), _c_size_p,
                                     ctypes.c_uint32, ctypes.c_uint32, _c_u8_pp, _c_size_p]),
    "shard_combine_expanded": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                              ctypes.POINTER(ctypes.c_char_p), _c_size_p,
                                              ctypes.c_uint32, ctypes.c_uint32, _c_u8_pp,
                                              _c_size_p]),
    "shard_prepare": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                     ctypes.c_uint32, _c_u8_pp, _c_size_p]),
    "shard_answer_expanded": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                             _c_u8_pp, _c_size_p,
                                             ctypes.POINTER(ctypes.c_double)]),
    "shard_share_bytes": (ctypes.c_int, [ctypes.c_void_p, _c_size_p]),
    "shard_prepare_share": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                                           ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                                           ctypes.POINTER(ctypes.c_double)]),
    "shard_answer_shares": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                           _c_size_p, ctypes.c_uint32, ctypes.c_uint32,
                                           _c_u8_pp, _c_size_p, ctypes.POINTER(ctypes.c_double)]),
}

# What a client-only library (build/client_lib.py) exports: the client's part of the C ABI.
CLIENT_FUNCTIONS = frozenset({
    "last_error", "free", "params_json", "stage_names", "variant", "client_new", "client_save",
    "client_load", "client_free", "client_public_params", "client_query", "client_decode",
    "client_query_blocked", "client_decode_plaintexts", "query_buckets",
    "client_query_packed"})

# The streaming ABI's stage timings: the one-time part (PREFIX_server_prepare; "expansion" is
# the query parse alone for the stream variants, which upload the expanded query) and the
# per-database part (PREFIX_server_answer_prepared; "packing" is 0 unless the variant packs).
PREPARE_STAGES = ("expansion", "conversion")
ANSWER_STAGES = ("first_dimension", "folding", "packing", "modswitch")


def prepared_query_bytes(params: dict[str, Any]) -> int:
    """Memory held by one prepared query in the runtime (prepared.hpp ``PreparedQuery``):
    2^nu_1 first-dimension (n+1)×n matrices and nu_2 GSW (n+1)×(n+1)·t_gsw matrices of NTT
    polynomials, poly_len 64-bit words per modulus each; the packing variants compute with
    n = 1. Allocator overhead comes on top (measured RSS: 2-15% more)."""
    n = 1 if is_pack(params["variant"]) else int(params["n"])
    polys = (1 << int(params["nu_1"])) * (n + 1) * n + int(params["nu_2"]) * (n + 1) ** 2 * int(
        params["t_gsw"])
    return polys * int(params["poly_len"]) * len(params["moduli"]) * 8


# The C ABI's status for a failure of the server's own storage (capi.hpp), as opposed to 1
# for bad input: the preprocessed database could not be read or written, or stopped being intact.
STORAGE_FAILURE = 2


class StorageError(SpiralpirError):
    """The server's preprocessed database failed (I/O, or the file changed under its mapping):
    not the caller's fault, and no answer from it can be trusted until it is rebuilt."""


_LOADED: dict[tuple[str, str], Library] = {}
_LOAD_LOCK = threading.Lock()


class Library:
    """The C ABI of one instance prefix inside a shared library."""

    def __init__(self, path: Path, prefix: str, client_only: bool = False) -> None:
        self.path = Path(path)
        self.prefix = prefix
        self.client_only = client_only
        try:
            self._dll = ctypes.CDLL(str(self.path))
        except OSError as exc:
            raise SpiralpirError(f"cannot load {self.path}: {exc}") from exc
        self._fn: dict[str, Any] = {}
        for short, (restype, argtypes) in _SIGNATURES.items():
            if client_only and short not in CLIENT_FUNCTIONS:
                continue
            try:
                fn = getattr(self._dll, f"{prefix}_{short}")
            except AttributeError as exc:
                raise SpiralpirError(
                    f"{self.path} does not export {prefix}_{short}: rebuild it with "
                    "`spiralpir build`"
                ) from exc
            fn.restype = restype
            fn.argtypes = argtypes
            self._fn[short] = fn
        self.params: dict[str, Any] = json.loads(self._fn["params_json"]().decode())
        names = self._fn["stage_names"]().decode()
        self.stage_names: list[str] = [s for s in names.split(",") if s]
        self.variant: str = self._fn["variant"]().decode()

    # -- helpers -------------------------------------------------------------------------------
    def call(self, short: str, *args: Any) -> None:
        rc = self.fn(short)(*args)
        if rc != 0:
            msg = self._fn["last_error"]()
            text = msg.decode(errors="replace") if msg else f"{self.prefix}_{short} failed"
            raise (StorageError if rc == STORAGE_FAILURE else SpiralpirError)(text)

    def take_buffer(self, short: str, *args: Any) -> bytes:
        return self.take_buffer_then(short, args, ())

    def take_buffer_then(self, short: str, args: tuple[Any, ...],
                         after: tuple[Any, ...]) -> bytes:
        """take_buffer for functions with arguments after the (buffer, length) outputs."""
        buf = _c_u8_p()
        size = ctypes.c_size_t()
        self.call(short, *args, ctypes.byref(buf), ctypes.byref(size), *after)
        try:
            return ctypes.string_at(buf, size.value)
        finally:
            self._fn["free"](buf)

    def handle(self, short: str, *args: Any) -> ctypes.c_void_p:
        return self.handle_then(short, args, ())

    def handle_then(self, short: str, args: tuple[Any, ...],
                    after: tuple[Any, ...]) -> ctypes.c_void_p:
        out = ctypes.c_void_p()
        self.call(short, *args, ctypes.byref(out), *after)
        return out

    @property
    def key(self) -> tuple[str, str]:
        return (str(self.path.resolve()), self.prefix)

    def check_same(self, other: Library, what: str) -> None:
        """Objects of one library's types must never reach another's functions."""
        if other is not self and other.key != self.key:
            raise SpiralpirError(
                f"{what} of {other.prefix} ({other.path.name}) cannot be used with "
                f"{self.prefix} ({self.path.name}): different parameters"
            )

    def fn(self, short: str) -> Any:
        found = self._fn.get(short)
        if found is None:
            if short in _SIGNATURES and self.client_only:
                raise SpiralpirError(f"{self.path} is a client library: it has no server "
                                     f"function {self.prefix}_{short}")
            raise KeyError(short)
        return found


def load(library_path: Path, prefix: str, client_only: bool = False) -> Library:
    """Load (once per process) the C ABI with this prefix from library_path (with
    `client_only`, the client's part alone, CLIENT_FUNCTIONS)."""
    key = (str(Path(library_path).resolve()), prefix)
    with _LOAD_LOCK:
        lib = _LOADED.get(key)
        if lib is None:
            lib = Library(Path(library_path), prefix, client_only)
            _LOADED[key] = lib
        return lib


class _Handle:
    """A library object owned through a handle: `h` while open, `close()` frees it (also when
    garbage collected). Subclasses name the free function and what a closed handle is."""

    FREE = ""  # the library function that releases the handle
    CLOSED = ""  # the error when the handle is used after close()

    def __init__(self, lib: Library, handle: ctypes.c_void_p) -> None:
        self.lib = lib
        self._h: ctypes.c_void_p | None = handle

    @property
    def h(self) -> ctypes.c_void_p:
        if self._h is None:
            raise SpiralpirError(self.CLOSED)
        return self._h

    def close(self) -> None:
        if self._h is not None:
            self.lib.fn(self.FREE)(self._h)
            self._h = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class ClientKeys(_Handle):
    """A client's secret state: makes public parameters and queries, decodes responses."""

    FREE = "client_free"
    CLOSED = "client was closed"

    @classmethod
    def new(cls, lib: Library, seed: bytes | None = None) -> ClientKeys:
        if seed is not None and len(seed) != 32:
            raise SpiralpirError("a client seed must be 32 bytes")
        return cls(lib, lib.handle("client_new", seed))

    @classmethod
    def load(cls, lib: Library, state: bytes) -> ClientKeys:
        return cls(lib, lib.handle("client_load", state, len(state)))

    def save(self) -> bytes:
        return self.lib.take_buffer("client_save", self.h)

    def public_params(self) -> bytes:
        return self.lib.take_buffer("client_public_params", self.h)

    def query(self, index: int) -> bytes:
        return self.lib.take_buffer("client_query", self.h, ctypes.c_uint64(index))

    def query_packed(self, indices: list[int]) -> bytes:
        """One packed query: indices[g] for bucket g (1 to ``query_buckets`` of them)."""
        arr = (ctypes.c_uint64 * len(indices))(*indices)
        return self.lib.take_buffer("client_query_packed", self.h, arr, len(indices))

    def decode(self, index: int, response: bytes, record_size: int) -> bytes:
        out = ctypes.create_string_buffer(record_size)
        self.lib.call("client_decode", self.h, ctypes.c_uint64(index), response, len(response),
                      out, record_size)
        return out.raw

    def query_blocked(self, rows: list[int], column: int) -> bytes:
        """One query selecting rows[b] in row block b (of len(rows) equal blocks of the first
        dimension) and folding index ``column``: the size of any query (spiral variant)."""
        arr = (ctypes.c_uint64 * max(len(rows), 1))(*rows)
        return self.lib.take_buffer("client_query_blocked", self.h, arr, len(rows),
                                    ctypes.c_uint64(column))

    def decode_plaintexts(self, response: bytes) -> bytes:
        """Every instance's plaintext of one response, concatenated (FORMATS.md §5 layout)."""
        return self.lib.take_buffer("client_decode_plaintexts", self.h, response, len(response))


class PublicParams(_Handle):
    """Public parameters a client uploaded, parsed and validated by the library."""

    FREE = "public_params_free"
    CLOSED = "public parameters were released"

    def __init__(self, lib: Library, data: bytes) -> None:
        super().__init__(lib, lib.handle("public_params_load", data, len(data)))
        self.size = len(data)


class PreparedQuery:
    """A query after its one-time server work (``ServerDb.prepare``): answers it against any
    number of databases of the same library (``ServerDb.answer_prepared``), concurrently.

    ``seconds``: the one-time part per stage (PREPARE_STAGES). ``close()`` releases it; if
    answers are still running on it, the last of them frees it, so a cache may drop a
    prepared query at any time."""

    def __init__(self, lib: Library, handle: ctypes.c_void_p, seconds: dict[str, float],
                 query_bytes: int) -> None:
        self.lib = lib
        self.seconds = seconds
        self.query_bytes = query_bytes
        self._h: ctypes.c_void_p | None = handle
        self._lock = threading.Lock()
        self._users = 0
        self._closing = False

    @property
    def closed(self) -> bool:
        with self._lock:
            return self._h is None or self._closing

    @contextmanager
    def use(self) -> Iterator[ctypes.c_void_p]:
        """The handle, kept alive until the block exits."""
        with self._lock:
            if self._h is None or self._closing:
                raise SpiralpirError("prepared query was released")
            self._users += 1
            h = self._h
        try:
            yield h
        finally:
            with self._lock:
                self._users -= 1
                free = self._closing and self._users == 0
            if free:
                self._free()

    def close(self) -> None:
        with self._lock:
            if self._h is None or self._closing:
                return
            self._closing = True
            free = self._users == 0
        if free:
            self._free()

    def _free(self) -> None:
        with self._lock:
            h, self._h = self._h, None
        if h is not None:
            self.lib.fn("prepared_free")(h)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class PackedExpansion(_Handle):
    """A packed query after its one expansion (``ServerDb.expand_packed``): each of its
    ``buckets`` slots is prepared once by ``ServerDb.prepare_bucket``, concurrently if need be;
    ``seconds``: parse and expansion."""

    FREE = "expansion_free"
    CLOSED = "expanded query was released"

    def __init__(self, lib: Library, handle: ctypes.c_void_p, buckets: int,
                 seconds: float) -> None:
        super().__init__(lib, handle)
        self.buckets = buckets
        self.seconds = seconds


class ServerDb(_Handle):
    """A server holding one preprocessed database."""

    FREE = "server_free"
    CLOSED = "server was closed"

    def __init__(self, lib: Library, threads: int = 0) -> None:
        super().__init__(lib, lib.handle("server_new", ctypes.c_uint32(threads)))

    def load_records(self, records: Any, num_records: int, record_size: int,
                     progress: Callable[[int, int], None] | None = None) -> None:
        """records: a buffer (bytes, bytearray, mmap, memoryview) of num_records*record_size."""
        _load_records(self.lib, "server_load_records", self.h, records, num_records, record_size,
                      progress)

    def copy_from(self, other: ServerDb) -> None:
        """Hold an in-memory copy of ``other``'s database (built or mapped)."""
        self.lib.check_same(other.lib, "database")
        self.lib.call("server_copy_db", self.h, other.h)

    def update_records(self, records: Any, num_records: int, record_size: int,
                       plaintexts: list[int], threads: int = 1) -> None:
        """Re-encode ``plaintexts`` of this in-memory database from all of ``records``."""
        keep, ptr = _records_pointer(records, num_records, record_size)
        pts = (ctypes.c_uint64 * len(plaintexts))(*plaintexts)
        try:
            self.lib.call("server_update_records", self.h, ptr, ctypes.c_uint64(num_records),
                          ctypes.c_uint64(record_size), pts, ctypes.c_uint64(len(plaintexts)),
                          ctypes.c_uint32(threads))
        finally:
            del keep

    def words_view(self) -> memoryview:
        """The database's words as a saved file holds them after its header, read-only and
        without a copy: valid while this database is neither replaced nor updated."""
        ptr, size = ctypes.c_void_p(), ctypes.c_uint64()
        self.lib.call("server_db_words", self.h, ctypes.byref(ptr), ctypes.byref(size))
        buf = (ctypes.c_uint8 * size.value).from_address(int(ptr.value or 0))
        return memoryview(buf).cast("B").toreadonly()

    def save_db(self, path: Path) -> None:
        self.lib.call("server_save_db", self.h, str(path).encode())

    def map_db(self, path: Path) -> None:
        self.lib.call("server_map_db", self.h, str(path).encode())

    def answer(self, pp: PublicParams, query: bytes) -> tuple[bytes, dict[str, float]]:
        """The whole answer to one query; seconds per stage (``lib.stage_names``)."""
        self.lib.check_same(pp.lib, "public parameters")
        names = self.lib.stage_names
        stages = (ctypes.c_double * max(len(names), 1))()
        data = self.lib.take_buffer_then("server_answer", (self.h, pp.h, query, len(query)),
                                         (stages,))
        return data, {name: stages[i] for i, name in enumerate(names)}

    def answer_blocked(self, pp: PublicParams, query: bytes, blocks: int
                       ) -> tuple[list[bytes], dict[str, float]]:
        """A blocked query's ``blocks`` responses (one per row block, in block order), with one
        expansion and conversion and one pass of the first dimension; seconds per stage
        (``lib.stage_names``; folding and modswitch summed over the blocks)."""
        self.lib.check_same(pp.lib, "public parameters")
        names = self.lib.stage_names
        stages = (ctypes.c_double * max(len(names), 1))()
        data = self.lib.take_buffer_then("server_answer_blocked",
                                         (self.h, pp.h, query, len(query), blocks), (stages,))
        size = len(data) // blocks
        return ([data[b * size:(b + 1) * size] for b in range(blocks)],
                {name: stages[i] for i, name in enumerate(names)})

    def prepare(self, pp: PublicParams, query: bytes) -> PreparedQuery:
        """The one-time part of answering ``query`` (parse, expansion, conversion), reusable
        with ``answer_prepared`` against the database of any ServerDb of the same library."""
        self.lib.check_same(pp.lib, "public parameters")
        secs = (ctypes.c_double * len(PREPARE_STAGES))()
        h = self.lib.handle_then("server_prepare", (self.h, pp.h, query, len(query)), (secs,))
        return PreparedQuery(self.lib, h, {s: secs[i] for i, s in enumerate(PREPARE_STAGES)},
                             len(query))

    def expand_packed(self, pp: PublicParams, query: bytes, buckets: int) -> PackedExpansion:
        """A packed query parsed and expanded once, for its first ``buckets`` slots."""
        self.lib.check_same(pp.lib, "public parameters")
        secs = (ctypes.c_double * 1)()
        h = self.lib.handle_then("server_expand_packed", (self.h, pp.h, query, len(query),
                                                          buckets), (secs,))
        return PackedExpansion(self.lib, h, buckets, secs[0])

    def prepare_bucket(self, pp: PublicParams, expansion: PackedExpansion, bucket: int
                       ) -> PreparedQuery:
        """Slot ``bucket``'s prepared query (conversion of its slice; once per slot)."""
        self.lib.check_same(pp.lib, "public parameters")
        self.lib.check_same(expansion.lib, "expanded query")
        secs = (ctypes.c_double * len(PREPARE_STAGES))()
        h = self.lib.handle_then("server_prepare_bucket",
                                 (self.h, pp.h, expansion.h, bucket), (secs,))
        return PreparedQuery(self.lib, h, {s: secs[i] for i, s in enumerate(PREPARE_STAGES)}, 0)

    def answer_prepared(self, prepared: PreparedQuery) -> tuple[bytes, dict[str, float]]:
        """The per-database part: this database's response to a prepared query; seconds per
        stage (ANSWER_STAGES)."""
        self.lib.check_same(prepared.lib, "prepared query")
        stages = (ctypes.c_double * len(ANSWER_STAGES))()
        with prepared.use() as ph:
            data = self.lib.take_buffer_then("server_answer_prepared", (self.h, ph), (stages,))
        out = {s: stages[i] for i, s in enumerate(ANSWER_STAGES)}
        if not is_pack(self.lib.variant):  # the lap around no packing: modswitch's
            out["modswitch"] += out["packing"]
            out["packing"] = 0.0
        return data, out


class ShardDb(_Handle):
    """Shard ``index`` of 2^``bits`` of a server's database (runtime shard.hpp): the columns
    of the last-folded dimensions it holds, answered as a partial answer that ``combine``
    turns, with the other shards', into the one-process server's response."""

    FREE = "shard_free"
    CLOSED = "shard was closed"

    def __init__(self, lib: Library, bits: int, index: int, threads: int = 0) -> None:
        super().__init__(lib, lib.handle("shard_new", ctypes.c_uint32(bits),
                                         ctypes.c_uint32(index), ctypes.c_uint32(threads)))
        self.bits = bits
        self.index = index

    def load_records(self, records: Any, num_records: int, record_size: int,
                     progress: Callable[[int, int], None] | None = None) -> None:
        """Build this shard's part of the database of these records (all of them)."""
        _load_records(self.lib, "shard_load_records", self.h, records, num_records, record_size,
                      progress)

    def save_db(self, path: Path) -> None:
        self.lib.call("shard_save_db", self.h, str(path).encode())

    def map_db(self, path: Path) -> None:
        self.lib.call("shard_map_db", self.h, str(path).encode())

    def hold_in_memory(self) -> None:
        """Copy the mapped database into this process's memory (huge pages where the kernel
        allows them) and drop the mapping."""
        self.lib.call("shard_hold_in_memory", self.h)

    def stored_plaintexts(self) -> int:
        """The plaintexts of this shard that hold records (its file's header aux)."""
        out = ctypes.c_uint64()
        self.lib.call("shard_stored_plaintexts", self.h, ctypes.byref(out))
        return int(out.value)

    def layout(self) -> tuple[bytes, int]:
        """(params hash of this shard's files, bytes of its database object)."""
        digest = ctypes.create_string_buffer(8)
        size = ctypes.c_uint64()
        self.lib.call("shard_layout", self.h, digest, ctypes.byref(size))
        return digest.raw, int(size.value)

    def answer(self, pp: PublicParams, query: bytes, with_gsw: bool
               ) -> tuple[bytes, dict[str, float]]:
        """The partial answer to ``query`` (with the last folds' GSW cts if ``with_gsw``) and
        seconds per stage (SHARD_STAGES)."""
        self.lib.check_same(pp.lib, "public parameters")
        secs = (ctypes.c_double * len(SHARD_STAGES))()
        data = self.lib.take_buffer_then(
            "shard_answer", (self.h, pp.h, query, len(query), ctypes.c_uint32(int(with_gsw))),
            (secs,))
        return data, {s: secs[i] for i, s in enumerate(SHARD_STAGES)}


    def answer_expanded(self, shard_query: bytes) -> tuple[bytes, dict[str, float]]:
        """The partial answer to a query the coordinator prepared (``prepare_for_shards``)."""
        secs = (ctypes.c_double * 2)()
        data = self.lib.take_buffer_then("shard_answer_expanded",
                                         (self.h, shard_query, len(shard_query)), (secs,))
        return data, {"first_dimension": secs[0], "folding": secs[1]}

    def prepare_share(self, pp: PublicParams, query: bytes) -> tuple[Any, dict[str, float]]:
        """This shard's share of the query's preparation (runtime shard_split.hpp), as a numpy
        uint8 array (Ray passes it between processes without pickling its bytes)."""
        import numpy as np

        self.lib.check_same(pp.lib, "public parameters")
        size = ctypes.c_size_t()
        self.lib.call("shard_share_bytes", self.h, ctypes.byref(size))
        out = np.empty(size.value, dtype=np.uint8)  # numpy's allocations are 16-byte aligned
        secs = (ctypes.c_double * 2)()
        self.lib.call("shard_prepare_share", self.h, pp.h, query, len(query),
                      ctypes.c_void_p(out.ctypes.data), size.value, secs)
        return out, {"expansion": secs[0], "conversion": secs[1]}

    def answer_shares(self, shares: list[Any], with_gsw: bool
                      ) -> tuple[bytes, dict[str, float]]:
        """The partial answer from every shard's share (``prepare_share``; any buffers, read in
        place: Ray's read-only views of its object store are not copied)."""
        import numpy as np

        views = [np.frombuffer(s, dtype=np.uint8) for s in shares]
        ptrs = (ctypes.c_void_p * len(views))(*(v.ctypes.data for v in views))
        lens = (ctypes.c_size_t * len(views))(*(v.size for v in views))
        secs = (ctypes.c_double * 3)()
        data = self.lib.take_buffer_then(
            "shard_answer_shares", (self.h, ptrs, lens, ctypes.c_uint32(len(views)),
                                    ctypes.c_uint32(int(with_gsw))), (secs,))
        return data, {"assembly": secs[0], "first_dimension": secs[1], "folding": secs[2]}


# a shard's stages (ShardDb.answer); the coordinator's combine does the rest (folding, modswitch)
SHARD_STAGES = ("expansion", "conversion", "first_dimension", "folding")


def prepare_for_shards(pp: PublicParams, query: bytes, threads: int = 0) -> bytes:
    """The query expanded and converted once, for every shard's ``answer_expanded``."""
    return pp.lib.take_buffer_then("shard_prepare", (pp.h, query, len(query),
                                                     ctypes.c_uint32(threads)), ())


def combine_shards(pp: PublicParams, parts: list[bytes], threads: int = 1,
                   shard_query: bytes | None = None) -> bytes:
    """The response from every shard's partial answer to one query (one with the GSW cts, or
    all to ``shard_query``, which then gives them)."""
    lib = pp.lib
    ptrs = (ctypes.c_char_p * len(parts))(*parts)
    lens = (ctypes.c_size_t * len(parts))(*(len(p) for p in parts))
    sq = shard_query or b""
    return lib.take_buffer_then("shard_combine_expanded",
                                (pp.h, sq if shard_query is not None else None, len(sq), ptrs,
                                 lens, ctypes.c_uint32(len(parts)), ctypes.c_uint32(threads)), ())


def _load_records(lib: Library, short: str, handle: ctypes.c_void_p, records: Any,
                  num_records: int, record_size: int,
                  progress: Callable[[int, int], None] | None) -> None:
    """Call a ``*_load_records`` function with a progress callback."""
    keep, ptr = _records_pointer(records, num_records, record_size)

    def _cb(_ctx: Any, done: int, total: int) -> None:
        if progress is not None:
            progress(int(done), int(total))

    cb = PROGRESS_FN(_cb)
    try:
        lib.call(short, handle, ptr, ctypes.c_uint64(num_records), ctypes.c_uint64(record_size),
                 cb, None)
    finally:
        del keep


def _records_pointer(records: Any, num_records: int, record_size: int) -> tuple[Any, Any]:
    """(keep-alive object, void pointer) of a records buffer of num_records*record_size."""
    view = memoryview(records).cast("B")
    if len(view) < num_records * record_size:
        raise SpiralpirError("record buffer shorter than num_records * record_size")
    if view.readonly:
        ptr = ctypes.cast(ctypes.c_char_p(bytes(view)), ctypes.c_void_p)
        return ptr, ptr
    keep = (ctypes.c_uint8 * len(view)).from_buffer(view)
    return keep, ctypes.cast(keep, ctypes.c_void_p)


def patch_db_file(lib: Library, path: Path, records: Any, num_records: int, record_size: int,
                  plaintexts: list[int], chunk_bytes: int, threads: int = 1) -> list[int]:
    """Re-encode ``plaintexts`` into the preprocessed file at ``path`` from all of ``records``
    (into the page cache: fsync the file to make them durable); returns the indices of the
    ``chunk_bytes`` chunks of the file written."""
    total = int(lib.params["preprocessed_db_bytes"])
    touched = (ctypes.c_uint8 * -(-total // chunk_bytes))()
    keep, ptr = _records_pointer(records, num_records, record_size)
    pts = (ctypes.c_uint64 * len(plaintexts))(*plaintexts)
    try:
        lib.call("db_patch_file", str(path).encode(), ptr, ctypes.c_uint64(num_records),
                 ctypes.c_uint64(record_size), pts, ctypes.c_uint64(len(plaintexts)),
                 ctypes.c_uint32(threads), ctypes.c_uint64(chunk_bytes), touched,
                 ctypes.c_uint64(len(touched)))
    finally:
        del keep
    return [k for k, t in enumerate(bytes(touched)) if t]


def touched_chunks(lib: Library, plaintexts: list[int], chunk_bytes: int) -> list[int]:
    """The ``chunk_bytes`` chunks of a saved database (header included) holding words of
    ``plaintexts``."""
    total = int(lib.params["preprocessed_db_bytes"])
    touched = (ctypes.c_uint8 * -(-total // chunk_bytes))()
    pts = (ctypes.c_uint64 * len(plaintexts))(*plaintexts)
    lib.call("db_touched_chunks", pts, ctypes.c_uint64(len(plaintexts)),
             ctypes.c_uint64(chunk_bytes), touched, ctypes.c_uint64(len(touched)))
    return [k for k, t in enumerate(bytes(touched)) if t]


def build_literal(params_json: Path, ci: bool) -> dict[str, Any]:
    """The parameters a generated build compiles: its params.json's, or its CI twin's."""
    try:
        params = dict(json.loads(Path(params_json).read_text())["params"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SpiralpirError(f"unreadable {params_json}: {exc}") from exc
    return ci_literal(params) if ci else params


class Build:
    """A generated build, compiled and loaded: the full instance or its CI-sized twin.

    `inst` is a built instance (build/builder.Instance: name, source_dir, params_json,
    library); service/builds.open_build compiles one if needed."""

    def __init__(self, inst: Any, ci: bool = False) -> None:
        self.inst = inst
        self.name: str = inst.name
        self.ci = ci
        self.source_dir: Path = inst.source_dir
        self.params: dict[str, Any] = build_literal(inst.params_json, ci)
        self.prefix = f"spiralpir_{self.name}_ci" if ci else f"spiralpir_{self.name}"
        self.lib = load(inst.library, self.prefix, getattr(inst, "client_only", False))

    @property
    def label(self) -> str:
        return self.name + (" (CI twin)" if self.ci else "")

    @property
    def num_records(self) -> int:
        return int(self.params["records"])

    @property
    def record_size(self) -> int:
        return int(self.params["record_size"])

    @property
    def variant(self) -> str:
        """"spiral", "stream", "pack" or "stream_pack" (from the library itself)."""
        return self.lib.variant
