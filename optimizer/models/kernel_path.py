"""The kernel path the runtime takes on this CPU, decided as runtime/src/cpu_features.cpp does:
AVX-512 (F, DQ, BW and VL) before AVX2 before the portable code, each unless its
SPIRALPIR_DISABLE_* switch is set. Read from the CPU flags the kernel reports, so that Python
can choose, for example, a machine profile without loading a build. Also the CPU's vendor and
family (`cpu_family`): the microarchitecture a shipped profile may have been measured on."""

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


def cpu_family(cpuinfo: str | None = None) -> tuple[str, int] | None:
    """(vendor_id, cpu family) of the first processor in /proc/cpuinfo (or the text given), e.g.
    ("AuthenticAMD", 26) for Zen 5; None where the file cannot be read or lacks either field."""
    text = _this_cpuinfo() if cpuinfo is None else cpuinfo
    vendor = re.search(r"^vendor_id\s*:\s*(\S+)", text, re.MULTILINE)
    family = re.search(r"^cpu family\s*:\s*(\d+)", text, re.MULTILINE)
    return (vendor.group(1), int(family.group(1))) if vendor and family else None


@cache
def _this_cpuinfo() -> str:
    """Read once: every plan asks for the active profile, and the CPU does not change."""
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


@cache
def _this_cpu_flags() -> frozenset[str]:
    return cpu_flags(_this_cpuinfo())


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
