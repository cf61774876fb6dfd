"""Planning API: choose SPIRAL parameters for a database shape, and say why.

The `spiralpir plan` command (cmd_plan.py) and `generate`/`demo` call these functions:
  * `plan(records, record_size, **options) -> Plan`
    options: variant ('spiral'|'stream'|'pack'|'stream_pack'|'auto': the cheapest variant),
    objective ('dollars'|'time'|'response'|'traffic'|'stream': the per-database seconds of a
    query prepared once and answered against a sequence of databases, every variant; see
    model.py), blocks (objective stream: databases per prepared query, amortising the one-time
    part; default unbounded),
    min_security (bits, 128), max_query_bytes, max_params_bytes, max_response_bytes,
    correctness_log2 (-40), top (alternatives, 1), profile (path or Profile), cpu_price
    ($/CPU-hour), egress_price ($/GB), ring ('auto'|'paper'), noise_width (6.4),
    secret ('gaussian'|'ternary'|'sparse-ternary:P,M'), poly_lens, explain (find the binding
    constraints by re-planning with each one relaxed; default False in the API).
  * `plan_json(records, record_size, **options) -> {"params": {...}, "estimate": {...}}`
  * `estimate(params, profile=None, prices=None) -> dict` for any validated Parameters: sizes,
    whole-answer seconds and throughput, and the streaming split (one_time_seconds: parse,
    expansion, conversion; per_database_seconds: first dimension, folding, packing, modulus
    switching; streaming_throughput_bytes_per_second = records·record_size / per-database
    seconds; preprocessed_db_bytes, what the first dimension streams per database).
  * `parse_count("2^20" | "1M" | "100KB" | "1048576")`: K/M/G = 10^3/10^6/10^9, Ki/Mi/Gi =
    2^10/2^20/2^30, an optional trailing B, a^b powers.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any

from spiralpir.optimizer.cost import Prices, Profile, split_seconds, stage_seconds
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.model import Options, estimator_security, objective_value
from spiralpir.optimizer.noise import stage_variances
from spiralpir.optimizer.params import PAPER_RING, VARIANTS, Parameters
from spiralpir.optimizer.search import Row, search
from spiralpir.optimizer.sizes import Sizes

ESTIMATE_KEYS = (
    "public_params_bytes", "query_bytes", "response_bytes", "server_seconds",
    "throughput_bytes_per_second", "rate", "log2_failure_probability", "security_bits",
    "dollars_per_query", "one_time_seconds", "per_database_seconds",
    "streaming_throughput_bytes_per_second", "preprocessed_db_bytes",
)

_SUFFIX = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
           "KI": 2**10, "MI": 2**20, "GI": 2**30, "TI": 2**40}


def parse_count(text: str, what: str = "value") -> int:
    """'2^20', '1M', '100KB', '4KiB', '1048576' -> int (>= 1)."""
    s = str(text).strip().replace("_", "").replace(",", "")
    m = re.fullmatch(r"(\d+)\s*\^\s*(\d+)", s)
    if m:
        value = int(m.group(1)) ** int(m.group(2))
    else:
        m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KkMmGgTt][Ii]?)?\s*[Bb]?", s)
        if not m:
            raise SpiralpirError(f"{what}: cannot read {text!r} (examples: 1048576, 2^20, 1M, "
                                 "100KB, 4KiB)")
        mult = _SUFFIX[(m.group(2) or "").upper()]
        v = float(m.group(1)) * mult
        if v != int(v):
            raise SpiralpirError(f"{what}: {text!r} is not a whole number")
        value = int(v)
    if value < 1:
        raise SpiralpirError(f"{what}: must be at least 1, got {text!r}")
    return value


def estimate(params: Parameters, profile: Profile | None = None,
             prices: Prices | None = None) -> dict[str, Any]:
    """The plan estimate of any parameter set (exact formulas of sizes/noise/cost/security)."""
    prof = profile or Profile.load()
    pr = prices or Prices()
    sizes = Sizes.of(params)
    stages = stage_seconds(params, prof)
    secs = sum(stages.values())  # cost.server_seconds
    one_time, per_db = split_seconds(stages)
    db_bytes = params.records * params.record_size
    sec = estimator_security(params.poly_len, params.log2_q, params.noise_width,
                             params.secret_distribution)
    return {
        "public_params_bytes": sizes.public_params_bytes,
        "query_bytes": sizes.query_bytes,
        "response_bytes": sizes.response_bytes,
        "server_seconds": secs,
        "throughput_bytes_per_second": db_bytes / secs if secs > 0 else math.inf,
        "rate": params.record_size / sizes.response_bytes,
        "log2_failure_probability": stage_variances(params).log2_failure,
        "security_bits": sec,
        "dollars_per_query": pr.dollars(secs, sizes.response_bytes),
        "one_time_seconds": one_time,
        "per_database_seconds": per_db,
        "streaming_throughput_bytes_per_second": db_bytes / per_db if per_db > 0 else math.inf,
        "preprocessed_db_bytes": sizes.preprocessed_db_bytes,  # the file: header + words
    }


@dataclass
class Plan:
    params: Parameters
    estimate: dict[str, Any]
    alternatives: list[tuple[Parameters, dict[str, Any]]] = field(default_factory=list)
    binding: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    search_seconds: float = 0.0
    structures_considered: int = 0
    structures_evaluated: int = 0
    objective: str = "dollars"
    stage_seconds: dict[str, float] = field(default_factory=dict)
    options: Options | None = None  # what it was planned under

    def to_json(self) -> dict[str, Any]:
        return {"params": self.params.to_literal(), "estimate": dict(self.estimate)}


def _options(records: int, record_size: int, opts: dict[str, Any]) -> tuple[Options, list[str]]:
    notes: list[str] = []
    variant = opts.pop("variant", "spiral") or "spiral"
    variant = {"streampack": "stream_pack", "stream-pack": "stream_pack"}.get(variant, variant)
    if variant not in VARIANTS:
        raise SpiralpirError(f"--variant must be spiral, stream, pack, stream_pack or auto, "
                             f"got {variant!r}")
    profile = opts.pop("profile", None)
    if profile is not None and not isinstance(profile, Profile):
        profile = Profile.load(profile)
    prices = Prices(
        cpu_dollars_per_hour=float(opts.pop("cpu_price", None) or Prices().cpu_dollars_per_hour),
        egress_dollars_per_gb=float(opts.pop("egress_price", None)
                                    or Prices().egress_dollars_per_gb),
    )
    kw: dict[str, Any] = {"variant": variant, "prices": prices, "profile": profile}
    for key in ("objective", "blocks", "min_security", "max_query_bytes", "max_params_bytes",
                "max_response_bytes", "correctness_log2", "noise_width", "poly_lens", "n_max",
                "security"):
        if opts.get(key) is not None:
            kw[key] = opts.pop(key)
        else:
            opts.pop(key, None)
    secret = opts.pop("secret", None)
    if secret:
        kw["secret_distribution"] = secret
    ring = opts.pop("ring", "auto") or "auto"
    if ring == "paper":
        width = float(PAPER_RING["noise_width"])
        q = 268369921 * 249561089
        sec = (kw.get("security") or estimator_security)(2048, math.log2(q), width, "gaussian")
        need = float(kw.get("min_security", 128.0))
        if sec >= need:
            kw.update(poly_lens=(2048,), moduli=(tuple(PAPER_RING["moduli"]),),
                      noise_width=width, secret_distribution="gaussian")
            notes.append(f"using the SPIRAL paper's ring (d=2048, q≈2^55.9, width 6.4): "
                         f"{sec:.1f} bits >= {need:g}")
        else:
            notes.append(f"the SPIRAL paper's ring (d=2048, q≈2^55.9, width 6.4, Gaussian "
                         f"secret) is only {sec:.1f} bits secure (< {need:g}): not used; "
                         f"planned with secure rings instead (pass --min-security "
                         f"{math.floor(sec)} to accept it)")
    elif ring != "auto":
        raise SpiralpirError(f"--ring must be 'auto' or 'paper', got {ring!r}")
    for key in ("top", "explain"):
        opts.pop(key, None)
    if opts:
        raise SpiralpirError(f"unknown plan option(s): {', '.join(sorted(opts))}")
    return Options(**kw), notes


def _literal_params(row: Row) -> Parameters:
    return Parameters.from_literal(dict(row.literal))


def _objective_of(pl: Plan) -> float:
    e = pl.estimate
    opts = pl.options or Options(objective=pl.objective)
    return float(objective_value(opts, e["one_time_seconds"], e["per_database_seconds"],
                                 e["response_bytes"], e["query_bytes"]))


def plan(records: int, record_size: int, **options: Any) -> Plan:
    """Plan parameters for `records` records of `record_size` bytes (see module docstring).
    variant 'auto' plans every variant and keeps the cheapest one under the caps."""
    if (options.get("variant") or "spiral") == "auto":
        plans: list[Plan] = []
        failed: list[str] = []
        for v in VARIANTS:
            try:
                plans.append(plan(records, record_size, **{**options, "variant": v}))
            except SpiralpirError as exc:
                if str(exc).startswith("no SPIRAL parameters"):
                    failed.append(v)
                else:
                    raise
        if not plans:
            raise SpiralpirError(f"variant auto: no variant has feasible parameters "
                                 f"({', '.join(failed)}); relax a cap or --min-security")
        plans.sort(key=_objective_of)
        best = plans[0]
        summary = ", ".join(f"{p.params.variant} {_objective_of(p):.4g}" for p in plans)
        best.notes.append(f"variant auto: chose {best.params.variant} (objective {best.objective}: "
                          f"{summary}" + (f"; infeasible: {', '.join(failed)}" if failed else "")
                          + ")")
        return best
    records = parse_count(records, "--records") if isinstance(records, str) else int(records)
    record_size = (parse_count(record_size, "--record-size") if isinstance(record_size, str)
                   else int(record_size))
    if records < 1 or record_size < 1:
        raise SpiralpirError("--records and --record-size must be at least 1")
    top = int(options.get("top", 1) or 1)
    explain = bool(options.get("explain", False))
    opts, notes = _options(records, record_size, dict(options))
    res = search(records, record_size, opts, top=top)
    if not res.chosen:
        raise SpiralpirError(_infeasible_message(records, record_size, opts))
    prof = opts.profile or Profile.load()
    best = _literal_params(res.chosen[0])
    est = estimate(best, prof, opts.prices)
    alts = []
    for row in res.chosen[1:]:
        p = _literal_params(row)
        alts.append((p, estimate(p, prof, opts.prices)))
    out = Plan(
        params=best, estimate=est, alternatives=alts, notes=notes,
        search_seconds=res.seconds, structures_considered=res.considered_structures,
        structures_evaluated=res.evaluated_structures, objective=opts.objective,
        stage_seconds=stage_seconds(best, prof), options=opts,
    )
    if explain:
        out.binding = binding_constraints(records, record_size, opts, res.chosen[0].objective)
    return out


def binding_constraints(records: int, record_size: int, opts: Options,
                        best: float) -> list[str]:
    """Constraints whose relaxation would improve the objective (re-plans with each relaxed)."""
    out: list[str] = []
    trials: list[tuple[str, Options]] = [
        (f"security >= {opts.min_security:g} bits",
         replace(opts, min_security=opts.min_security - 8)),
        (f"correctness: failure <= 2^{opts.correctness_log2:g}",
         replace(opts, correctness_log2=opts.correctness_log2 + 20)),
    ]
    for name, attr in (("query", "max_query_bytes"), ("public params", "max_params_bytes"),
                       ("response", "max_response_bytes")):
        cap = getattr(opts, attr)
        if math.isfinite(cap):
            trials.append((f"{name} <= {int(cap)} bytes", replace(opts, **{attr: math.inf})))
    for name, relaxed in trials:
        r = search(records, record_size, relaxed, top=1)
        if r.chosen and r.chosen[0].objective < best * (1 - 1e-9):
            gain = 100.0 * (1 - r.chosen[0].objective / best)
            out.append(f"{name} (relaxing it saves {gain:.1f}%)")
    return out


def _infeasible_message(records: int, record_size: int, opts: Options) -> str:
    caps = []
    for name, attr in (("--max-query-bytes", "max_query_bytes"),
                       ("--max-params-bytes", "max_params_bytes"),
                       ("--max-response-bytes", "max_response_bytes")):
        v = getattr(opts, attr)
        if math.isfinite(v):
            caps.append(f"{name} {int(v)}")
    extra = f" under {', '.join(caps)}" if caps else ""
    return (f"no SPIRAL parameters for {records} records of {record_size} bytes at "
            f">= {opts.min_security:g}-bit security and failure <= 2^{opts.correctness_log2:g}"
            f"{extra}; relax a cap or --min-security")


def plan_json(records: int, record_size: int, **options: Any) -> dict[str, Any]:
    """`spiralpir plan --json` as a dict: {"params": {...}, "estimate": {...}}."""
    return plan(records, record_size, **options).to_json()


# ------------------------------------------------------------------------------ rendering


def _fmt_bytes(n: float) -> str:
    for unit, k in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= k:
            return f"{n / k:.1f} {unit}"
    return f"{int(n)} B"


def _fmt_secs(s: float) -> str:
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def render(pl: Plan) -> str:
    p, e = pl.params, pl.estimate
    lines = [
        f"plan for {p.records} records × {p.record_size} B "
        f"({_fmt_bytes(p.records * p.record_size)}), variant {p.variant}, "
        f"objective {pl.objective}",
        "",
        "parameters",
        f"  ring        d = {p.poly_len}, q = {' · '.join(map(str, p.moduli))} "
        f"(2^{p.log2_q:.1f}), width {p.noise_width:g}, {p.secret_distribution} secret",
        f"  plaintext   n = {p.n}, p = 2^{p.log2_p}, q1 = 4p, q2 = {p.q2} (2^{p.q2_bits})",
        f"  database    2^{p.nu_1} × 2^{p.nu_2} hypercube (nu_1 = {p.nu_1}, nu_2 = {p.nu_2}), "
        f"{p.items_per_pt} record(s)/plaintext, {p.instances} instance(s)",
        f"  gadgets     t_gsw {p.t_gsw}, t_conv {p.t_conv}, t_exp_left {p.t_exp_left}, "
        f"t_exp_right {p.t_exp_right}",
        "",
        "estimate",
        f"  query {_fmt_bytes(e['query_bytes'])}, response {_fmt_bytes(e['response_bytes'])} "
        f"(rate {e['rate']:.3f}), public params {_fmt_bytes(e['public_params_bytes'])}",
        f"  server time {_fmt_secs(e['server_seconds'])} (1 core), throughput "
        f"{_fmt_bytes(e['throughput_bytes_per_second'])}/s, ${e['dollars_per_query']:.3g}/query",
        f"  streaming   one-time {_fmt_secs(e['one_time_seconds'])} per query, then "
        f"{_fmt_secs(e['per_database_seconds'])} per database "
        f"({_fmt_bytes(e['streaming_throughput_bytes_per_second'])}/s; preprocessed database "
        f"{_fmt_bytes(e['preprocessed_db_bytes'])})",
        f"  security {e['security_bits']:.1f} bits, failure probability "
        f"2^{e['log2_failure_probability']:.1f}",
        "  time by stage: " + ", ".join(f"{k} {_fmt_secs(v)}" for k, v in
                                        pl.stage_seconds.items()),
    ]
    if pl.binding:
        lines += ["", "binding constraints"] + [f"  {b}" for b in pl.binding]
    elif pl.binding == [] and pl.notes is not None:
        pass
    if pl.alternatives:
        lines += ["", "next-best alternatives",
                  "  d     log2q  n  p      nu1/nu2  t_gsw/conv/L/R  q2b  resp       query      "
                  "params     time       per-db     $/query"]
        for ap, ae in pl.alternatives:
            lines.append(
                f"  {ap.poly_len:<5} {ap.log2_q:5.1f}  {ap.n}  2^{ap.log2_p:<4} "
                f"{ap.nu_1:>3}/{ap.nu_2:<4} {ap.t_gsw:>2}/{ap.t_conv}/{ap.t_exp_left}/"
                f"{ap.t_exp_right:<6} {ap.q2_bits:<4} {_fmt_bytes(ae['response_bytes']):<10} "
                f"{_fmt_bytes(ae['query_bytes']):<10} {_fmt_bytes(ae['public_params_bytes']):<10} "
                f"{_fmt_secs(ae['server_seconds']):<10} "
                f"{_fmt_secs(ae['per_database_seconds']):<10} {ae['dollars_per_query']:.3g}")
    if pl.notes:
        lines += ["", "notes"] + [f"  {n}" for n in pl.notes]
    lines += ["", f"searched {pl.structures_considered} structures "
              f"({pl.structures_evaluated} evaluated in full) in {pl.search_seconds:.2f} s"]
    return "\n".join(lines)
