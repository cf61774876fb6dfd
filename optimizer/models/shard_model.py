"""A model of a sharded deployment (runtime shard.hpp): 2^S shards, one per machine, each
preparing the query (expansion, conversion), running the first dimension over its 1/2^S of
the database and the first ν2 − S folding rounds; a coordinator folding the last S rounds and
switching modulus; replicas of the whole shard set on the remaining machines.

Stage seconds come from the cost model (cost.py / parallel.py: wall seconds at the machine's
cores), scaled per stage by ``Calibration``: measured over predicted seconds of a reference
build (`tests/service/bench_ray.py --json`), so the model is driven by measured costs where
there are some. Bytes are exact (FORMATS.md §12):

  shard work       E + C + FD / 2^S + F · (2^(ν2−S) − 1) / (2^ν2 − 1)
  coordinator      F · (2^S − 1) / (2^ν2 − 1) + modswitch (packing included)
  network          2^S queries out, 2^S partial answers (+ S GSW cts from one) in
  latency          shard + coordinator + transfers at the coordinator's bandwidth + one RTT
  throughput       replicas / max(shard, coordinator share) — or the coordinators' links
                   (one coordinator per replica, on one of its machines)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from spiralpir.optimizer.models.cost import stage_seconds
from spiralpir.optimizer.models.host_memory import DATABASE_MEMORY_SHARE
from spiralpir.optimizer.models.parallel import wall_stage_seconds
from spiralpir.optimizer.models.profile import Profile
from spiralpir.optimizer.params import sizes
from spiralpir.optimizer.params.parameters import Parameters

HEADER_BYTES = 32


@dataclass(frozen=True)
class Machine:
    cores: int = 16
    memory_bytes: int = 256 << 30
    network_bytes_per_second: float = 10e9 / 8  # 10 Gb/s
    rtt_seconds: float = 200e-6


@dataclass(frozen=True)
class Calibration:
    """Measured over predicted single-thread seconds, per stage (1 where unmeasured)."""

    factors: dict[str, float] = field(default_factory=dict)
    source: str = "cost model alone"

    def scale(self, stage: str) -> float:
        return self.factors.get(stage, 1.0)

    @classmethod
    def from_bench(cls, doc: dict[str, Any], profile: Profile) -> Calibration:
        """From bench_ray.py's JSON: the shards' median stage seconds at 1 thread against the
        cost model's prediction for one shard of the reference build (S = 1)."""
        p = Parameters.from_literal(doc["params"])
        predicted = shard_stage_work(p, 1, stage_seconds(p, profile))
        measured = doc["shard_stage_seconds_median"]
        factors = {k: measured[k] / predicted[k] for k in measured
                   if k in predicted and predicted[k] > 0 and measured[k] > 0}
        return cls(factors, f"measured on {doc['build']} (bench_ray.py)")


def computation_n(p: Parameters) -> int:
    return 1 if p.variant in ("pack", "stream_pack") else p.n


def computation_instances(p: Parameters) -> int:
    return p.instances * (p.n * p.n if p.variant in ("pack", "stream_pack") else 1)


def partial_answer_bytes(p: Parameters, bits: int, with_gsw: bool) -> int:
    """A shard's partial answer (FORMATS.md §12), with or without the last S GSW cts."""
    nc = computation_n(p)
    poly = len(p.moduli) * p.poly_len * 4
    cts = computation_instances(p) * (nc + 1) * nc * poly
    gsw = bits * (nc + 1) * (nc + 1) * p.t_gsw * poly if with_gsw else 0
    return HEADER_BYTES + 8 + cts + gsw


def converted_query_bytes(p: Parameters) -> int:
    """The query after expansion and conversion, as a shard receives it from a coordinator
    that expands (the kind-7 shard query, FORMATS.md §12: one u32 per residue)."""
    nc = computation_n(p)
    polys = (1 << p.nu_1) * (nc + 1) * nc + p.nu_2 * (nc + 1) ** 2 * p.t_gsw
    return HEADER_BYTES + 8 + polys * p.poly_len * len(p.moduli) * 4


def shard_stage_work(p: Parameters, bits: int, st: dict[str, float]) -> dict[str, float]:
    """One shard's share of every stage (of seconds ``st`` for the whole database)."""
    folds = (1 << p.nu_2) - 1
    mine = ((1 << (p.nu_2 - bits)) - 1) / folds if folds else 0.0
    return {"expansion": st["expansion"], "conversion": st["conversion"],
            "first_dimension": st["first_dimension"] / (1 << bits),
            "folding": st["folding"] * mine}


