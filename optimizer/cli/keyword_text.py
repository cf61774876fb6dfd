"""A keyword plan as readable text: the table, the lookup's cost beside an index lookup of
the same values, then the table database's plan (plan_text.render)."""

from __future__ import annotations

from spiralpir.optimizer.cli.plan_text import render
from spiralpir.optimizer.plan.keyword_plan import KeywordPlan


def render_keyword(kp: KeywordPlan) -> str:
    f = kp.figures
    lines = [
        f"keyword plan: {f['keys']:,} keys, values up to {f['max_value_size']:,} bytes",
        f"  table       {f['rows']:,} rows x {f['columns']:,} columns of bins of {f['slots']} "
        f"slots in h = {f['h']} row blocks (load {f['load']:.3f}, planned "
        f"{f['planned_load']:.2f}), slots of {f['slot_size']} bytes (tag {f['tag_bytes']} B, "
        "length, value)",
        f"  expansion   {f['expansion']:.2f}x (table {f['table_bytes'] / 1e6:.1f} MB / "
        f"keys x max value size)",
        f"  per lookup  query {f['lookup_query_bytes'] / 1e3:.1f} KB, responses "
        f"{f['lookup_response_bytes'] / 1e3:.1f} KB, server {f['lookup_server_seconds']:.3f} s "
        f"(1 core; one query, {f['h']} responses)",
        f"  vs index    {f['bytes_vs_index']:.2f}x the bytes, "
        f"{f['server_seconds_vs_index']:.2f}x the server seconds of one index lookup "
        f"({(f['index_query_bytes'] + f['index_response_bytes']) / 1e3:.1f} KB, "
        f"{f['index_server_seconds']:.3f} s)",
        "  considered  " + ", ".join(f"h={c['h']} nu {c['nu_1']}/{c['nu_2']} "
                                     f"m={c['slots_per_bin']}: "
                                     f"{c['lookup_server_seconds']:.3f} s, "
                                     f"{c['lookup_bytes'] / 1e3:.1f} KB"
                                     for c in kp.considered[:8]),
        "",
        "table database (answered in row blocks)",
    ]
    return "\n".join(lines) + "\n" + render(kp.plan)
