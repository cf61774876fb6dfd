"""Machine profiles: the per-operation costs of one machine, and the answer's stage names.

A profile (`profiles/*.json`, package data; written by `spiralpir calibrate` from the runtime's
own microbenchmarks and bench stage timings) gives the seconds of one NTT per ring size and of
every other operation the cost model counts (models/cost.py), plus optional per-stage scales,
the single-thread read bandwidth of the first dimension, the last-level cache size, and how
the machine scales with threads (`threads`: per thread count, the slowdown of each thread's
compute when that many run at once, apart for the scalar 128-bit ops, and the read bandwidth
they reach together).

Profiles are shipped per kernel path, as the runtime's speed depends on it most (without
AVX-512 every kernel is 2-10x slower): `default` (AVX-512) and `avx2`; and per microarchitecture
where one measured apart from the path's: `zen5` (AMD family 26 with AVX-512: the NTT 1.4x the
`default` machine's time, which predicted its queries 9-38% fast at one thread).

The ACTIVE profile (`Profile.load()` with no path, what the planner, `bench`, `serve` and the
CLI use unless given one): $SPIRALPIR_PROFILE (a file, or a shipped profile's name), else the
one `spiralpir calibrate` wrote for this user ($XDG_CONFIG_HOME/spiralpir/profile.json,
~/.config/spiralpir/profile.json without XDG_CONFIG_HOME), else the shipped profile of this
CPU's microarchitecture when its AVX-512 kernels run, else of the kernel path it takes
(models/kernel_path.py; the portable path has none, and takes the AVX2 one, the nearer).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from spiralpir.estimator.jsonfile import read_json_object
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.kernel_path import cpu_family, kernel_path

ONE_TIME_STAGES = ("expansion", "conversion")  # server_prepare: once per (streamed) query
PER_DATABASE_STAGES = ("first_dimension", "folding", "packing", "modswitch")  # answer_prepared
STAGES = ONE_TIME_STAGES + PER_DATABASE_STAGES
_FITTED = ("mac", "decomp", "decomp_wide", "redecomp_wide", "compose", "compose_wide", "auto",
           "parse", "tile", "fd", "fd_n3", "fd_n4", "fdout", "ms", "ms_wide")
# absent from older profiles: 0
_OPTIONAL = ("compose", "compose_wide", "redecomp_wide", "parse", "tile", "fd_n3", "fd_n4",
             "fdout", "ms_wide")
_WIDE = {"decomp_wide": "decomp"}  # absent from older profiles: the narrow cost
PROFILE_ENV = "SPIRALPIR_PROFILE"
SHIPPED = "default"  # the shipped profile of an AVX-512 machine, what tests pin
SHIPPED_PATHS = {SHIPPED: "profiles/default.json", "avx2": "profiles/avx2.json",
                 "zen5": "profiles/zen5.json"}
SHIPPED_FOR_PATH = {"avx512": SHIPPED, "avx2": "avx2", "native": "avx2"}
# (vendor_id, cpu family) -> the profile measured on it, for the AVX-512 path it was measured with
SHIPPED_FOR_AVX512_CPU = {("AuthenticAMD", 26): "zen5"}


def shipped_name_for(path: str, family: tuple[str, int] | None) -> str:
    """The shipped profile of a CPU taking kernel `path` with `family` (kernel_path.cpu_family)."""
    if path == "avx512" and family in SHIPPED_FOR_AVX512_CPU:
        return SHIPPED_FOR_AVX512_CPU[family]
    return SHIPPED_FOR_PATH[path]


@dataclass(frozen=True)
class ThreadScaling:
    """How T threads at once run on this machine: each thread's compute takes `slowdown` times
    its single-thread time (shared caches, clocks; >= 1 on an idle machine), but in the scalar
    128-bit ops (cost.SCALAR_OPS) `scalar_slowdown` times (None: `slowdown`, as profiles
    without it), and the first dimension's threads together read `read_bytes_per_second` (0:
    T times the single-thread figure)."""

    slowdown: float = 1.0
    read_bytes_per_second: float = 0.0
    scalar_slowdown: float | None = None

    @property
    def scalar(self) -> float:
        return self.slowdown if self.scalar_slowdown is None else self.scalar_slowdown


@dataclass(frozen=True)
class Profile:
    """Per-operation costs (seconds) of one machine."""

    cpu_model: str
    date: str
    ntt_seconds: dict[int, float]  # poly_len -> seconds per residue NTT
    op_seconds: dict[str, float]  # each op of _FITTED (cost.py OPS but ntt) -> seconds per unit
    stage_scale: dict[str, float] = field(default_factory=dict)
    read_bytes_per_second: float = 0.0  # single-thread streaming read; 0: not modelled
    cache_bytes: float = 0.0  # last-level cache; databases up to this size stay resident
    source: str = ""
    path: str = ""
    threads: dict[int, ThreadScaling] = field(default_factory=dict)  # T >= 2 -> scaling

    def scaling(self, t: int) -> ThreadScaling:
        """The scaling at t threads: measured, else the nearest measured count below it (the
        machine's core count bounds what calibration can measure), else none."""
        below = [k for k in self.threads if k <= t]
        return self.threads[max(below)] if below else ThreadScaling()

    def describe(self) -> str:
        """Which profile this is, for the user: where it came from, its CPU and date."""
        names = {path: name for name, path in SHIPPED_PATHS.items()}
        where = f"shipped {names[self.path]}" if self.path in names else self.path
        return f"{where} ({self.cpu_model}, {self.date})"

    def ntt(self, d: int) -> float:
        if d in self.ntt_seconds:
            return self.ntt_seconds[d]
        # scale the nearest measured size by d·log d
        ref = min(self.ntt_seconds, key=lambda k: abs(math.log2(k) - math.log2(d)))
        return self.ntt_seconds[ref] * (d * math.log2(d)) / (ref * math.log2(ref))

    def scale(self, stage: str) -> float:
        return self.stage_scale.get(stage, 1.0)

    def op_cost(self, op: str, d: int) -> float:
        if op == "ntt":
            return self.ntt(d)
        if op in _WIDE and op not in self.op_seconds:
            op = _WIDE[op]
        return self.op_seconds.get(op, 0.0) if op in _OPTIONAL else self.op_seconds[op]

    @classmethod
    def from_dict(cls, doc: dict[str, Any], path: str = "") -> Profile:
        try:
            ops = doc["op_seconds"]
            prof = cls(
                cpu_model=str(doc["cpu_model"]),
                date=str(doc["date"]),
                ntt_seconds={int(k): float(v) for k, v in doc["ntt_seconds"].items()},
                op_seconds={k: float(ops.get(k, 0.0) if k in _OPTIONAL
                                     else ops.get(k, ops[_WIDE[k]]) if k in _WIDE else ops[k])
                            for k in _FITTED},
                stage_scale={k: float(v) for k, v in doc.get("stage_scale", {}).items()},
                read_bytes_per_second=float(doc.get("read_bytes_per_second", 0.0)),
                cache_bytes=float(doc.get("cache_bytes", 0.0)),
                source=str(doc.get("source", "")),
                path=path,
                threads={int(k): ThreadScaling(
                    float(v.get("slowdown", 1.0)), float(v.get("read_bytes_per_second", 0.0)),
                    None if v.get("scalar_slowdown") is None else float(v["scalar_slowdown"]))
                         for k, v in doc.get("threads", {}).items()},
            )
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            # AttributeError: a section that is not an object; OverflowError: an integer
            # beyond float range
            raise SpiralpirError(f"machine profile {path or '(dict)'}: bad or missing field "
                                 f"({exc})") from None
        numbers = {**{f"ntt_seconds.{k}": v for k, v in prof.ntt_seconds.items()},
                   **{f"op_seconds.{k}": v for k, v in prof.op_seconds.items()},
                   **{f"stage_scale.{k}": v for k, v in prof.stage_scale.items()},
                   "read_bytes_per_second": prof.read_bytes_per_second,
                   "cache_bytes": prof.cache_bytes,
                   **{f"threads.{k}.slowdown": v.slowdown for k, v in prof.threads.items()},
                   **{f"threads.{k}.read_bytes_per_second": v.read_bytes_per_second
                      for k, v in prof.threads.items()},
                   **{f"threads.{k}.scalar_slowdown": v.scalar_slowdown
                      for k, v in prof.threads.items() if v.scalar_slowdown is not None}}
        for name, v in numbers.items():
            if not (math.isfinite(v) and v >= 0):
                raise SpiralpirError(f"machine profile {path or '(dict)'}: {name} = {v} must be "
                                     "a finite number >= 0")
        if not prof.ntt_seconds:
            raise SpiralpirError(f"machine profile {path}: 'ntt_seconds' is empty")
        bad = [k for k in prof.threads if k < 2]
        if bad:
            raise SpiralpirError(f"machine profile {path or '(dict)'}: threads.{bad[0]}: thread "
                                 "counts start at 2")
        unknown = sorted(set(prof.stage_scale) - set(STAGES))
        if unknown:
            raise SpiralpirError(f"machine profile {path}: unknown stage {unknown[0]!r}")
        return prof

    def to_dict(self) -> dict[str, Any]:
        return {
            "cpu_model": self.cpu_model,
            "date": self.date,
            "source": self.source,
            "ntt_seconds": {str(k): v for k, v in sorted(self.ntt_seconds.items())},
            "op_seconds": dict(sorted(self.op_seconds.items())),
            "stage_scale": dict(sorted(self.stage_scale.items())),
            "read_bytes_per_second": self.read_bytes_per_second,
            "cache_bytes": self.cache_bytes,
            "threads": {str(k): {"slowdown": v.slowdown,
                                 "read_bytes_per_second": v.read_bytes_per_second,
                                 **({} if v.scalar_slowdown is None
                                    else {"scalar_slowdown": v.scalar_slowdown})}
                        for k, v in sorted(self.threads.items())},
        }

    @classmethod
    def load(cls, path: str | Path | None = None) -> Profile:
        """Load a profile file; None -> the active profile (module docstring)."""
        if path is None:
            path = active_profile_path()
            if path is None:
                return cls.shipped(_active_shipped_name())
        p = Path(path)
        try:
            st = p.stat()
        except OSError:
            st = None
        if st is None:  # read_json_object names the problem
            return cls.from_dict(read_json_object(p, "machine profile"), str(p))
        return _load_file(str(p), st.st_mtime_ns, st.st_size)

    @classmethod
    def shipped(cls, name: str = SHIPPED) -> Profile:
        """A shipped profile by name (SHIPPED_PATHS): by default the AVX-512 machine's."""
        return _shipped_profile(name)

    @classmethod
    def shipped_for_this_cpu(cls) -> Profile:
        """The shipped profile of this CPU (shipped_name_for)."""
        return _shipped_profile(_this_cpus_shipped_name())


def user_profile_path() -> Path:
    """Where `spiralpir calibrate` writes this user's profile (XDG base directories)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "spiralpir" / "profile.json"


def _active_shipped_name() -> str:
    """The shipped profile that is active when no file is: the one $SPIRALPIR_PROFILE names,
    else this CPU's."""
    env = os.environ.get(PROFILE_ENV, "").strip()
    return env if env in SHIPPED_PATHS else _this_cpus_shipped_name()


def _this_cpus_shipped_name() -> str:
    return shipped_name_for(kernel_path(), cpu_family())


def active_profile_path() -> Path | None:
    """The active profile's file, None for a shipped one (module docstring)."""
    env = os.environ.get(PROFILE_ENV, "").strip()
    if env:
        return None if env in SHIPPED_PATHS else Path(env)
    user = user_profile_path()
    return user if user.is_file() else None


@cache
def _load_file(path: str, mtime_ns: int, size: int) -> Profile:
    """A profile file, read once per version (the planner asks for it on every plan and keys
    its caches by the profile object)."""
    del mtime_ns, size  # cache key only: a rewritten file is read again
    return Profile.from_dict(read_json_object(path, "machine profile"), path)


@cache
def _shipped_profile(name: str) -> Profile:
    """A shipped profile, read once (the planner asks for it on every plan)."""
    path = SHIPPED_PATHS[name]
    text = resources.files("spiralpir.optimizer.models").joinpath(path).read_text()
    return Profile.from_dict(json.loads(text), path)
