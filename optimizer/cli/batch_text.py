"""A batch plan as readable text: the layout, its failure bound, the per-batch and per-record
figures, then the bucket database's plan (plan_text.render)."""

from __future__ import annotations

from spiralpir.optimizer.cli.plan_text import render
from spiralpir.optimizer.plan.batch_plan import BatchPlan

SMALL_BATCH = 16  # below this the per-index overhead (B/k, w) is noted


def render_batch(bp: BatchPlan) -> str:
    f = bp.figures
    k, b, w = f["k"], f["buckets"], f["w"]
    lines = [
        f"batch plan: up to {k} distinct records per request from {f['records']:,} records",
        f"  layout      every record in w = {w} of B = {b} buckets (public seed {f['seed']}), "
        f"{f['capacity']:,} records per bucket, {f['stored_records']:,} stored in all "
        f"({f['preprocessed_bytes'] / 1e9:.2f} GB preprocessed; --max-copies bounds w, "
        "--max-db-bytes the bytes)",
        ("  placement   cannot fail (no more indices than copies of each record)"
         if f["log2_failure_bound"] is None else
         f"  placement   fails with probability <= 2^{f['log2_failure_bound']:.1f} per batch "
         "(union bound over Hall violators; target 2^-40)"),
        f"  buckets     {f['buckets_per_index']:.2f} per requested record, {w} copies of each"
        + (" (small batches need relatively more buckets or copies to reach the bound: the "
           "union bound's few-index terms do not shrink with k)" if 1 < k < SMALL_BATCH else ""),
        f"  queries     G = {f.get('query_buckets', 1)} buckets per query ct: "
        f"{f.get('batch_queries', b)} query cts per batch, each expanded once and sliced per "
        "bucket (the most G whose batch CPU stays within 5% of G = 1's)",
        f"  per batch   query {f['batch_query_bytes'] / 1e3:.1f} KB, responses "
        f"{f['batch_response_bytes'] / 1e3:.1f} KB, server {f['batch_server_seconds']:.3f} s "
        "(1 core, each bucket a query of the bucket database)",
        f"  per record  {f['per_record_bytes'] / 1e3:.1f} KB, "
        f"{f['per_record_server_seconds'] * 1e3:.1f} ms",
        "  considered  " + ", ".join(_considered(c) for c in bp.considered),
        "",
        "bucket database (one parameter set and one set of public parameters for all buckets)",
    ]
    return "\n".join(lines) + "\n" + render(bp.plan)


def _considered(c: dict[str, object]) -> str:
    text = f"w={c['w']}: B={c['buckets']}"
    if "infeasible" in c:
        return text + ", no parameters under the caps"
    if "query_buckets" in c:
        text += f", G={c['query_buckets']}"
    return text + f", {c['batch_server_seconds']:.3f} s"