def coordinator_work(p: Parameters, bits: int, st: dict[str, float]) -> dict[str, float]:
    folds = (1 << p.nu_2) - 1
    share = ((1 << bits) - 1) / folds if folds else 0.0
    return {"folding": st["folding"] * share,
            "modswitch": st.get("modswitch", 0.0) + st.get("packing", 0.0)}


@dataclass(frozen=True)
class ShardEstimate:
    bits: int
    machines: int
    replicas: int
    shard_db_bytes: int
    fits: bool
    shard_seconds: float
    coordinator_seconds: float
    transfer_seconds: float
    latency_seconds: float
    throughput_qps: float
    coordinator_bytes_out: int  # queries to the shards
    coordinator_bytes_in: int  # partial answers from them
    expand_at_shard_bytes: int  # the shards receive per query when they expand: 2^S queries
    expanded_bytes: int  # they would receive if the coordinator expanded: 2^S converted queries
    shard_stages: dict[str, float]

    @property
    def shards(self) -> int:
        return 1 << self.bits

    @property
    def coordinator_bytes(self) -> int:
        return self.coordinator_bytes_out + self.coordinator_bytes_in

    def to_json(self) -> dict[str, Any]:
        return {"shard_bits": self.bits, "shards": self.shards, "machines": self.machines,
                "replicas": self.replicas, "shard_db_bytes": self.shard_db_bytes,
                "fits": self.fits, "shard_seconds": self.shard_seconds,
                "coordinator_seconds": self.coordinator_seconds,
                "transfer_seconds": self.transfer_seconds,
                "latency_seconds": self.latency_seconds, "throughput_qps": self.throughput_qps,
                "coordinator_bytes_per_query": self.coordinator_bytes,
                "coordinator_bytes_out": self.coordinator_bytes_out,
                "coordinator_bytes_in": self.coordinator_bytes_in,
                "expanded_query_bytes_to_shards": self.expanded_bytes,
                "shard_stage_seconds": self.shard_stages}


def estimate(p: Parameters, bits: int, machines: int, machine: Machine, profile: Profile,
             calibration: Calibration | None = None) -> ShardEstimate:
    """The model of 2^bits shards of ``p``'s database on ``machines`` machines."""
    cal = calibration or Calibration()
    wall = wall_stage_seconds(p, profile, machine.cores)
    wall = {k: v * cal.scale(k) for k, v in wall.items()}
    shard = shard_stage_work(p, bits, wall)
    coord = coordinator_work(p, bits, wall) if bits else {
        "folding": 0.0, "modswitch": wall.get("modswitch", 0.0) + wall.get("packing", 0.0)}
    n = 1 << bits
    q = sizes.query_bytes(p)
    out_b = n * q if bits else 0
    in_b = (n * partial_answer_bytes(p, bits, False) + (partial_answer_bytes(p, bits, True)
            - partial_answer_bytes(p, bits, False))) if bits else 0
    bw = machine.network_bytes_per_second
    transfer = (out_b + in_b) / bw + (machine.rtt_seconds if bits else 0.0)
    shard_s = sum(shard.values())
    coord_s = sum(coord.values())
    db = sizes.preprocessed_db_bytes(p)
    shard_db = math.ceil(db / n)
    replicas = machines // n
    client_bytes = q + sizes.response_bytes(p)
    per_query = max(shard_s, coord_s / max(replicas, 1))
    link = max(replicas, 1) * bw / (out_b + in_b + client_bytes)
    throughput = min(replicas / per_query if per_query > 0 else math.inf, link) if replicas else 0.0
    return ShardEstimate(bits, machines, replicas, shard_db,
                         shard_db <= DATABASE_MEMORY_SHARE * machine.memory_bytes and replicas >= 1,
                         shard_s, coord_s, transfer, shard_s + coord_s + transfer, throughput,
                         out_b, in_b, out_b, n * converted_query_bytes(p) if bits else 0, shard)


def choose_bits(p: Parameters, machines: int, machine: Machine, profile: Profile,
                calibration: Calibration | None = None, max_bits: int | None = None
                ) -> list[ShardEstimate]:
    """Every split S = 0 .. min(ν2, log2 machines[, max_bits]), best first: those whose shard
    fits a machine's memory, by latency, then throughput."""
    top = min(p.nu_2, int(math.log2(machines)))
    if max_bits is not None:
        top = min(top, max_bits)
    ests = [estimate(p, b, machines, machine, profile, calibration) for b in range(top + 1)]
    return sorted(ests, key=lambda e: (not e.fits, e.latency_seconds, -e.throughput_qps))
