"""Building generated instances: one shared runtime build, reused, then CMake per instance.

Layout under the build directory (default ``build/spiralpir`` in the working directory, or
$SPIRALPIR_BUILD_DIR)::

    runtime/            CMake build tree of the shared runtime (configured once)
    runtime-install/    its install prefix; instances find_package(spiralpirRuntime) here
    instances/NAME-H/   one CMake build tree per generated directory (H: a hash of its path,
                        so two builds of the same name in different places never collide)

The runtime is built from its shipped sources (package data spiralpir.runtime, a standalone
CMake project), or from the source tree at $SPIRALPIR_RUNTIME_SOURCE (a checkout or snapshot of
the repository, configured from its root as the repository build is). Every call
re-runs the (incremental) runtime and instance builds, which is a no-op when nothing changed.
A file lock serialises concurrent builds into the same directory.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.kernel_path import AVX512_FLAGS, cpu_flags
from spiralpir.optimizer.resources import default_build_dir, runtime_source_dir

_NINJA_STATUS = re.compile(r"^\[(\d+)/(\d+)\]")


@dataclass(frozen=True)
class Instance:
    """The artifacts of one built instance."""

    name: str
    source_dir: Path  # generated/NAME
    build_dir: Path
    library: Path  # libspiralpir_NAME.so
    bench: Path  # spiralpir_NAME_bench
    ci_bench: Path  # spiralpir_NAME_ci_bench

    @property
    def params_json(self) -> Path:
        return self.source_dir / "params.json"


def build_root(build_dir: Path | None = None) -> Path:
    """The build directory, absolute: `build_dir`, else the default (resources.py)."""
    return Path(build_dir or default_build_dir()).resolve()


def runtime_source() -> Path:
    """The CMake source directory of the runtime: $SPIRALPIR_RUNTIME_SOURCE (a repository tree,
    configured from its root) or the shipped runtime/ (a standalone project)."""
    env = os.environ.get("SPIRALPIR_RUNTIME_SOURCE")
    src = Path(env) if env else runtime_source_dir()
    if env and not (src / "runtime" / "CMakeLists.txt").is_file():
        raise SpiralpirError(f"runtime sources not found under {src} (need a source checkout)")
    if not (src / "CMakeLists.txt").is_file():
        raise SpiralpirError(f"runtime sources not found under {src} (spiralpir is installed "
                             "without its package data)")
    return src


def testing_include_dir() -> Path:
    """runtime/testing/include of the runtime sources: the bench drivers a generated build's
    benchmark executables compile against (test code, not installed with the runtime)."""
    src = runtime_source()
    runtime = src / "runtime" if os.environ.get("SPIRALPIR_RUNTIME_SOURCE") else src
    return runtime / "testing" / "include"


def instance_name(source_dir: Path) -> str:
    """The build name of a generated directory (its folder name, checked against its files)."""
    source_dir = Path(source_dir)
    if not (source_dir / "CMakeLists.txt").is_file() or not (source_dir / "params.json").is_file():
        raise SpiralpirError(
            f"{source_dir} is not a generated build (no CMakeLists.txt/params.json); "
            "create one with `spiralpir generate`"
        )
    return source_dir.resolve().name


def instance_paths(source_dir: Path, build_dir: Path | None = None) -> Instance:
    source_dir = Path(source_dir).resolve()
    name = instance_name(source_dir)
    root = build_root(build_dir)
    tag = hashlib.sha256(str(source_dir).encode()).hexdigest()[:8]
    bdir = root / "instances" / f"{name}-{tag}"
    return Instance(
        name=name,
        source_dir=source_dir,
        build_dir=bdir,
        library=bdir / f"libspiralpir_{name}.so",
        bench=bdir / f"spiralpir_{name}_bench",
        ci_bench=bdir / f"spiralpir_{name}_ci_bench",
    )


def _tools() -> tuple[str, list[str]]:
    cmake = shutil.which("cmake")
    if cmake is None:
        raise SpiralpirError(
            "CMake not found: install it (Debian: apt-get install cmake ninja-build g++) "
            "or run .ci/install"
        )
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which(
        "clang++"
    )
    if cxx is None or shutil.which(cxx) is None:
        raise SpiralpirError(
            "no C++ compiler found (tried $CXX, c++, g++, clang++): install g++ "
            "(Debian: apt-get install g++) or run .ci/install"
        )
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    return cmake, generator


def cpu_has_avx512() -> bool:
    return AVX512_FLAGS <= cpu_flags()


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run(cmd: list[str], what: str, show_progress: bool) -> None:
    """Run a CMake step; a ninja progress bar when asked; full output on failure."""
    env = dict(os.environ, NINJA_STATUS="[%f/%t] ")
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    assert proc.stdout is not None
    lines: list[str] = []
    bar = None
    try:
        for line in proc.stdout:
            lines.append(line)
            m = _NINJA_STATUS.match(line)
            if m and show_progress:
                done, total = int(m.group(1)), int(m.group(2))
                if bar is None:
                    from tqdm import tqdm

                    bar = tqdm(total=total, desc=what, unit="step", file=sys.stderr, leave=False,
                               disable=None)  # no bar when stderr is not a terminal (CI logs)
                bar.total = total
                bar.n = done
                bar.refresh()
        rc = proc.wait()
    finally:
        if bar is not None:
            bar.close()
    if rc != 0:
        tail = "".join(lines[-60:])
        raise SpiralpirError(f"{what} failed (exit {rc}): {' '.join(cmd)}\n{tail}")


def build_runtime(build_dir: Path | None = None, jobs: int | None = None,
                  show_progress: bool = True) -> Path:
    """Configure (once), build and install the shared runtime; returns the install prefix."""
    cmake, generator = _tools()
    root = build_root(build_dir)
    src = runtime_source()
    bdir, prefix = root / "runtime", root / "runtime-install"
    jobs = jobs or os.cpu_count() or 1
    with file_lock(root / ".runtime.lock"):
        if not (bdir / "CMakeCache.txt").is_file():
            _run(
                [cmake, "-S", str(src), "-B", str(bdir), *generator,
                 "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_INSTALL_PREFIX={prefix}",
                 "-DSPIRALPIR_BUILD_TESTS=OFF", "-DSPIRALPIR_BUILD_BENCH=OFF"],
                "configure runtime", show_progress,
            )
        _run([cmake, "--build", str(bdir), "-j", str(jobs)], "build runtime", show_progress)
        _run([cmake, "--install", str(bdir)], "install runtime", False)
    return prefix


def installed_digest(prefix: Path) -> str:
    """BLAKE2b of every file under the runtime's install prefix (relative path and content)."""
    h = hashlib.blake2b(digest_size=16)
    for path in sorted(p for p in prefix.rglob("*") if p.is_file()):
        h.update(path.relative_to(prefix).as_posix().encode() + b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()


def build_arith_bench(build_dir: Path | None = None, jobs: int | None = None,
                      show_progress: bool = True) -> Path:
    """Build the runtime's kernel microbenchmarks (spiral_runtime_bench, runtime/bench, Google
    Benchmark) against the installed runtime, in a tree of their own; returns the executable.
    An error when Google Benchmark is missing."""
    bench_src = runtime_source() / "bench"
    if not (bench_src / "bench_arith.cpp").is_file():
        raise SpiralpirError(f"the runtime's microbenchmarks are not installed ({bench_src}; a "
                             "source checkout has them)")
    prefix = build_runtime(build_dir, jobs, show_progress)
    cmake, generator = _tools()
    root = build_root(build_dir)
    proj, bdir = root / "runtime-bench-src", root / "runtime-bench"
    jobs = jobs or os.cpu_count() or 1
    with file_lock(root / ".runtime-bench.lock"):
        proj.mkdir(parents=True, exist_ok=True)
        text = ("cmake_minimum_required(VERSION 3.20)\nproject(spiralpir_arith_bench CXX)\n"
                "set(CMAKE_CXX_STANDARD 20)\nfind_package(spiralpirRuntime REQUIRED)\n"
                f"add_subdirectory({bench_src.as_posix()} bench)\n")
        lists = proj / "CMakeLists.txt"
        if not lists.is_file() or lists.read_text() != text:
            lists.write_text(text)
        _run([cmake, "-S", str(proj), "-B", str(bdir), *generator, "-DCMAKE_BUILD_TYPE=Release",
              f"-DCMAKE_PREFIX_PATH={prefix}"], "configure the runtime's microbenchmarks",
             show_progress)
        _run([cmake, "--build", str(bdir), "-j", str(jobs)],
             "build the runtime's microbenchmarks", show_progress)
    exe = bdir / "bench" / "spiral_runtime_bench"
    if not exe.is_file():
        raise SpiralpirError(f"the microbenchmark build did not produce {exe}")
    return exe


def build(source_dir: Path, build_dir: Path | None = None, jobs: int | None = None,
          avx512: bool = False, show_progress: bool = True,
          targets: Sequence[str] | None = None) -> Instance:
    """Build the runtime (if needed) and the generated instance in source_dir.

    targets: a subset of "library", "bench", "ci_bench" (default: all three)."""
    inst = instance_paths(source_dir, build_dir)
    if avx512 and not cpu_has_avx512():
        raise SpiralpirError(
            "--avx512 asked for an AVX-512 build but this CPU lacks AVX-512 (avx512f/dq/bw/vl); "
            "build without --avx512 (the runtime still picks the fastest kernels it can)"
        )
    prefix = build_runtime(build_dir, jobs, show_progress)
    runtime_digest = installed_digest(prefix)
    testing_include = testing_include_dir()
    cmake, generator = _tools()
    jobs = jobs or os.cpu_count() or 1
    with file_lock(inst.build_dir.parent / f".{inst.build_dir.name}.lock"):
        _run(
            [cmake, "-S", str(inst.source_dir), "-B", str(inst.build_dir), *generator,
             "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={prefix}",
             f"-DSPIRALPIR_INSTANCE_AVX512={'ON' if avx512 else 'OFF'}",
             # the benchmark drivers: test code, not installed with the runtime
             f"-DSPIRALPIR_TESTING_INCLUDE_DIR={testing_include}"],
            f"configure {inst.name}", show_progress,
        )
        wanted = list(targets) if targets is not None else ["library", "bench", "ci_bench"]
        names = {"library": f"spiralpir_{inst.name}", "bench": f"spiralpir_{inst.name}_bench",
                 "ci_bench": f"spiralpir_{inst.name}_ci_bench"}
        unknown = [t for t in wanted if t not in names]
        if unknown:
            raise SpiralpirError(f"unknown build target(s): {', '.join(unknown)}")
        target_args = [] if targets is None else ["--target", *(names[t] for t in wanted)]
        # CMake installs headers with their source's mtime, so an object compiled against an
        # older install can look newer than the header that replaced it: rebuild from clean
        # whenever the installed runtime's content differs from the one last built against
        stamp = inst.build_dir / ".runtime-digest"
        stale = stamp.is_file() and stamp.read_text() != runtime_digest
        _run([cmake, "--build", str(inst.build_dir), "-j", str(jobs), *target_args,
              *(["--clean-first"] if stale else [])], f"build {inst.name}", show_progress)
        stamp.write_text(runtime_digest)
    paths = {"library": inst.library, "bench": inst.bench, "ci_bench": inst.ci_bench}
    for artifact in (paths[t] for t in wanted):
        if not artifact.is_file():
            raise SpiralpirError(f"build of {inst.name} did not produce {artifact}")
    return inst
