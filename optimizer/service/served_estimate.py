"""What a server expects one answer of its build to cost on this machine: the cost model's
wall seconds at the server's thread count under the active profile (models/profile.py), for
`GET /v1/params` (clients and operators see the estimate and which profile made it)."""

from __future__ import annotations

import os
from typing import Any

from spiralpir.optimizer.models.cost import split_seconds
from spiralpir.optimizer.models.parallel import wall_stage_seconds
from spiralpir.optimizer.models.profile import Profile
from spiralpir.optimizer.params.parameters import Parameters


def served_estimate(params: dict[str, Any], threads: int) -> dict[str, Any]:
    """{server_seconds, one_time_seconds, per_database_seconds, stages, threads, profile} for
    a build's parameter literal answered with `threads` threads (0: every core)."""
    t = threads or os.cpu_count() or 1
    prof = Profile.load()
    stages = wall_stage_seconds(Parameters.from_literal(params), prof, t)
    one_time, per_db = split_seconds(stages)
    return {"server_seconds": sum(stages.values()), "one_time_seconds": one_time,
            "per_database_seconds": per_db, "stages": stages, "threads": t,
            "profile": prof.describe()}
