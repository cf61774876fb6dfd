"""Planning a batch build: k records per request from N records by probabilistic batch codes.

For each w (copies of every record) the fewest buckets B whose placement-failure bound is at
most 2^-40 (models/placement_bound.py); the bucket size is the largest bucket's load under a
fresh public seed (models/bucket_layout.py), so every bucket is one database of the same
shape and one SPIRAL parameter set (one set of public parameters) serves them all. Among the
w, the plan keeps the one whose batch is cheapest by the objective's per-query figure times B
(each bucket is answered as one query of the bucket-sized database). Then, for that w, the
number G of buckets whose indices one query ciphertext carries (runtime batch_query.hpp): each
G is a full plan of the packed shape (its expansion noise and keys), and the plan keeps the
largest G within PACKED_CPU_SLACK of unpacked queries' CPU (a request of ceil(B/G) queries).
The candidates are ranked by their estimates alone, searched side by side on the cores
(plan/workers.py); the next-best alternatives and binding constraints asked for (`top`,
`explain`) are searched once, for the chosen bucket plan. A cap on the preprocessed database
(max_db_bytes) holds for all B buckets together: each bucket's plan gets 1/B of it, and a w
whose buckets cannot fit is left out.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass, field
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.bucket_layout import BucketLayout
from spiralpir.optimizer.models.placement_bound import TARGET_LOG2, log2_failure_bound, min_buckets
from spiralpir.optimizer.plan.errors import InvalidOption, NoFeasibleBatch
from spiralpir.optimizer.plan.planner import Plan, plan
from spiralpir.optimizer.plan.workers import Workers

W_CHOICES = (2, 3, 4, 5, 6)
# what a candidate's plan is planned with: its estimate ranks it, and the alternatives and
# binding constraints (a search each) would be thrown away with it
RANKING_ONLY = {"top": 1, "explain": False}
PACKED_CPU_SLACK = 1.05  # packed queries may cost this much more server CPU per batch
MAX_BATCH = 4096


def _score(doc: dict[str, Any], buckets: int) -> float:
    est = doc["estimate"]
    return buckets * float(est.get("dollars_per_query", est["server_seconds"]))


def batch_figures(doc: dict[str, Any], layout: BucketLayout, k: int) -> dict[str, Any]:
    """The batch section of a plan: layout, bound and per-batch / per-record estimates. With
    queries packing G buckets a batch sends ceil(B/G) queries; every bucket's estimated
    seconds already carry 1/G of its query's expansion (models/cost.py)."""
    est = doc["estimate"]
    b = layout.buckets
    g = int(doc["params"].get("query_buckets", 1))
    queries = -(-b // g)
    query, response = int(est["query_bytes"]), int(est["response_bytes"])
    seconds = b * float(est["server_seconds"])
    bound = log2_failure_bound(k, b, layout.w)
    return {
        "k": k, **layout.to_json(),
        # null when no failure is possible (fewer than w + 1 indices): JSON has no -inf
        "log2_failure_bound": None if math.isinf(bound) else bound,
        "failure_bound_source": "union bound over Hall violators (models/placement_bound.py)",
        "buckets_per_index": b / k,
        "query_buckets": g,
        "batch_queries": queries,
        "batch_query_bytes": queries * query,
        "batch_response_bytes": b * response,
        "batch_server_seconds": seconds,
        "per_record_bytes": (queries * query + b * response) / k,
        "per_record_server_seconds": seconds / k,
        "stored_records": layout.w * layout.records,
        "preprocessed_bytes": b * int(est["preprocessed_db_bytes"]),
    }


@dataclass
class BatchPlan:
    """The bucket database's plan, the layout, the batch figures and the w considered."""

    plan: Plan
    layout: BucketLayout
    figures: dict[str, Any]
    considered: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {**self.plan.to_json(), "batch": {**self.figures, "considered": self.considered}}


def _plan(records: int, record_size: int, options: dict[str, Any]) -> Plan:
    return plan(records, record_size, **options)


def _per_bucket(options: dict[str, Any], layout: BucketLayout) -> dict[str, Any]:
    """The options of one bucket's plan: the batch's database cap shared by its B buckets."""
    cap = options.get("max_db_bytes")
    if cap is None or math.isinf(cap):
        return options
    return {**options, "max_db_bytes": cap / layout.buckets}


def plan_batch(records: int, record_size: int, k: int, seed: str | None = None,
               max_copies: int | None = None, processes: int | None = None,
               **options: Any) -> BatchPlan:
    """The plan of a batch build: the bucket database's parameters (records = bucket
    capacity) and the layout, for batches of up to k distinct indices. max_copies caps w
    (the server stores w copies of every record: memory and preprocessing grow with it).
    processes: how many candidate plans are searched at once (default: one per core)."""
    if max_copies is not None and max_copies < 2 and k > 1:
        raise InvalidOption("max_copies", f"must be at least 2 for batches of {k}")
    w_choices = tuple(w for w in W_CHOICES if max_copies is None or w <= max_copies)
    if not 1 <= k <= MAX_BATCH:
        raise InvalidOption("batch", f"must be in [1, {MAX_BATCH}], got {k}")
    if k > records:
        raise InvalidOption("batch", f"a batch of {k} exceeds the {records} records")
    seed = seed or secrets.token_hex(16)
    choices = (1,) if k == 1 else tuple(w for w in w_choices if w < records)
    considered: list[dict[str, Any]] = []
    ranking = {**options, **RANKING_ONLY}
    layouts = [BucketLayout(records, w, min_buckets(k, w, TARGET_LOG2), seed, 0).sized()
               for w in choices]
    with Workers(_plan, processes) as candidates:
        planned = candidates.run([(lay.capacity, record_size, _per_bucket(ranking, lay))
                                  for lay in layouts])
        _, pl, layout = _best_layout(planned, layouts, considered, records, k)
        if "query_buckets" not in options:
            pl = _packed(pl, layout, record_size, _per_bucket(ranking, layout), considered,
                         candidates)
    if int(options.get("top", 1) or 1) > 1 or options.get("explain"):
        g = pl.params.query_buckets
        pl = plan(layout.capacity, record_size,
                  **{**_per_bucket(options, layout), **({"query_buckets": g} if g > 1 else {})})
    return BatchPlan(pl, layout, batch_figures(pl.to_json(), layout, k), considered)


def _best_layout(planned: list[Plan | SpiralpirError], layouts: list[BucketLayout],
                 considered: list[dict[str, Any]], records: int, k: int
                 ) -> tuple[float, Plan, BucketLayout]:
    """The cheapest w's (score, plan, layout); every w's figures go to `considered`. A w with
    no parameters (under the caps) is left out with its reason; if every w is, the error
    gives every w's."""
    best: tuple[float, Plan, BucketLayout] | None = None
    failed: list[tuple[int, int, SpiralpirError]] = []
    for layout, pl in zip(layouts, planned, strict=True):
        w, buckets = layout.w, layout.buckets
        if isinstance(pl, SpiralpirError):
            failed.append((w, buckets, pl))
            considered.append({"w": w, "buckets": buckets, "capacity": layout.capacity,
                               "infeasible": str(pl)})
            continue
        doc = pl.to_json()
        score = _score(doc, buckets)
        considered.append({"w": w, "buckets": buckets, "capacity": layout.capacity,
                           "batch_server_seconds": buckets * doc["estimate"]["server_seconds"],
                           "score": score})
        if best is None or score < best[0]:
            best = (score, pl, layout)
    if best is None:
        if failed:
            raise NoFeasibleBatch(records, k, failed)
        raise InvalidOption("batch", f"no bucket layout fits {records} records")
    return best


def _packed(base: Plan, layout: BucketLayout, record_size: int, options: dict[str, Any],
            considered: list[dict[str, Any]], candidates: Workers[Plan]) -> Plan:
    """The plan whose queries pack the most buckets G (a power of two ≤ B) while the batch's
    estimated server seconds stay within PACKED_CPU_SLACK of unpacked queries': packing
    divides the request's query count by G, costs at most a little CPU (the expansion tree
    has as many nodes whether it is one or G trees, plus the keys of log2 G more rounds and
    possibly longer expansion gadgets for their noise) and grows the one-time public
    parameters. Every candidate is a full plan of the packed shape, noise included."""
    best = base
    limit = PACKED_CPU_SLACK * base.estimate["server_seconds"]
    sizes = [1 << e for e in range(1, layout.buckets.bit_length())]  # powers of two 2 .. B
    for start in range(0, len(sizes), candidates.workers):  # a G per worker, until one fails
        gs = sizes[start:start + candidates.workers]
        planned = candidates.run([(layout.capacity, record_size, {**options, "query_buckets": g})
                                  for g in gs])
        for g, pl in zip(gs, planned, strict=True):
            if isinstance(pl, SpiralpirError):
                return best  # no parameters hold G buckets' indices (or their noise): nor more
            secs = float(pl.estimate["server_seconds"])
            considered.append({"w": layout.w, "buckets": layout.buckets, "query_buckets": g,
                               "batch_server_seconds": layout.buckets * secs,
                               "batch_query_bytes": -(-layout.buckets // g)
                               * int(pl.estimate["query_bytes"])})
            if secs <= limit:
                best = pl
    return best
