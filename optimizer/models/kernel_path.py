"""The kernel path the runtime takes on this CPU, decided as runtime/src/cpu_features.cpp does:
AVX-512 (F, DQ, BW and VL) before AVX2 before the portable code, each unless its
SPIRALPIR_DISABLE_* switch is set. Read from the CPU flags the kernel reports, so that Python
can choose, for example, a machine profile without loading a build."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path

AVX512_FLAGS = frozenset({"avx512f", "avx512dq", "avx512bw", "avx512vl"})


def cpu_flags(cpuinfo: str | None = None) -> frozenset[str]:
    """The CPU's feature flags (/proc/cpuinfo's `flags` lines, or the text given); none where
    the file cannot be read."""
    if cpuinfo is None:
        return _this_cpu_flags()
    return frozenset(word for line in cpuinfo.splitlines() if re.match(r"flags\s*:", line)
                     for word in line.split(":", 1)[1].split())


@cache
def _this_cpu_flags() -> frozenset[str]:
    """Read once: every plan asks for the active profile, and the CPU does not change."""
    try:
        return cpu_flags(Path("/proc/cpuinfo").read_text())
    except OSError:
        return frozenset()


def _disabled(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "") not in ("", "0")  # the runtime's reading of a switch


def kernel_path(flags: frozenset[str] | None = None,
                env: Mapping[str, str] | None = None) -> str:
    """"avx512", "avx2" or "native": the fastest kernel path that the flags (default: this
    CPU's) allow and the environment does not switch off."""
    flags = cpu_flags() if flags is None else flags
    env = os.environ if env is None else env
    if AVX512_FLAGS <= flags and not _disabled(env, "SPIRALPIR_DISABLE_AVX512"):
        return "avx512"
    if "avx2" in flags and not _disabled(env, "SPIRALPIR_DISABLE_AVX2"):
        return "avx2"
    return "native"
