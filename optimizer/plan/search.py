"""Parameter search: branch-and-bound over the model's tables, Z3 for the final choice.

Owns `search(records, record_size, options, top)`. Steps:

1. Python builds the model's tables (plan/space.py, plan/evaluate.py): the secure rings,
   and per ring the structures (n, p, ν1, ν2, layout). Each structure gets cheap, valid lower bounds
   — on noise (every gadget-dependent term at its minimum) and on the objective (every stage's time
   with each gadget length at its smallest, split into the one-time and per-database parts for the
   `stream` objective; the response with the smallest admissible q2) — and structures are visited in
   lower-bound order. A structure is evaluated exactly over its whole gadget table (vectorized:
   t_gsw × t_conv × t_exp_left × t_exp_right, q2_bits the smallest correct one) only while its bound
   can still beat the K-th best candidate found so far; the rest are provably worse
   (plan/bounds.py).
2. Z3 (`z3.Optimize`) then chooses the plan among the surviving tables: integer variables for
   poly_len, the modulus, n, log2 p, ν1, ν2, the four gadget lengths, q2_bits and instances,
   each tied to a table row; constraints for security, correctness (the row's log2 failure),
   the user's caps, and the objective (as its integer rank among the rows) to minimize. The next
   best alternatives are found by blocking each chosen structure and solving again.

The oracle (plan/oracle.py) evaluates the same model without pruning; tests check that
both find the same optimum.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import z3
from spiralpir.optimizer.params.parameters import MAX_LOG2_P
from spiralpir.optimizer.plan.bounds import lower_bounds
from spiralpir.optimizer.plan.errors import InvalidOption
from spiralpir.optimizer.plan.evaluate import Row, best_rows, evaluate
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
        list[Row], int, int]:
    """Branch-and-bound over structures; the best rows of every structure that can matter."""
    profile = default_profile(options)
    keep = max(top, 1)
    pending: list[tuple[float, int, Structure]] = []
    total = 0
    for ring in rings(options):
        for s in structures(records, record_size, ring, options):
            total += 1
            lb, possible = lower_bounds(s, options, profile)
            if possible and math.isfinite(lb):
                pending.append((lb, len(pending), s))
    pending.sort(key=lambda x: (x[0], x[1]))
    rows: list[Row] = []
    best_structs: list[float] = []  # best objective of each evaluated structure (sorted)
    evaluated = 0
    for lb, _, s in pending:
        bound = best_structs[keep - 1] if len(best_structs) >= keep else math.inf
        if lb > bound:
            break
        evaluated += 1
        ev = evaluate(s, records, record_size, options, profile)
        mine = best_rows(s, ev, ROWS_PER_STRUCTURE, records, record_size, options)
        if not mine:
            continue
        rows.extend(mine)
        best_structs.append(mine[0].objective)
        best_structs.sort()
    return rows, total, evaluated


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
    # the objective enters as its rank among the rows' distinct values: order-exact, and a
    # small integer range keeps Z3's optimization loop short
    levels = sorted({r.objective for r in rows})
    rank = {x: i for i, x in enumerate(levels)}
    cost = term("objective_rank", [rank[r.objective] for r in rows])
    opt.add(sec >= int(math.ceil(options.min_security * 100)))
    if math.isfinite(options.max_params_bytes):
        opt.add(pp <= int(options.max_params_bytes))
    if math.isfinite(options.max_response_bytes):
        opt.add(resp <= int(options.max_response_bytes))
    if math.isfinite(options.max_query_bytes):
        opt.add(qry <= int(options.max_query_bytes))
    opt.add(v["nu_1"] >= 1, v["n"] >= 1, log2_p >= 1, log2_p <= MAX_LOG2_P)
    opt.minimize(cost)
    chosen: list[Row] = []
    for _ in range(max(top, 1)):
        if opt.check() != z3.sat:
            break
        m = opt.model()
        i = next(j for j, x in enumerate(b) if z3.is_true(m.eval(x, model_completion=True)))
        chosen.append(rows[i])
        lit = rows[i].literal
        opt.add(z3.Not(z3.And(
            v["poly_len"] == lit["poly_len"], modulus == mod_ids[tuple(lit["moduli"])],
            v["n"] == lit["n"], log2_p == int(lit["p"]).bit_length() - 1,
            v["nu_1"] == lit["nu_1"])))
    return chosen


def search(records: int, record_size: int, options: Options, top: int = 1) -> SearchResult:
    if records < 1:
        raise InvalidOption("records", f"must be >= 1, got {records}")
    if record_size < 1:
        raise InvalidOption("record_size", f"must be >= 1, got {record_size}")
    t0 = time.perf_counter()
    rows, total, evaluated = candidate_rows(records, record_size, options, top)
    # only rows that can be among the `top` best reach Z3 (each structure contributes
    # ROWS_PER_STRUCTURE rows; anything beyond the best MAX_Z3_ROWS is provably not chosen
    # unless Z3 rejects better rows, which the caps already applied in Python rule out)
    rows.sort(key=lambda r: r.objective)
    chosen = z3_choose(rows[:MAX_Z3_ROWS + top * ROWS_PER_STRUCTURE], options, top)
    return SearchResult(chosen, total, evaluated, len(rows), time.perf_counter() - t0)
