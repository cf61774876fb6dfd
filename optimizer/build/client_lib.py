"""A generated build's library compiled directly, without CMake: what a client machine builds.

A client needs the protocol instantiated for the server's parameters (the C++ is templated on
them), but not CMake, ninja, the benchmark drivers or the server. This module compiles the
runtime's sources and one unit holding the client's part of the build's C ABI (keys, public
parameters, queries, packed queries, decoding: the parameter type and prefix of instance.cpp,
or of instance_ci.cpp for the CI-sized twin) into one self-contained shared library with a
single compiler. Leaving the server's templates out makes that unit compile about 3x faster
(demo, zig's clang at -O2: 8.1 s against 23.0 s for the whole instance.cpp).

* $CXX if set, else ``c++``/``g++``/``clang++`` from PATH;
* else the ``ziglang`` package's clang (a dependency of spiralpir, so a machine with no
  compiler still has one: ``python -m ziglang c++``), which brings its own libc++.

The code is compiled for the architecture's baseline (never for this CPU): the vector kernels
get their own flags per file, as in the CMake build, and are picked at run time only if the
CPU has them, so a cached library also runs on a CPU without AVX-512 (and
SPIRALPIR_DISABLE_AVX512=1 exercises that path on one that has it). The runtime's objects do
not depend on the parameters and are kept per compiler and source hash, so a client for new
parameters compiles one file.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from spiralpir.optimizer.build.builder import file_lock, runtime_source
from spiralpir.optimizer.errors import SpiralpirError

# the runtime library's sources (runtime/CMakeLists.txt) by the flags they need; the vector
# kernels exist only on x86-64
RUNTIME_SOURCES = ("cpu_features", "ntt_table", "ntt_native", "ntt_dispatch", "pointwise_native",
                   "pointwise_dispatch", "dot_native", "dot_dispatch", "gadget_native",
                   "gadget_dispatch", "chacha20", "wipe", "gaussian", "ternary")
AVX2_SOURCES = ("ntt_avx2", "pointwise_avx2", "dot_avx2", "gadget_avx2")
AVX512_SOURCES = ("ntt_avx512", "pointwise_avx512", "dot_avx512", "gadget_avx512")
AVX2_FLAGS = ("-mavx2",)
AVX512_FLAGS = ("-mavx512f", "-mavx512dq", "-mavx512bw", "-mavx512vl", "-mavx512ifma")
COMMON_FLAGS = ("-std=c++20", "-O2", "-fPIC", "-DNDEBUG", "-Wall", "-Wextra")
LINK_FLAGS = ("-shared", "-pthread")
# the line of a generated instance file that names its C ABI prefix and parameter type
INSTANCE_MACRO = re.compile(r"^SPIRALPIR_DEFINE_C_API\((\w+), (\w+)\)$", re.MULTILINE)


@dataclass(frozen=True)
class Compiler:
    """A C++ compiler command: argv prefix, a label for messages, and baseline target flags."""

    argv: tuple[str, ...]
    label: str
    target: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()  # set for its processes

    @property
    def identity(self) -> str:
        """Hashed into the object cache key: the command and its version line."""
        try:
            out = subprocess.run([*self.argv, "--version"], capture_output=True, text=True,
                                 timeout=120)
            version = out.stdout.splitlines()[0] if out.stdout else out.stderr[:200]
        except (OSError, subprocess.SubprocessError):
            version = "?"
        return " ".join(self.argv) + "\n" + version + "\n" + " ".join(self.target)


def _zig_target() -> tuple[str, ...]:
    arch = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64",
            "arm64": "aarch64"}.get(platform.machine().lower())
    if arch is None or not sys.platform.startswith("linux"):
        raise SpiralpirError(f"no client compiler for {sys.platform}/{platform.machine()}: the "
                             "bundled one is set up for Linux on x86-64 and aarch64; install a "
                             "C++20 compiler (g++ or clang++) and retry")
    # zig compiles for the host CPU unless told otherwise; baseline keeps the cache portable
    return ("-target", f"{arch}-linux-gnu", "-mcpu=baseline")


def find_compiler() -> Compiler:
    """$CXX, a C++ compiler on PATH, or the ziglang package's clang (see the module doc)."""
    env = os.environ.get("CXX")
    if env:
        if shutil.which(env) is None:
            raise SpiralpirError(f"$CXX is '{env}', which is not an executable on PATH")
        return Compiler((env,), env, ())
    for name in ("c++", "g++", "clang++"):
        path = shutil.which(name)
        if path:
            return Compiler((path,), name, ())
    try:
        import ziglang  # noqa: F401 -- only to know it is installed
    except ImportError:
        raise SpiralpirError("no C++ compiler: none of $CXX, c++, g++, clang++ is on PATH and "
                             "the ziglang package is missing (pip install ziglang, or install "
                             "g++)") from None
    return Compiler((sys.executable, "-m", "ziglang", "c++"), "zig c++ (ziglang package)",
                    _zig_target())


