"""Parameter search: branch-and-bound over the model's tables, Z3 for the final choice.

Owns `search(records, record_size, options, top)`. Steps:

1. Python builds the model's tables (plan/space.py, plan/evaluate.py): the secure rings,
   and per ring the structures (n, p, ν1, ν2, layout). A structure with the same ring, n, ν1,
   ν2, instances and stored rows as one with a smaller p is dropped: its server time is the
   same gadget for gadget, and its noise, q2 and response are no smaller (all grow with p), so
   it never ranks better. (A larger p that stores fewer rows is a shape of its own.) Each
   structure gets cheap, valid lower bounds
   — on noise (every gadget-dependent term at its minimum) and on the objective (every stage's time
   with each gadget length at its smallest, split into the one-time and per-database parts for the
   `stream` objective; the response with the smallest admissible q2) — and structures are visited in
   lower-bound order.
   a. The optimum: a structure is evaluated exactly over its whole gadget table (vectorized:
      t_gsw × t_conv × t_exp_left × t_exp_right, q2_bits the smallest correct one) only while
      its bound can still beat the K-th best structure found so far; the rest are provably
      worse (plan/bounds.py).
   b. The band (plan/ranking.py): every structure whose objective bound lies within the band
      of the optimum (of the K-th best, for the alternatives) is visited in order of its
      server-time lower bound (when the tie key starts with seconds) and evaluated until that
      bound exceeds the K-th fastest plan found in the optimum's band; each keeps its best row
      by the objective and its best rows in the band by the tie key.
2. Z3 (`z3.Optimize`) then chooses the plan among the surviving tables: integer variables for
   poly_len, the modulus, n, log2 p, ν1, ν2, the four gadget lengths, q2_bits and instances,
   each tied to a table row; constraints for security, correctness (the row's log2 failure),
   the user's caps; it minimizes the objective (as its integer rank among the rows), then,
   constrained to that optimum's band, the tie key (its rank). The next best alternatives are
   found by blocking each chosen structure and solving again (each with its own optimum's
   band).

Guarantee: the first plan is exactly the ranking's choice over the whole model (the pruning
in 1a and 1b only drops structures that provably cannot be it). The alternatives are the
ranking's choices among the rows kept (ROWS_PER_STRUCTURE per structure in the K-th band),
not over the whole model.

The oracle (plan/oracle.py) evaluates the same model without pruning; tests check that
both make the same choice.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass

import z3
from spiralpir.optimizer.params.parameters import MAX_LOG2_P
from spiralpir.optimizer.plan.bounds import lower_bounds, seconds_lower_bound
from spiralpir.optimizer.plan.errors import InvalidOption
from spiralpir.optimizer.plan.evaluate import Evaluation, Row, best_rows, evaluate
from spiralpir.optimizer.plan.ranking import band_limit, tie_columns, tie_key
from spiralpir.optimizer.plan.space import Options, Structure, default_profile, rings, structures

ROWS_PER_STRUCTURE = 2
MAX_Z3_ROWS = 48


@dataclass(frozen=True)
class SearchResult:
    chosen: list[Row]  # best first
    considered_structures: int
    evaluated_structures: int
    rows: int
    seconds: float


def candidate_rows(records: int, record_size: int, options: Options, top: int) -> tuple[
        list[Row], float, int, int]:
    """Branch-and-bound over structures: (rows that can matter, the objective's optimum,
    structures, structures evaluated). See the module docstring, steps 1a and 1b."""
    profile = default_profile(options)
    keep = max(top, 1)
    pending: list[tuple[float, int, Structure]] = []
    total = 0
    shapes: set[tuple[object, ...]] = set()
    for ring in rings(options):
        for s in structures(records, record_size, ring, options):  # p ascending per shape
            total += 1
            shape = (ring, s.n, s.nu_1, s.nu_2, s.instances, s.rows)
            if shape in shapes:
                continue  # dominated by the same shape with a smaller p (module docstring)
            lb, possible = lower_bounds(s, options, profile)
            if possible:
                shapes.add(shape)
            if possible and math.isfinite(lb):
                pending.append((lb, len(pending), s))
    pending.sort(key=lambda x: (x[0], x[1]))
    done: dict[int, Evaluation] = {}

    def ev_of(i: int, s: Structure) -> Evaluation:
        if i not in done:
            done[i] = evaluate(s, records, record_size, options, profile)
        return done[i]

    # 1a: the objective's optimum (and the keep-th best structure's, for the alternatives)
    best_structs: list[float] = []  # best objective of each evaluated structure (sorted)
    rows: list[Row] = []  # each evaluated structure's best row by the objective, then 1b's
    for lb, i, s in pending:
        if len(best_structs) >= keep and lb > best_structs[keep - 1]:
            break
        mine = best_rows(s, ev_of(i, s), 1, records, record_size, options)
        if mine:
            rows.extend(mine)
            best_structs.append(mine[0].objective)
            best_structs.sort()
    if not best_structs:
        return [], math.inf, total, len(done)
    optimum = best_structs[0]
    band1 = band_limit(options.objective, optimum)
    band_k = band_limit(options.objective, best_structs[min(keep, len(best_structs)) - 1])
    # 1b: every structure that can hold a plan in the band, by the tie key's bound
    by_seconds = tie_columns(options.objective, 1, 0, 0, 0)[0] == 1  # key led by seconds
    near = [(seconds_lower_bound(s, options, profile) if by_seconds else lb, i, s)
            for lb, i, s in pending if lb <= band_k]
    near.sort(key=lambda x: (x[0], x[1]))
    fastest: list[float] = []  # seconds of each structure's tie-best plan in the first band
    for tlb, i, s in near:
        if by_seconds and len(fastest) >= keep and tlb > fastest[keep - 1]:
            break
        ev = ev_of(i, s)
        rows.extend(best_rows(s, ev, 1, records, record_size, options))
        rows.extend(best_rows(s, ev, ROWS_PER_STRUCTURE, records, record_size, options,
                              limit=band_k))
        mine = best_rows(s, ev, 1, records, record_size, options, limit=band1)
        rows.extend(mine)
        if mine:
            fastest.append(mine[0].seconds)
            fastest.sort()
    return rows, optimum, total, len(done)


_INT_FIELDS = ("poly_len", "n", "nu_1", "nu_2", "q2_bits", "t_gsw", "t_conv", "t_exp_left",
               "t_exp_right", "instances")


def z3_choose(rows: list[Row], options: Options, top: int) -> list[Row]:
    """Z3 picks the best row (then the next best of other structures) under the constraints.

    Encoding: one Boolean per row, exactly one true (pseudo-Boolean); every parameter and
    metric is an integer term Σ If(b_i, value_i, 0); constraints on those terms; minimize the
    scaled objective.
    """
    if not rows:
        return []
    opt = z3.Optimize()
    b = [z3.Bool(f"row_{i}") for i in range(len(rows))]
    opt.add(z3.PbEq([(x, 1) for x in b], 1))

    def term(name: str, values: list[int]) -> z3.ArithRef:
        t = z3.Int(name)
        opt.add(t == z3.Sum([z3.If(x, v, 0) for x, v in zip(b, values, strict=True)]))
        return t

    lits = [r.literal for r in rows]
    v = {f: term(f, [int(lit[f]) for lit in lits]) for f in _INT_FIELDS}
    log2_p = term("log2_p", [int(lit["p"]).bit_length() - 1 for lit in lits])
    mod_ids: dict[tuple[int, ...], int] = {}
    modulus = term("modulus_id", [mod_ids.setdefault(tuple(lit["moduli"]), len(mod_ids))
                                  for lit in lits])
    pp = term("params_bytes", [r.params_bytes for r in rows])
    resp = term("response_bytes", [r.response_bytes for r in rows])
    qry = term("query_bytes", [r.query_bytes for r in rows])
    sec = term("security_centibits", [int(math.floor(r.security_bits * 100)) for r in rows])
    # the objective and the tie key enter as their ranks among the rows' distinct values:
    # order-exact, and a small integer range keeps Z3's optimization loop short
    levels = sorted({r.objective for r in rows})
    rank = {x: i for i, x in enumerate(levels)}
    cost = term("objective_rank", [rank[r.objective] for r in rows])
    ties = sorted({tie_key(options.objective, r) for r in rows})
    tie_rank = {x: i for i, x in enumerate(ties)}
    tie = term("tie_rank", [tie_rank[tie_key(options.objective, r)] for r in rows])
    opt.add(sec >= int(math.ceil(options.min_security * 100)))
    if math.isfinite(options.max_params_bytes):
        opt.add(pp <= int(options.max_params_bytes))
    if math.isfinite(options.max_response_bytes):
        opt.add(resp <= int(options.max_response_bytes))
    if math.isfinite(options.max_query_bytes):
        opt.add(qry <= int(options.max_query_bytes))
    opt.add(v["nu_1"] >= 1, v["n"] >= 1, log2_p >= 1, log2_p <= MAX_LOG2_P)
    chosen: list[Row] = []
    for _ in range(max(top, 1)):
        # the objective's optimum among the remaining rows, then the tie key within its band
        opt.push()
        opt.minimize(cost)
        if opt.check() != z3.sat:
            opt.pop()
            break
        best = levels[opt.model().eval(cost, model_completion=True).as_long()]
        opt.pop()
        opt.push()
        limit = band_limit(options.objective, best)
        opt.add(cost <= max(i for i, x in enumerate(levels) if x <= limit))
        opt.minimize(tie)
        if opt.check() != z3.sat:  # pragma: no cover - the optimum's own row is in its band
            opt.pop()
            break
        m = opt.model()
        i = next(j for j, x in enumerate(b) if z3.is_true(m.eval(x, model_completion=True)))
        opt.pop()
        chosen.append(rows[i])
        lit = rows[i].literal
        opt.add(z3.Not(z3.And(
            v["poly_len"] == lit["poly_len"], modulus == mod_ids[tuple(lit["moduli"])],
            v["n"] == lit["n"], log2_p == int(lit["p"]).bit_length() - 1,
            v["nu_1"] == lit["nu_1"])))
    return chosen


def _identity(row: Row) -> str:
    """One key per plan: structures add the same row from several steps."""
    return json.dumps(row.literal, sort_keys=True)


def search(records: int, record_size: int, options: Options, top: int = 1) -> SearchResult:
    if records < 1:
        raise InvalidOption("records", f"must be >= 1, got {records}")
    if record_size < 1:
        raise InvalidOption("record_size", f"must be >= 1, got {record_size}")
    t0 = time.perf_counter()
    rows, optimum, total, evaluated = candidate_rows(records, record_size, options, top)
    # only rows that can be among the `top` best reach Z3: the best by the objective (the
    # optimum's row first) and the best by the tie key in the first band, then in the band of
    # the alternatives; the caps are already applied in Python, so Z3 rejects none of them
    band1 = band_limit(options.objective, optimum)
    unique = list({_identity(r): r for r in rows}.values())
    by_obj = sorted(unique, key=lambda r: r.objective)
    by_tie = sorted(unique, key=lambda r: tie_key(options.objective, r))
    picked = by_obj[:top * ROWS_PER_STRUCTURE + 1] + \
        [r for r in by_tie if r.objective <= band1][:MAX_Z3_ROWS // 2] + by_tie[:MAX_Z3_ROWS // 2]
    chosen = z3_choose(list({_identity(r): r for r in picked}.values()), options, top)
    return SearchResult(chosen, total, evaluated, len(rows), time.perf_counter() - t0)
