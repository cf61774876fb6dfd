"""Planning a keyword build: the cuckoo table (h sub-tables of S slots) and the sub-table
database's SPIRAL parameters, chosen together.

For each h in H_CHOICES the table is sized for the load LOADS[h] (below random-walk cuckoo
insertion's threshold, about 0.5 / 0.92 / 0.98 for h = 2 / 3 / 4, so a seed fails rarely),
each sub-table is one database of S slots of tag + length + value, and one lookup is h
queries of it in one batch. The plan keeps the h whose lookup is cheapest (the objective's
per-query figure times h) and sets it beside an index lookup of the same values (one database
of N length-prefixed values), the goal being at most 2x its server CPU and bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from spiralpir.optimizer.models.cuckoo_layout import tag_bytes_for
from spiralpir.optimizer.plan.errors import InvalidOption
from spiralpir.optimizer.plan.planner import Plan, plan

H_CHOICES = (2, 3, 4)
LOADS = {2: 0.45, 3: 0.85, 4: 0.93}
MAX_VALUE = 1 << 30


def _item_size(longest: int) -> int:
    """value_frame.item_size_for without the import (plan must not import service): the
    value and its 1, 2 or 4-byte length."""
    for width in (1, 2, 4):
        if longest < 1 << (8 * width):
            return longest + width
    raise InvalidOption("max_value_size", f"{longest} bytes is too long")


def slots_for(keys: int, h: int) -> int:
    return max(1, math.ceil(keys / (h * LOADS[h])))


def _score(doc: dict[str, Any], h: int) -> float:
    est = doc["estimate"]
    return h * float(est.get("dollars_per_query", est["server_seconds"]))


@dataclass
class KeywordPlan:
    """The sub-table database's plan, the table shape, the figures and the h considered."""

    plan: Plan
    figures: dict[str, Any]
    considered: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {**self.plan.to_json(), "keyword": {**self.figures, "considered": self.considered}}


def plan_keyword(keys: int, max_value_size: int, **options: Any) -> KeywordPlan:
    """The plan of a keyword build for ``keys`` keys with values up to ``max_value_size``."""
    if keys < 1:
        raise InvalidOption("keys", f"must be at least 1, got {keys}")
    if not 0 <= max_value_size <= MAX_VALUE:
        raise InvalidOption("max_value_size", f"must be in [0, {MAX_VALUE}], got {max_value_size}")
    index_size = _item_size(max_value_size)
    index = plan(keys, index_size, **options).to_json()["estimate"]
    best: tuple[float, Plan, int] | None = None
    considered = []
    for h in H_CHOICES:
        slot_size = tag_bytes_for(h) + index_size
        pl = plan(slots_for(keys, h), slot_size, **options)
        doc = pl.to_json()
        score = _score(doc, h)
        considered.append({"h": h, "load": LOADS[h], "slots": slots_for(keys, h),
                           "lookup_server_seconds": h * doc["estimate"]["server_seconds"],
                           "score": score})
        if best is None or score < best[0]:
            best = (score, pl, h)
    assert best is not None
    _, pl, h = best
    est = pl.to_json()["estimate"]
    slots, tag = slots_for(keys, h), tag_bytes_for(h)
    slot_size = tag + index_size
    q, r, s = int(est["query_bytes"]), int(est["response_bytes"]), float(est["server_seconds"])
    iq, ir, isec = (int(index["query_bytes"]), int(index["response_bytes"]),
                    float(index["server_seconds"]))
    figures = {
        "keys": keys, "max_value_size": max_value_size, "h": h, "slots": slots,
        "load": keys / (h * slots), "tag_bytes": tag, "slot_size": slot_size,
        "table_bytes": h * slots * slot_size,
        "expansion": h * slots * slot_size / (keys * max(max_value_size, 1)),
        "lookup_query_bytes": h * q, "lookup_response_bytes": h * r,
        "lookup_server_seconds": h * s,
        "index_query_bytes": iq, "index_response_bytes": ir, "index_server_seconds": isec,
        "bytes_vs_index": h * (q + r) / (iq + ir),
        "server_seconds_vs_index": h * s / isec,
    }
    return KeywordPlan(pl, figures, considered)
