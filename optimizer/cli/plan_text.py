"""A Plan as readable text: parameters, estimate, binding constraints, next-best alternatives
and notes (what `spiralpir plan` prints without --json)."""

from __future__ import annotations

from spiralpir.estimator.levels import bits_text
from spiralpir.optimizer.plan.planner import Plan


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
        f"{p.items_per_pt} record(s)/plaintext, {p.instances} instance(s)"
        + (f", {p.rows_stored} of {1 << p.nu_1} rows stored" if p.rows_stored < 1 << p.nu_1
           else ""),
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
        f"  security {bits_text(e['security_bits'])} bits, failure probability "
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
