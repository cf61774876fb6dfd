"""Print what the planner chooses for 32-byte records (2^10 … 2^24) and the paper shapes.

    python tests/plan/density_table.py [--objective dollars] [--variant V] [--poly-len D]
        [--max-db-ratio R] [--json OUT] [--compare IN]

Per shape: the plan's variant, ring (d, CRT primes), n, log2 p, ν1/ν2, the preprocessed
database bytes per record byte (B/B), query and response bytes, the predicted failure
probability and server milliseconds; then "max p" and its B/B: the largest log2 p the noise
model allows on the plan's ring, n and ν1 with the finest gadgets (`noise_frontier`).
--json stores the rows; --compare IN prints IN's log2 p, density and sizes before the new
ones (before→after). A report (planning only, seconds per shape), not a test.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.noise import CORRECTNESS_LOG2, log2_failure
from spiralpir.optimizer.params.parameters import MAX_LOG2_P, Parameters, ceil_log2, layout
from spiralpir.optimizer.params.sizes import preprocessed_db_bytes
from spiralpir.optimizer.plan.errors import NoFeasibleParameters
from spiralpir.optimizer.plan.planner import plan

SHAPES: list[tuple[int, int]] = [
    *[(1 << k, 32) for k in range(10, 25, 2)],
    (1 << 20, 256), (1 << 18, 30000), (1 << 14, 100000),
]


def _name(records: int, size: int) -> str:
    return f"2^{records.bit_length() - 1} x {size} B"


def _at_p(params: Parameters, log2_p: int, t_gsw: int, q2_bits: int) -> Parameters:
    """params with plaintext modulus 2^log2_p, the layout and hypercube refitted (ν1 kept,
    ν2 the fewest that hold every record), the finest expansion and conversion gadgets."""
    lit = params.to_literal()
    for k in ("instances", "db_item_size"):
        lit.pop(k, None)
    inst, per_pt, _ = layout(params.record_size, params.n, 1 << log2_p, params.poly_len)
    pts = -(-params.records // per_pt)
    nu_2 = max(0, ceil_log2(pts) - params.nu_1)
    return Parameters.from_literal({
        **lit, "p": 1 << log2_p, "t_gsw": t_gsw, "q2_bits": q2_bits, "nu_2": nu_2,
        **{k: params.q_bits for k in ("t_exp_left", "t_exp_right", "t_conv")}})


def noise_frontier(params: Parameters) -> Parameters:
    """The parameters with the largest p the noise model allows (failure <= 2^-40) on the
    plan's ring, n and ν1, with the finest expansion and conversion gadgets (1-bit digits: the
    least noise, the most key-switching work and public parameters), q2 as wide as allowed, any
    t_gsw (a finer one adds expansion rounds, so it is searched) and the layout refitted."""
    best = params
    for log2_p in range(params.log2_p, MAX_LOG2_P + 1):
        found = None
        for t_gsw in range(1, params.q_bits + 1):
            for q2_bits in range(48, 13, -1):
                try:
                    cand = _at_p(params, log2_p, t_gsw, q2_bits)
                except SpiralpirError:
                    continue
                if log2_failure(cand) <= CORRECTNESS_LOG2:
                    found = cand
                break  # the widest valid q2 decides
            if found:
                break
        if found is None:
            break
        best = found
    return best


def row(records: int, size: int, objective: str, poly_len: int | None, variant: str,
        max_db_ratio: float | None = None) -> dict[str, Any]:
    pl = plan(records, size, objective=objective, variant=variant,
              poly_lens=(poly_len,) if poly_len else None, max_db_ratio=max_db_ratio)
    p, e = pl.params, pl.estimate
    return {
        "shape": _name(records, size), "variant": p.variant, "d": p.poly_len,
        "primes": len(p.moduli), "n": p.n, "log2_p": p.log2_p, "nu_1": p.nu_1, "nu_2": p.nu_2,
        "density": e["preprocessed_db_bytes"] / (records * size),
        "query_bytes": e["query_bytes"], "response_bytes": e["response_bytes"],
        "log2_failure": e["log2_failure_probability"], "server_ms": 1e3 * e["server_seconds"],
        **_frontier(p),
    }


def _frontier(params: Parameters) -> dict[str, Any]:
    f = noise_frontier(params)
    return {"frontier_log2_p": f.log2_p, "frontier_density": preprocessed_db_bytes(f) / (
        params.records * params.record_size)}


def _line(r: dict[str, Any], b: dict[str, Any] | None) -> str:
    def pair(key: str, fmt: str) -> str:
        return (format(b[key], fmt) + "→" if b else "") + format(r[key], fmt)

    nu = f"{r['nu_1']}/{r['nu_2']}"
    return (f"{r['shape']:<16} {r['variant']:<11} {r['d']:>5} {r['primes']:>2} {r['n']:>2} "
            f"{pair('log2_p', 'd'):>7} {nu:>5} {pair('density', '.2f'):>12} "
            f"{pair('query_bytes', 'd'):>17} {pair('response_bytes', 'd'):>13} "
            f"{r['log2_failure']:>6.1f} {r['server_ms']:>7.1f} {r['frontier_log2_p']:>6} "
            f"{r['frontier_density']:>6.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objective", default="dollars")
    ap.add_argument("--variant", default="spiral")
    ap.add_argument("--poly-len", type=int, help="only this ring degree (default: any)")
    ap.add_argument("--max-db-ratio", type=float, help="the planner's density cap")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--compare", type=Path)
    a = ap.parse_args()
    before = {r["shape"]: r for r in json.loads(a.compare.read_text())} if a.compare else {}
    print(f"{'shape':<16} {'variant':<11} {'d':>5} {'pr':>2} {'n':>2} {'log2 p':>7} {'nu':>5} "
          f"{'B/B':>12} {'query':>17} {'response':>13} {'fail':>6} {'ms':>7} {'max p':>6} "
          f"{'B/B':>6}")
    rows = []
    for records, size in SHAPES:
        try:
            r = row(records, size, a.objective, a.poly_len, a.variant, a.max_db_ratio)
        except NoFeasibleParameters as e:
            print(f"{_name(records, size):<16} {e}")
            continue
        rows.append(r)
        print(_line(r, before.get(r["shape"])), flush=True)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
