"""Planning a keyword build: the number of row blocks h, the load and the table database's
SPIRAL parameters, chosen together.

The table is one database (models/cuckoo_layout.py): its 2^nu_1 rows split into h blocks, its
2^nu_2 columns, its plaintexts the bins of slots (tag + length + value records). One lookup is
one query answered in blocks (runtime answer_blocked): expansion, conversion and the first
dimension once, folding and modulus switching h times, h responses. For each h in H_CHOICES
and each of the planner's best parameter sets for a table of about keys / load slots, the plan
keeps the sets whose table holds the keys at the planned load (cuckoo_layout.max_keys) and
whose first dimension splits into h blocks, and keeps the one whose lookup is closest to an
index lookup of the same values (one database of N length-prefixed values): the smaller of
the larger ratio of server seconds (the cost model's stages, folding and modswitch counted h
times) and of bytes (one query, h responses), the goal being at most 2x each.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.cost import Profile, stage_seconds
from spiralpir.optimizer.models.cuckoo_layout import (
    H_CHOICES,
    max_keys,
    max_tag_bytes,
    planned_load,
    tag_bytes_for,
)
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.plan.errors import InvalidOption
from spiralpir.optimizer.plan.planner import Plan, estimate, plan

MAX_VALUE = 1 << 30
CANDIDATES = 12  # parameter sets of the planner considered per table size
GROWTH = (1.0, 1.2, 1.45)  # table sizes planned, in slots per key / planned load


def _item_size(longest: int) -> int:
    """value_frame.item_size_for without the import (plan must not import service): the
    value and its 1, 2 or 4-byte length."""
    for width in (1, 2, 4):
        if longest < 1 << (8 * width):
            return longest + width
    raise InvalidOption("max_value_size", f"{longest} bytes is too long")


def lookup_seconds(params: Parameters, h: int, profile: Profile | None = None) -> float:
    """Estimated server seconds of one blocked lookup: one query's stages with folding and
    modulus switching paid once per block."""
    st = stage_seconds(params, profile or Profile.load())
    return sum(st.values()) + (h - 1) * (st["folding"] + st["modswitch"])


@dataclass
class KeywordPlan:
    """The table database's plan, the table shape, the figures and the candidates considered."""

    plan: Plan
    figures: dict[str, Any]
    considered: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {**self.plan.to_json(), "keyword": {**self.figures, "considered": self.considered}}


def _candidates(keys: int, item: int, h: int, options: dict[str, Any]
                ) -> list[tuple[Parameters, dict[str, Any], int]]:
    """(params, estimate, tag bytes) of the planner's sets that hold ``keys`` in h blocks, for
    tables of a few sizes above keys / load (a larger table may be the one whose plaintexts
    and powers of two fit)."""
    out: list[tuple[Parameters, dict[str, Any], int]] = []
    seen: set[str] = set()
    for grow in GROWTH:
        tag = tag_bytes_for(h, 1)
        records = math.ceil(keys * grow / planned_load(h, 1 << 30))
        while tag <= max_tag_bytes(h):
            pl = plan(records, tag + item, **{**options, "variant": "spiral", "top": CANDIDATES})
            wider = tag
            for params, est in [(pl.params, pl.estimate), *pl.alternatives]:
                m = params.items_per_pt
                wider = max(wider, tag_bytes_for(h, m))
                if tag_bytes_for(h, m) > tag or params.nu_1 < int(math.log2(h)) or \
                        max_keys(h, 1 << params.nu_1, 1 << params.nu_2, m) < keys:
                    continue
                name = json.dumps({k: v for k, v in params.to_literal().items()
                                   if k != "records"}, sort_keys=True)
                if name not in seen:
                    seen.add(name)
                    # the table fills every row of its database (its records are the
                    # capacity), so its lookup time is that of all 2^nu_1 rows
                    out.append((params.replace(records=params.capacity), est, tag))
            if wider == tag:
                break
            tag = wider  # many slots per bin: plan again with the wider tag
    return out


def plan_keyword(keys: int, max_value_size: int, **options: Any) -> KeywordPlan:
    """The plan of a keyword build for ``keys`` keys with values up to ``max_value_size``."""
    if keys < 1:
        raise InvalidOption("keys", f"must be at least 1, got {keys}")
    if not 0 <= max_value_size <= MAX_VALUE:
        raise InvalidOption("max_value_size", f"must be in [0, {MAX_VALUE}], got {max_value_size}")
    if (options.get("variant") or "spiral") != "spiral":
        raise InvalidOption("variant", "a keyword table is answered in row blocks, which the "
                                       "spiral variant does; plan it without --variant")
    options = {k: v for k, v in options.items() if k not in ("variant", "top")}
    item = _item_size(max_value_size)
    index = plan(keys, item, **options).to_json()["estimate"]
    ibytes = int(index["query_bytes"]) + int(index["response_bytes"])
    isec = float(index["server_seconds"])
    best: tuple[float, Parameters, dict[str, Any], int, int, float] | None = None
    considered = []
    for h in H_CHOICES:
        for params, est, tag in _candidates(keys, item, h, options):
            secs = lookup_seconds(params, h)
            wire = int(est["query_bytes"]) + h * int(est["response_bytes"])
            score = max(secs / isec, wire / ibytes)  # the goal: both ratios low
            considered.append({"h": h, "nu_1": params.nu_1, "nu_2": params.nu_2, "n": params.n,
                               "p": params.p, "poly_len": params.poly_len,
                               "slots_per_bin": params.items_per_pt,
                               "lookup_server_seconds": secs, "lookup_bytes": wire,
                               "score": score})
            if best is None or (score, secs) < (best[0], best[5]):
                best = (score, params, est, tag, h, secs)
    considered.sort(key=lambda c: c["score"])
    if best is None:
        raise SpiralpirError(f"no SPIRAL parameters hold {keys} keys with values of "
                                   f"{max_value_size} bytes in a blocked keyword table")
    _, params, est, tag, h, secs = best
    m = params.items_per_pt
    rows, columns = 1 << params.nu_1, 1 << params.nu_2
    capacity = rows * columns * m
    params = dataclasses.replace(params, records=capacity)  # the table fills the database
    pl = Plan(params=params, estimate=estimate(params))
    slot_size = tag + item
    q, r = int(est["query_bytes"]), int(est["response_bytes"])
    iq, ir = int(index["query_bytes"]), int(index["response_bytes"])
    figures = {
        "keys": keys, "max_value_size": max_value_size, "h": h, "rows": rows,
        "columns": columns, "slots": m, "capacity": capacity,
        "load": keys / capacity, "planned_load": planned_load(h, m), "tag_bytes": tag,
        "slot_size": slot_size, "table_bytes": capacity * slot_size,
        "expansion": capacity * slot_size / (keys * max(max_value_size, 1)),
        "lookup_query_bytes": q, "lookup_response_bytes": h * r,
        "lookup_server_seconds": secs,
        "index_query_bytes": iq, "index_response_bytes": ir, "index_server_seconds": isec,
        "bytes_vs_index": (q + h * r) / (iq + ir),
        "server_seconds_vs_index": secs / isec,
    }
    return KeywordPlan(pl, figures, considered)
