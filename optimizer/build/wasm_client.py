"""A generated build's client compiled to WebAssembly with Emscripten: generated/NAME/wasm/.

What a browser needs to query a server of build NAME: the client's part of the C ABI
(SPIRALPIR_DEFINE_CLIENT_C_API: keys, public parameters, queries, decoding) and the runtime's
portable kernels, compiled by ``em++`` (Debian's ``emscripten``; $EMXX overrides) into

    spiralpir_NAME.wasm   the code
    spiralpir_NAME.js     Emscripten's loader (an ES module factory)
    client.mjs            the ES module a page imports (wasm/client.mjs, see its header)
    batch.mjs             its batch layout, placement and framing (getMany)
    keyword.mjs           a keyword table's hashing (BLAKE2b in the wasm) and slot matching (getKey)
    build.json            what the files were built from: a later build with the same inputs
                          is skipped

(``_ci`` after NAME and ``client_ci.mjs`` for the CI-sized twin). No x86 kernel is compiled:
cpu_features finds no AVX path on WebAssembly, so every kernel dispatches to its portable
version. Randomness comes from crypto.getRandomValues (runtime/src/chacha20.cpp). The runtime's
objects are kept per em++ version and sources under the build root, as the native client's.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from spiralpir.optimizer.build.builder import file_lock
from spiralpir.optimizer.build.client_lib import (
    RUNTIME_SOURCES,
    Compiler,
    _compile,
    _runtime_dir,
    _sources_hash,
    client_unit_text,
    compile_objects,
    instance_abi,
)
from spiralpir.optimizer.errors import SpiralpirError

MODULE_TEMPLATE = Path(__file__).with_name("wasm_client.mjs")
BATCH_MODULE = Path(__file__).with_name("wasm_batch.mjs")  # copied as batch.mjs
KEYWORD_MODULE = Path(__file__).with_name("wasm_keyword.mjs")  # copied as keyword.mjs
COMPILE_FLAGS = ("-std=c++20", "-O2", "-DNDEBUG", "-Wall", "-Wextra", "-fwasm-exceptions")
# an ES module factory for browsers and workers, no eval/new Function (the page's CSP allows
# 'wasm-unsafe-eval' only), no file system, 64-bit arguments as BigInt, memory that grows
LINK_FLAGS = ("-O2", "-fwasm-exceptions", "-sMODULARIZE=1", "-sEXPORT_ES6=1",
              "-sEXPORT_NAME=createSpiralpirModule", "-sENVIRONMENT=web,worker",
              "-sDYNAMIC_EXECUTION=0", "-sFILESYSTEM=0", "-sWASM_BIGINT=1",
              "-sALLOW_MEMORY_GROWTH=1", "-sEXPORTED_RUNTIME_METHODS=UTF8ToString")
CLIENT_FUNCTIONS = ("last_error", "free", "params_json", "variant", "client_new", "client_save",
                    "client_load", "client_free", "client_public_params", "client_query",
                    "client_decode", "client_query_blocked", "client_decode_plaintexts",
                    "blake2b")
EMXX_HINT = ("install Emscripten (Debian: apt-get install emscripten) or set $EMXX to em++")


def find_emxx() -> Compiler:
    """$EMXX, else em++ on PATH; an error saying how to get it otherwise."""
    env = os.environ.get("EMXX")
    if env and shutil.which(env) is None:
        raise SpiralpirError(f"$EMXX is '{env}', which is not an executable on PATH: "
                             f"{EMXX_HINT}")
    path = env or shutil.which("em++")
    if path is None:
        raise SpiralpirError(f"no em++ on PATH to build the WebAssembly client: {EMXX_HINT}")
    # Debian's emscripten runs its JavaScript tools with the node on PATH, which finds
    # Debian's node modules (acorn) only in /usr/share/nodejs if it is Debian's own node
    debian = Path("/usr/share/nodejs")
    env: tuple[tuple[str, str], ...] = ()
    if debian.is_dir():
        env = (("NODE_PATH", os.pathsep.join(filter(None, (os.environ.get("NODE_PATH"),
                                                           str(debian))))),)
    return Compiler((path,), "em++", (), env)


@dataclass(frozen=True)
class WasmClient:
    """The files of a built WebAssembly client."""

    directory: Path
    name: str  # spiralpir_NAME or spiralpir_NAME_ci: the C ABI prefix and the files' stem
    module: Path  # client.mjs (client_ci.mjs)
    params_type: str  # the C++ parameter type the instance instantiates

    @property
    def loader(self) -> Path:
        return self.directory / f"{self.name}.js"

    @property
    def wasm(self) -> Path:
        return self.directory / f"{self.name}.wasm"

    def files(self) -> dict[str, Path]:
        """The served files by their name under /wasm/."""
        return {"client.mjs": self.module, "batch.mjs": self.directory / "batch.mjs",
                "keyword.mjs": self.directory / "keyword.mjs",
                self.loader.name: self.loader, self.wasm.name: self.wasm}


def wasm_client(source_dir: Path, ci: bool = False) -> WasmClient:
    """Where the WebAssembly client of generated/NAME goes (built or not)."""
    source_dir = Path(source_dir).resolve()
    prefix, params_type = instance_abi(source_dir, ci)
    return WasmClient(source_dir / "wasm", prefix,
                      source_dir / "wasm" / ("client_ci.mjs" if ci else "client.mjs"), params_type)


def _inputs_hash(cc: Compiler, runtime: Path, source_dir: Path, ci: bool, simd: bool) -> str:
    h = hashlib.sha256()
    for part in (cc.identity, _sources_hash(runtime), " ".join(COMPILE_FLAGS + LINK_FLAGS),
                 str(ci), str(simd)):
        h.update(part.encode() + b"\0")
    for path in (source_dir / "params.hpp", source_dir / "params.json", MODULE_TEMPLATE,
                 BATCH_MODULE, KEYWORD_MODULE):
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def _module_text(client: WasmClient, build: str, ci: bool) -> str:
    text = MODULE_TEMPLATE.read_text()
    for key, value in (("__SPIRALPIR_LOADER__", f"./{client.loader.name}"),
                       ("__SPIRALPIR_PREFIX__", client.name), ("__SPIRALPIR_BUILD__", build),
                       ('"__SPIRALPIR_CI__"', "true" if ci else "false")):
        if key not in text:
            raise AssertionError(f"{MODULE_TEMPLATE.name} lacks {key}")
        text = text.replace(key, value)
    return text


def build_wasm_client(source_dir: Path, objects_root: Path, ci: bool = False,
                      log: Callable[[str], None] | None = None, jobs: int | None = None,
                      simd: bool = False) -> WasmClient:
    """Compile generated/NAME's client (the CI twin's with `ci`) into generated/NAME/wasm/;
    nothing is compiled when build.json says the same inputs built the files there. `simd`
    lets the compiler use WebAssembly SIMD128 (-msimd128)."""
    source_dir = Path(source_dir).resolve()
    client = wasm_client(source_dir, ci)
    cc = find_emxx()
    runtime = _runtime_dir()
    inputs = _inputs_hash(cc, runtime, source_dir, ci, simd)
    client.directory.mkdir(parents=True, exist_ok=True)
    with file_lock(client.directory / ".lock"):  # servers starting at once build it once
        _build(client, cc, runtime, source_dir, inputs, objects_root, ci, log, jobs, simd)
    return client


def _build(client: WasmClient, cc: Compiler, runtime: Path, source_dir: Path, inputs: str,
           objects_root: Path, ci: bool, log: Callable[[str], None] | None, jobs: int | None,
           simd: bool) -> None:
    stamp = client.directory / (f"build{'_ci' if ci else ''}.json")
    if stamp.is_file() and all(p.is_file() for p in client.files().values()):
        try:
            if json.loads(stamp.read_text()).get("inputs") == inputs:
                return
        except (OSError, ValueError):
            pass
    t0 = time.perf_counter()
    flags = [*COMPILE_FLAGS, *(("-msimd128",) if simd else ()), "-I", str(runtime / "include")]
    key = hashlib.sha256((cc.identity + _sources_hash(runtime) + " ".join(flags)).encode())
    objs = Path(objects_root) / f"wasm-runtime-{key.hexdigest()[:16]}"
    compile_objects(cc, [(runtime / "src" / f"{n}.cpp", ()) for n in RUNTIME_SOURCES], flags,
                    objs, log, jobs)
    if log:
        log(f"compiling the WebAssembly client of '{source_dir.name}' ({client.name}.wasm)")
    tmp = client.directory / f".tmp-{os.getpid()}"
    tmp.mkdir(exist_ok=True)
    try:
        unit = tmp / f"{client.name}.cpp"
        unit.write_text(client_unit_text(client.name, client.params_type, packed=False))
        obj = tmp / f"{client.name}.o"
        _compile(cc, [*flags, "-I", str(source_dir), "-c", str(unit), "-o", str(obj)], unit.name)
        exported = ",".join(["_malloc", "_free"]
                            + [f"_{client.name}_{f}" for f in CLIENT_FUNCTIONS])
        objects = [str(objs / f"{n}.o") for n in RUNTIME_SOURCES]
        _compile(cc, [*LINK_FLAGS, *(("-msimd128",) if simd else ()),
                      f"-sEXPORTED_FUNCTIONS={exported}", str(obj), *objects,
                      "-o", str(tmp / client.loader.name)], f"linking {client.wasm.name}")
        (tmp / client.module.name).write_text(_module_text(client, source_dir.name, ci))
        shutil.copy(BATCH_MODULE, tmp / "batch.mjs")
        shutil.copy(KEYWORD_MODULE, tmp / "keyword.mjs")
        for name in (client.wasm.name, client.loader.name, client.module.name, "batch.mjs",
                     "keyword.mjs"):
            os.replace(tmp / name, client.directory / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    stamp.write_text(json.dumps({"inputs": inputs, "simd": simd}, indent=2) + "\n")
    if log:
        log(f"built {client.directory}/{client.name}.wasm "
            f"({client.wasm.stat().st_size / 1e3:.0f} kB) in {time.perf_counter() - t0:.1f} s")
