"""Cost model: operation counts per server stage × per-operation costs from a machine profile.

Owns the operation counts of a vanilla SPIRAL answer (per stage) and their conversion to
seconds with a `Profile` (`optimizer/profiles/*.json`, written by `spiralpir calibrate` from
the runtime's own microbenchmarks and bench stage timings), and the dollar cost of a query as
in the SPIRAL paper: CPU-seconds × CPU price + response bytes × egress price.

Operations (units):
  ntt     one forward or inverse NTT of one residue polynomial (cost per poly_len)
  mac     one modular multiply-add of one coefficient residue (NTT domain)
  decomp  one gadget digit of one coefficient (CRT compose, extract, lift to every residue)
  auto    one automorphism-permuted coefficient residue
  fd      one first-dimension multiply-accumulate (a database word × a ciphertext row)
  ms      one modulus-switched coefficient (CRT compose + two roundings)

Stage op counts (L = number of CRT primes, d = poly_len, ks(t) = one key switch, gadget t),
following the runtime's ServerStages (runtime/include/spiralpir/server.hpp), stage names as
its timings (expansion, conversion, first_dimension, folding, modswitch):
  ks(t)          ntt (t+2)L, mac 2tLd, decomp td, auto 2Ld
  expansion      Σ_{r=1}^{rounds−1} min(2^(r−1), 2^nu_1) · ks(t_exp_left)
                 + [1 + Σ_{r=1}^{R−1} min(2^(r−1), nu_2·t_gsw)] · ks(t_exp_right), R = rounds_right
  conversion     2^nu_1 · [ntt (t_conv+1)L, decomp t_conv·d, mac (n+1)n·t_conv·L·d]
                 + nu_2·t_gsw · [ntt (2t_conv+1)L, decomp 2t_conv·d, mac (n+1)(n+2)·t_conv·L·d]
  first_dimension instances · fd 2^(nu_1+nu_2)·n²·d·L·(n+1)
  folding        instances·(2^nu_2 − 1) · [ntt (n+1)n(1+t_gsw)L, decomp (n+1)n·t_gsw·d,
                 mac (n+1)²n·t_gsw·L·d]
  modswitch      instances · [ntt (n+1)nL, ms (n+1)nd]
Each stage's seconds = stage_scale[stage] × Σ count·cost (stage_scale, default 1, is fitted by
calibration against measured stage timings).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.params import Parameters

STAGES = ("expansion", "conversion", "first_dimension", "folding", "modswitch")
OPS = ("ntt", "mac", "decomp", "auto", "fd", "ms")

# Prices of the SPIRAL paper (AWS, 2022): $0.0195 per CPU-hour, $0.09 per GB egress.
CPU_DOLLARS_PER_HOUR = 0.0195
EGRESS_DOLLARS_PER_GB = 0.09


@dataclass(frozen=True)
class Profile:
    """Per-operation costs (seconds) of one machine."""

    cpu_model: str
    date: str
    ntt_seconds: dict[int, float]  # poly_len -> seconds per residue NTT
    op_seconds: dict[str, float]  # mac, decomp, auto, fd, ms -> seconds per unit
    stage_scale: dict[str, float] = field(default_factory=dict)
    source: str = ""
    path: str = ""

    def ntt(self, d: int) -> float:
        if d in self.ntt_seconds:
            return self.ntt_seconds[d]
        # scale the nearest measured size by d·log d
        ref = min(self.ntt_seconds, key=lambda k: abs(math.log2(k) - math.log2(d)))
        return self.ntt_seconds[ref] * (d * math.log2(d)) / (ref * math.log2(ref))

    def scale(self, stage: str) -> float:
        return self.stage_scale.get(stage, 1.0)

    @classmethod
    def from_dict(cls, doc: dict[str, Any], path: str = "") -> Profile:
        try:
            ops = doc["op_seconds"]
            prof = cls(
                cpu_model=str(doc["cpu_model"]),
                date=str(doc["date"]),
                ntt_seconds={int(k): float(v) for k, v in doc["ntt_seconds"].items()},
                op_seconds={k: float(ops[k]) for k in ("mac", "decomp", "auto", "fd", "ms")},
                stage_scale={k: float(v) for k, v in doc.get("stage_scale", {}).items()},
                source=str(doc.get("source", "")),
                path=path,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SpiralpirError(f"machine profile {path or '(dict)'}: bad or missing field "
                                 f"({exc})") from exc
        if not prof.ntt_seconds:
            raise SpiralpirError(f"machine profile {path}: 'ntt_seconds' is empty")
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
        }

    @classmethod
    def load(cls, path: str | Path | None = None) -> Profile:
        """Load a profile file; None -> the shipped default (optimizer/profiles/default.json)."""
        if path is None:
            text = resources.files("spiralpir.optimizer").joinpath(
                "profiles/default.json").read_text()
            return cls.from_dict(json.loads(text), "profiles/default.json")
        p = Path(path)
        try:
            doc = json.loads(p.read_text())
        except OSError as exc:
            raise SpiralpirError(f"cannot read machine profile {p}: {exc.strerror}") from exc
        except json.JSONDecodeError as exc:
            raise SpiralpirError(f"machine profile {p} is not JSON: {exc}") from exc
        return cls.from_dict(doc, str(p))


def _ks(t: int, L: int, d: int) -> dict[str, float]:
    return {"ntt": (t + 2) * L, "mac": 2 * t * L * d, "decomp": t * d, "auto": 2 * L * d}


def _scaled(counts: dict[str, float], k: float) -> dict[str, float]:
    return {op: c * k for op, c in counts.items()}


def _sum(*parts: dict[str, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in parts:
        for op, c in part.items():
            out[op] = out.get(op, 0.0) + c
    return out


def stage_op_counts(p: Parameters) -> dict[str, dict[str, float]]:
    """Operation counts of every server stage for one query (see the module docstring;
    variants as optimizer/variants.py: stream has no expansion, pack computes with n = 1 over
    instances·n² sub-databases and books the packing in `modswitch`)."""
    stream = p.variant in ("stream", "stream_pack")
    pack = p.variant in ("pack", "stream_pack")
    L, d, n = len(p.moduli), p.poly_len, (1 if pack else p.n)
    inst = p.instances * (p.n * p.n if pack else 1)
    dim0 = 2**p.nu_1
    digits = p.num_gsw_digits
    n_left = sum(min(2 ** (r - 1), dim0) for r in range(1, p.rounds))
    n_right = 1 + sum(min(2 ** (r - 1), digits) for r in range(1, p.rounds_right))
    tc = p.t_conv
    if stream:
        n_left = n_right = 0
    big_n, k = p.n, p.instances  # the response's n and instances
    packing = ({"ntt": k * big_n**2 * (tc + 1) * L, "decomp": k * big_n**2 * tc * d,
                "mac": k * (big_n + 1) * big_n**2 * tc * L * d} if pack else {})
    return {
        "expansion": _sum(_scaled(_ks(p.t_exp_left, L, d), n_left),
                          _scaled(_ks(p.t_exp_right, L, d), n_right)),
        "conversion": _sum(
            _scaled({"ntt": (tc + 1) * L, "decomp": tc * d, "mac": (n + 1) * n * tc * L * d},
                    dim0),
            _scaled({"ntt": (2 * tc + 1) * L, "decomp": 2 * tc * d,
                     "mac": (n + 1) * (n + 2) * tc * L * d}, digits),
        ),
        "first_dimension": {"fd": inst * 2 ** (p.nu_1 + p.nu_2) * n * n * d * L * (n + 1)},
        "folding": _scaled(
            {
                "ntt": (n + 1) * n * (1 + p.t_gsw) * L,
                "decomp": (n + 1) * n * p.t_gsw * d,
                "mac": (n + 1) ** 2 * n * p.t_gsw * L * d,
            },
            inst * (2**p.nu_2 - 1),
        ),
        "modswitch": _sum({"ntt": k * (big_n + 1) * big_n * L, "ms": k * (big_n + 1) * big_n * d},
                          packing),
    }


def stage_seconds(p: Parameters, profile: Profile) -> dict[str, float]:
    """Predicted single-thread seconds of every server stage."""
    out: dict[str, float] = {}
    for stage, counts in stage_op_counts(p).items():
        t = 0.0
        for op, c in counts.items():
            t += c * (profile.ntt(p.poly_len) if op == "ntt" else profile.op_seconds[op])
        out[stage] = t * profile.scale(stage)
    return out


def server_seconds(p: Parameters, profile: Profile) -> float:
    return sum(stage_seconds(p, profile).values())


@dataclass(frozen=True)
class Prices:
    cpu_dollars_per_hour: float = CPU_DOLLARS_PER_HOUR
    egress_dollars_per_gb: float = EGRESS_DOLLARS_PER_GB

    def dollars(self, cpu_seconds: float, response_bytes: float) -> float:
        return (cpu_seconds * self.cpu_dollars_per_hour / 3600.0
                + response_bytes * self.egress_dollars_per_gb / 1e9)