def _x86() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


def _runtime_units(runtime: Path) -> list[tuple[Path, tuple[str, ...]]]:
    """(source, extra flags) of each runtime source this architecture compiles."""
    src = runtime / "src"
    units = [(src / f"{n}.cpp", ()) for n in RUNTIME_SOURCES]
    if _x86():
        units += [(src / f"{n}.cpp", AVX2_FLAGS) for n in AVX2_SOURCES]
        units += [(src / f"{n}.cpp", AVX512_FLAGS) for n in AVX512_SOURCES]
    return units


def _defines() -> tuple[str, ...]:
    return ("-DSPIRALPIR_HAVE_AVX2", "-DSPIRALPIR_HAVE_AVX512") if _x86() else ()


def _runtime_dir() -> Path:
    """The runtime's project directory (include/, src/) in the shipped or checked-out sources."""
    src = runtime_source()
    return src / "runtime" if (src / "runtime" / "src").is_dir() else src


def _sources_hash(runtime: Path) -> str:
    h = hashlib.sha256()
    for base in (runtime / "include", runtime / "src"):
        for path in sorted(p for p in base.rglob("*") if p.is_file()):
            h.update(str(path.relative_to(runtime)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _compile(cc: Compiler, args: list[str], what: str) -> None:
    env = {**os.environ, **dict(cc.env)} if cc.env else None
    proc = subprocess.run([*cc.argv, *cc.target, *args], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
        raise SpiralpirError(f"{cc.label} failed on {what} (exit {proc.returncode}):\n{tail}")


def compile_objects(cc: Compiler, units: list[tuple[Path, tuple[str, ...]]], flags: list[str],
                    objs: Path, log: Callable[[str], None] | None, jobs: int | None) -> None:
    """Compile each (source, extra flags) unit missing from objs/ into objs/STEM.o, in
    parallel, under a lock (objs/ is keyed by compiler and sources, shared by builds)."""
    objs.mkdir(parents=True, exist_ok=True)
    with file_lock(objs / ".lock"):
        todo = [(s, f) for s, f in units if not (objs / f"{s.stem}.o").is_file()]
        if todo and log:
            log(f"compiling the runtime ({len(todo)} files) with {cc.label}; once per compiler")

        def unit(item: tuple[Path, tuple[str, ...]]) -> None:
            src, extra = item
            tmp = objs / f"{src.stem}.o.{os.getpid()}.tmp"
            _compile(cc, [*flags, *extra, "-c", str(src), "-o", str(tmp)], src.name)
            os.replace(tmp, objs / f"{src.stem}.o")

        with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as ex:
            list(ex.map(unit, todo))


def instance_abi(source_dir: Path, ci: bool) -> tuple[str, str]:
    """(C ABI prefix, C++ parameter type) of generated/NAME's instance file (the CI twin's with
    `ci`)."""
    inst = Path(source_dir) / ("instance_ci.cpp" if ci else "instance.cpp")
    if not inst.is_file():
        raise SpiralpirError(f"{source_dir}: no generated build there (no {inst.name})")
    m = INSTANCE_MACRO.search(inst.read_text())
    if m is None:
        raise SpiralpirError(f"{inst}: no SPIRALPIR_DEFINE_C_API(prefix, params) line; "
                             "regenerate the build")
    return m.group(1), m.group(2)


def client_unit_text(prefix: str, params_type: str, packed: bool) -> str:
    """A translation unit with the client's part of a build's C ABI; `packed` adds the packed
    (batch) queries' client functions."""
    text = ("// the client's part of one build's C ABI\n"
            '#include "params.hpp"\n\n#include <spiralpir/spiral/capi.hpp>\n')
    if packed:
        text += "#include <spiralpir/spiral/capi_batch.hpp>\n"
    text += f"\nSPIRALPIR_DEFINE_CLIENT_C_API({prefix}, {params_type})\n"
    if packed:
        text += f"SPIRALPIR_DEFINE_BATCH_CLIENT_C_API({prefix}, {params_type})\n"
    return text


def _warm_link(cc: Compiler, scratch: Path) -> None:
    """Link an empty shared library as the client's is linked. The first such link of a zig
    installation builds zig's libc++ and caches it (about 2 minutes, on one core); started
    beside the runtime's compiles it is off the critical path. A failure here is left to the
    real link to report."""
    scratch.mkdir(parents=True, exist_ok=True)
    unit = scratch / f"warm.{os.getpid()}.cpp"
    out = unit.with_suffix(".so")
    try:
        unit.write_text("#include <string>\nstd::string spiralpir_warm() { return \"\"; }\n")
        subprocess.run([*cc.argv, *cc.target, *LINK_FLAGS, "-o", str(out), str(unit)],
                       capture_output=True, check=False)
    finally:
        unit.unlink(missing_ok=True)
        out.unlink(missing_ok=True)


@dataclass(frozen=True)
class ClientInstance:
    """A library built by build_client_library; what service/binding.Build loads."""

    name: str
    source_dir: Path
    library: Path
    client_only: bool = True  # the client's part of the C ABI alone

    @property
    def params_json(self) -> Path:
        return self.source_dir / "params.json"


def build_client_library(source_dir: Path, out_dir: Path, objects_root: Path, ci: bool,
                         log: Callable[[str], None] | None = None,
                         jobs: int | None = None) -> ClientInstance:
    """Compile the client's part of generated/NAME's C ABI (the CI twin's with `ci`) and the
    runtime into out_dir/libspiralpir_NAME.so; runtime objects are reused from objects_root."""
    source_dir = Path(source_dir).resolve()
    name = source_dir.name
    lib = Path(out_dir) / f"libspiralpir_{name}.so"
    cc = find_compiler()
    runtime = _runtime_dir()
    include = ("-I", str(runtime / "include"))
    key = hashlib.sha256((cc.identity + _sources_hash(runtime)).encode()).hexdigest()[:16]
    objs = Path(objects_root) / f"runtime-{key}"
    t0 = time.perf_counter()
    prefix, params_type = instance_abi(source_dir, ci)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    unit = Path(out_dir) / f"client.{os.getpid()}.cpp"  # compilers go by the suffix
    unit_obj = unit.with_suffix(".o")
    tmp = lib.with_name(f"{lib.stem}.{os.getpid()}.tmp.so")
    # only zig (the one compiler with a target of its own here) builds its C++ library on use
    warm = ThreadPoolExecutor(max_workers=1) if cc.target else None
    try:
        if warm:
            warm.submit(_warm_link, cc, Path(out_dir))
        compile_objects(cc, _runtime_units(runtime), [*COMMON_FLAGS, *_defines(), *include],
                        objs, log, jobs)
        if log:
            log(f"compiling the client of '{name}' and linking {lib.name}")
        unit.write_text(client_unit_text(prefix, params_type, packed=True))
        _compile(cc, [*COMMON_FLAGS, *include, "-I", str(source_dir), "-c", str(unit),
                      "-o", str(unit_obj)], f"the client unit of '{name}'")
        if warm:
            warm.shutdown(wait=True)
        objects = [str(objs / f"{s.stem}.o") for s, _ in _runtime_units(runtime)]
        _compile(cc, [*LINK_FLAGS, "-o", str(tmp), str(unit_obj), *objects],
                 f"linking {lib.name}")
        os.replace(tmp, lib)
    finally:
        if warm:
            warm.shutdown(wait=True)
        for path in (unit, unit_obj, tmp):
            path.unlink(missing_ok=True)
    if log:
        log(f"built {lib} in {time.perf_counter() - t0:.1f} s")
    return ClientInstance(name=name, source_dir=source_dir, library=lib)
