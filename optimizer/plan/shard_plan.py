"""Parameters and a shard split together, for a database on ``machines`` machines of
``memory`` bytes each (models/shard_model.py): the planner's best parameter sets (the chosen
one and its alternatives), each with every split 2^S its ν2 and the machine count allow; the
pair whose shards fit a machine's memory with the lowest modelled latency wins."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from spiralpir.optimizer.models.profile import Profile
from spiralpir.optimizer.models.shard_model import Calibration, Machine, ShardEstimate, choose_bits
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.plan.errors import InvalidOption
from spiralpir.optimizer.plan.planner import plan as make_plan

CANDIDATES = 5  # parameter sets of the planner tried with every split


@dataclass(frozen=True)
class ShardPlan:
    params: Parameters
    estimate: dict[str, Any]  # the planner's estimate of the whole database on one machine
    best: ShardEstimate
    splits: list[ShardEstimate]  # every split of the chosen parameters, best first
    machine: Machine
    machines: int
    calibration: Calibration

    def to_json(self) -> dict[str, Any]:
        return {"params": self.params.to_literal(), "estimate": dict(self.estimate),
                "shards": {**self.best.to_json(), "calibration": self.calibration.source,
                           "alternatives": [e.to_json() for e in self.splits[1:]]}}


def plan_sharded(records: int, record_size: int, machines: int, machine: Machine,
                 calibration: Calibration | None = None, **options: Any) -> ShardPlan:
    if machines < 1:
        raise InvalidOption("machines", f"must be at least 1, got {machines}")
    if machine.memory_bytes < 1:
        raise InvalidOption("memory_per_machine", "must be at least 1 byte")
    profile = options.get("profile")
    if not isinstance(profile, Profile):
        profile = Profile.load(profile)
        options["profile"] = profile
    cal = calibration or Calibration()
    base = make_plan(records, record_size, **{**options, "top": CANDIDATES, "explain": False})
    candidates = [(base.params, base.estimate)] + list(base.alternatives)
    best: tuple[Parameters, dict[str, Any], list[ShardEstimate]] | None = None
    for params, est in candidates:
        splits = choose_bits(params, machines, machine, profile, cal)
        if not splits[0].fits:
            continue
        if best is None or splits[0].latency_seconds < best[2][0].latency_seconds:
            best = (params, est, splits)
    if best is None:
        raise InvalidOption(
            "memory_per_machine",
            f"no split of {records} x {record_size} B fits {machines} machines of "
            f"{machine.memory_bytes / 2**30:.0f} GiB (the best parameters' database is "
            f"{base.estimate.get('preprocessed_db_bytes', 0) / 2**30:.0f} GiB preprocessed)")
    params, est, splits = best
    return ShardPlan(params, dict(est), splits[0], splits, machine, machines, cal)
