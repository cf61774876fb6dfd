"""Planning API: choose SPIRAL parameters for a database shape, and say why.

The `spiralpir plan` command (cli/cmd_plan.py, which also renders a Plan as text) and
`generate`/`demo` call these functions:
  * `plan(records, record_size, **options) -> Plan`
    options: variant ('spiral'|'stream'|'pack'|'stream_pack'|'auto': the cheapest variant),
    objective ('dollars'|'time'|'response'|'traffic'|'stream': the per-database seconds of a
    query prepared once and answered against a sequence of databases, every variant; see
    plan/space.py), blocks (objective stream: databases per prepared query, amortising the one-time
    part; default unbounded),
    min_security (bits, 128), max_query_bytes, max_params_bytes, max_response_bytes,
    max_db_ratio (preprocessed database bytes per record byte), max_db_bytes (preprocessed
    database bytes: the memory it is served from; the CLI's default is this machine's,
    models/host_memory.py), correctness_log2 (-40), top
    (alternatives, 1), profile (path or Profile), cpu_price ($/CPU-hour), egress_price
    ($/GB), ring ('auto'|'paper'), noise_width (6.4),
    secret ('gaussian'|'ternary'|'sparse-ternary:P,M'), poly_lens, explain (find the binding
    constraints by re-planning with each one relaxed; default False in the API).
  * `plan_json(records, record_size, **options) -> {"params": {...}, "estimate": {...}}`
  * `estimate(params, profile=None, prices=None) -> dict` for any validated Parameters: sizes,
    whole-answer seconds and throughput, and the streaming split (one_time_seconds: parse,
    expansion, conversion; per_database_seconds: first dimension, folding, packing, modulus
    switching; streaming_throughput_bytes_per_second = records·record_size / per-database
    seconds; preprocessed_db_bytes, what the first dimension streams per database).
Failures are typed (plan/errors.py): an option's API name, or what left no parameters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from spiralpir.estimator.levels import bits_text
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.cost import Prices, Profile, split_seconds, stage_seconds
from spiralpir.optimizer.models.noise import stage_variances
from spiralpir.optimizer.models.security import estimator_security, reported_security
from spiralpir.optimizer.params.paper import PAPER_RING
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.params.sizes import Sizes
from spiralpir.optimizer.params.variants import ALIASES, VARIANTS
from spiralpir.optimizer.plan.errors import (
    Infeasibility,
    InvalidOption,
    NoFeasibleParameters,
    NoFeasibleVariant,
)
from spiralpir.optimizer.plan.evaluate import Row, objective_value
from spiralpir.optimizer.plan.search import search
from spiralpir.optimizer.plan.space import Options

ESTIMATE_KEYS = (
    "public_params_bytes", "query_bytes", "response_bytes", "server_seconds",
    "throughput_bytes_per_second", "rate", "log2_failure_probability", "security_bits",
    "dollars_per_query", "one_time_seconds", "per_database_seconds",
    "streaming_throughput_bytes_per_second", "preprocessed_db_bytes",
)

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
    # the search filtered on the table's conservative level; report the full estimate, the
    # level `spiralpir security` prints for this ring
    sec = reported_security(params.poly_len, math.prod(params.moduli), params.noise_width,
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
    variant = ALIASES.get(variant, variant)
    if variant not in VARIANTS:
        raise InvalidOption("variant", f"must be spiral, stream, pack, stream_pack or auto, "
                                       f"got {variant!r}")
    profile = opts.pop("profile", None)
    if profile is not None and not isinstance(profile, Profile):
        profile = Profile.load(profile)
    cpu, egress = opts.pop("cpu_price", None), opts.pop("egress_price", None)
    for name, price in (("cpu_price", cpu), ("egress_price", egress)):
        if price is not None and not float(price) >= 0:  # a price of 0 is a price
            raise InvalidOption(name, f"must be a price >= 0, got {price!r}")
    prices = Prices(
        cpu_dollars_per_hour=Prices().cpu_dollars_per_hour if cpu is None else float(cpu),
        egress_dollars_per_gb=Prices().egress_dollars_per_gb if egress is None else float(egress),
    )
    kw: dict[str, Any] = {"variant": variant, "prices": prices, "profile": profile}
    for key in ("objective", "blocks", "min_security", "max_query_bytes", "max_params_bytes",
                "max_response_bytes", "max_db_ratio", "max_db_bytes", "correctness_log2",
                "noise_width", "poly_lens", "n_max", "security", "query_buckets"):
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
        shown = bits_text(reported_security(2048, q, width, "gaussian"))
        if sec >= need:
            kw.update(poly_lens=(2048,), moduli=(tuple(PAPER_RING["moduli"]),),
                      noise_width=width, secret_distribution="gaussian")
            notes.append(f"using the SPIRAL paper's ring (d=2048, q≈2^55.9, width 6.4): "
                         f"{shown} bits >= {need:g}")
        else:
            notes.append(f"the SPIRAL paper's ring (d=2048, q≈2^55.9, width 6.4, Gaussian "
                         f"secret) is only {shown} bits secure (< {need:g}): not used; "
                         f"planned with secure rings instead (pass --min-security "
                         f"{math.floor(sec)} to accept it)")
    elif ring != "auto":
        raise InvalidOption("ring", f"must be 'auto' or 'paper', got {ring!r}")
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
            except NoFeasibleParameters:
                failed.append(v)
        if not plans:
            raise NoFeasibleVariant(failed)
        plans.sort(key=_objective_of)
        best = plans[0]
        summary = ", ".join(f"{p.params.variant} {_objective_of(p):.4g}" for p in plans)
        best.notes.append(f"variant auto: chose {best.params.variant} (objective {best.objective}: "
                          f"{summary}" + (f"; infeasible: {', '.join(failed)}" if failed else "")
                          + ")")
        return best
    records, record_size = int(records), int(record_size)
    for name, value in (("records", records), ("record_size", record_size)):
        if value < 1:
            raise InvalidOption(name, f"must be at least 1, got {value}")
    top = int(options.get("top", 1) or 1)
    explain = bool(options.get("explain", False))
    opts, notes = _options(records, record_size, dict(options))
    res = search(records, record_size, opts, top=top)
    if not res.chosen:
        raise NoFeasibleParameters(_infeasibility(records, record_size, opts))
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
    if math.isfinite(opts.max_db_ratio):
        trials.append((f"preprocessed database <= {opts.max_db_ratio:g} bytes per record byte",
                       replace(opts, max_db_ratio=math.inf)))
    if math.isfinite(opts.max_db_bytes):
        trials.append((f"preprocessed database <= {opts.max_db_bytes / 1e9:.3g} GB",
                       replace(opts, max_db_bytes=math.inf)))
    for name, relaxed in trials:
        r = search(records, record_size, relaxed, top=1)
        if r.chosen and r.chosen[0].objective < best * (1 - 1e-9):
            gain = 100.0 * (1 - r.chosen[0].objective / best)
            out.append(f"{name} (relaxing it saves {gain:.1f}%)")
    return out


def _infeasibility(records: int, record_size: int, opts: Options) -> Infeasibility:
    caps = {attr: getattr(opts, attr)
            for attr in ("max_query_bytes", "max_params_bytes", "max_response_bytes",
                         "max_db_ratio", "max_db_bytes")
            if math.isfinite(getattr(opts, attr))}
    return Infeasibility(records, record_size, opts.min_security, opts.correctness_log2, caps)


def plan_json(records: int, record_size: int, **options: Any) -> dict[str, Any]:
    """`spiralpir plan --json` as a dict: {"params": {...}, "estimate": {...}}."""
    return plan(records, record_size, **options).to_json()
