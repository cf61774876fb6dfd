"""Which machine profile is active (models/profile.py): $SPIRALPIR_PROFILE, else the user's
calibrated profile (XDG config directory), else the one shipped for this CPU's
microarchitecture (AVX-512 kernels) or for the kernel path it takes; and that the planner and
the CLI use it and say so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models import profile as profile_module
from spiralpir.optimizer.models.kernel_path import cpu_family, cpu_flags, kernel_path
from spiralpir.optimizer.models.profile import (
    PROFILE_ENV,
    SHIPPED_FOR_AVX512_CPU,
    SHIPPED_FOR_PATH,
    SHIPPED_PATHS,
    Profile,
    active_profile_path,
    user_profile_path,
)
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.plan.planner import estimate, plan_json

Mp = pytest.MonkeyPatch


def _write_profile(path: Path, factor: float, cpu: str) -> None:
    """The shipped profile with every op `factor` times as costly, labelled `cpu`."""
    doc = Profile.shipped().to_dict()
    doc["ntt_seconds"] = {k: v * factor for k, v in doc["ntt_seconds"].items()}
    doc["op_seconds"] = {k: v * factor for k, v in doc["op_seconds"].items()}
    doc["read_bytes_per_second"] /= factor
    doc["cpu_model"] = cpu
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


def test_resolution_order(tmp_path: Path, monkeypatch: Mp) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv(PROFILE_ENV, raising=False)
    assert user_profile_path() == tmp_path / "config" / "spiralpir" / "profile.json"
    assert active_profile_path() is None  # nothing calibrated: the shipped one of this CPU
    assert Profile.load() is Profile.shipped_for_this_cpu()
    _write_profile(user_profile_path(), 2.0, "calibrated cpu")
    assert Profile.load().cpu_model == "calibrated cpu"
    assert Profile.load().describe().startswith(str(user_profile_path()))
    other = tmp_path / "other.json"
    _write_profile(other, 3.0, "other cpu")
    monkeypatch.setenv(PROFILE_ENV, str(other))
    assert Profile.load().cpu_model == "other cpu"
    monkeypatch.setenv(PROFILE_ENV, "default")
    assert Profile.load() is Profile.shipped()
    assert Profile.shipped().describe().startswith("shipped default")
    monkeypatch.setenv(PROFILE_ENV, "avx2")
    assert Profile.load() is Profile.shipped("avx2")
    assert Profile.load().describe().startswith("shipped avx2")
    monkeypatch.setenv(PROFILE_ENV, str(tmp_path / "absent.json"))
    with pytest.raises(SpiralpirError, match="absent.json"):
        Profile.load()


@pytest.mark.parametrize("flags, disabled, path", [
    ("fpu avx avx2 avx512f avx512dq avx512bw avx512vl avx512ifma", "", "avx512"),
    ("fpu avx avx2 avx512f avx512dq avx512bw avx512vl", "SPIRALPIR_DISABLE_AVX512", "avx2"),
    ("fpu avx avx2 avx512f avx512cd", "", "avx2"),  # no DQ/BW/VL: not the runtime's AVX-512
    ("fpu avx avx2", "", "avx2"),
    ("fpu avx avx2", "SPIRALPIR_DISABLE_AVX2", "native"),
    ("fpu sse4_2", "", "native"),
])
def test_the_shipped_profile_follows_the_kernel_path(flags: str, disabled: str, path: str,
                                                      tmp_path: Path, monkeypatch: Mp) -> None:
    cpuinfo = f"processor\t: 0\nflags\t\t: {flags}\nbugs\t\t: avx512_fake\n"
    env = {disabled: "1"} if disabled else {"SPIRALPIR_DISABLE_AVX512": "0"}
    assert kernel_path(cpu_flags(cpuinfo), env) == path
    monkeypatch.setattr(profile_module, "kernel_path", lambda: path)
    monkeypatch.setattr(profile_module, "cpu_family", lambda: ("GenuineIntel", 6))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv(PROFILE_ENV, raising=False)
    name = SHIPPED_FOR_PATH[path]
    assert Profile.load() is Profile.shipped(name)
    assert Profile.load().path == SHIPPED_PATHS[name]


ZEN5_CPUINFO = ("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n"
                "model name\t: AMD EPYC\nflags\t\t: fpu avx2 avx512f avx512dq avx512bw avx512vl\n"
                "processor\t: 1\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\n")


@pytest.mark.parametrize("cpuinfo, env, name", [
    (ZEN5_CPUINFO, {}, "zen5"),
    # measured with its AVX-512 kernels: without them the AVX2 profile is the nearer
    (ZEN5_CPUINFO, {"SPIRALPIR_DISABLE_AVX512": "1"}, "avx2"),
    (ZEN5_CPUINFO.replace("family\t: 26", "family\t: 25"), {}, "default"),
    (ZEN5_CPUINFO.replace("AuthenticAMD", "GenuineIntel"), {}, "default"),
    (ZEN5_CPUINFO.replace("cpu family", "cpu kin"), {}, "default"),  # no family: the path's
])
def test_a_microarchitecture_with_its_own_profile_gets_it(cpuinfo: str, env: dict[str, str],
                                                          name: str, tmp_path: Path,
                                                          monkeypatch: Mp) -> None:
    path, family = kernel_path(cpu_flags(cpuinfo), env), cpu_family(cpuinfo)
    monkeypatch.setattr(profile_module, "kernel_path", lambda: path)
    monkeypatch.setattr(profile_module, "cpu_family", lambda: family)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv(PROFILE_ENV, raising=False)
    assert Profile.load() is Profile.shipped(name) is Profile.shipped_for_this_cpu()
    assert Profile.load().describe().startswith(f"shipped {name}")


def test_cpu_family_parses_vendor_and_family() -> None:
    assert cpu_family(ZEN5_CPUINFO) == ("AuthenticAMD", 26)
    assert cpu_family("processor\t: 0\nflags\t: fpu\n") is None
    assert cpu_family("") is None
    assert set(SHIPPED_FOR_AVX512_CPU.values()) <= set(SHIPPED_PATHS)


def test_the_shipped_profiles_differ_as_their_kernel_paths() -> None:
    avx512, avx2 = Profile.shipped(), Profile.shipped("avx2")
    # the same ring's NTT on the AVX2 machine is slower than with AVX-512 IFMA
    ring = min(set(avx512.ntt_seconds) & set(avx2.ntt_seconds))
    assert avx2.ntt(ring) > 1.5 * avx512.ntt(ring)
    # every shipped profile loads and covers the planner's ring sizes
    for name in SHIPPED_PATHS:
        assert set(Profile.shipped(name).ntt_seconds) >= set(avx512.ntt_seconds), name


def test_home_config_without_xdg(tmp_path: Path, monkeypatch: Mp) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert user_profile_path() == tmp_path / ".config" / "spiralpir" / "profile.json"


def test_a_rewritten_profile_is_read_again(tmp_path: Path, monkeypatch: Mp) -> None:
    path = tmp_path / "p.json"
    monkeypatch.setenv(PROFILE_ENV, str(path))
    _write_profile(path, 1.0, "first")
    assert Profile.load().cpu_model == "first"
    assert Profile.load() is Profile.load()  # read once per version (the planner's caches)
    _write_profile(path, 1.0, "second, a longer name")
    assert Profile.load().cpu_model == "second, a longer name"


def test_the_planner_estimates_with_the_active_profile(tmp_path: Path,
                                                       monkeypatch: Mp) -> None:
    slow = tmp_path / "slow.json"
    _write_profile(slow, 2.0, "slow")
    monkeypatch.setenv(PROFILE_ENV, str(slow))
    doc = plan_json(2**14, 256)
    # every op twice as costly: the plan's estimate is twice the shipped profile's
    p = Parameters.from_literal(doc["params"])
    assert doc["estimate"]["server_seconds"] == pytest.approx(
        2 * estimate(p, Profile.shipped())["server_seconds"])
