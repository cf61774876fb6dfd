"""Text of a sharded plan (plan/shard_plan.py), for `spiralpir plan --machines` and
`spiralpir shard-model`."""

from __future__ import annotations

from spiralpir.optimizer.models.shard_model import ShardEstimate
from spiralpir.optimizer.plan.shard_plan import ShardPlan


def _size(n: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def split_row(e: ShardEstimate) -> str:
    return (f"  S={e.bits:<2} {e.shards:>4} shards x {e.replicas:>3} replicas  shard db "
            f"{_size(e.shard_db_bytes):>9}{'' if e.fits else ' (does not fit)'}  latency "
            f"{e.latency_seconds * 1e3:8.1f} ms (shard {e.shard_seconds * 1e3:.1f}, coordinator "
            f"{e.coordinator_seconds * 1e3:.1f}, network {e.transfer_seconds * 1e3:.1f})  "
            f"{e.throughput_qps:8.2f} q/s  coordinator {_size(e.coordinator_bytes)}/query")


def render_shard_plan(sp: ShardPlan, splits: int = 4) -> str:
    p, b, m = sp.params, sp.best, sp.machine
    lines = [
        f"{p.records} records x {p.record_size} B on {sp.machines} machines "
        f"({m.cores} cores, {m.memory_bytes / 2**30:.0f} GiB, "
        f"{m.network_bytes_per_second * 8 / 1e9:g} Gb/s each); stage costs: "
        f"{sp.calibration.source}",
        f"parameters: {p.variant}, n={p.n}, nu_1={p.nu_1}, nu_2={p.nu_2}, d={p.poly_len}, "
        f"{p.instances} instance(s); whole database "
        f"{_size(b.shard_db_bytes * b.shards)} preprocessed",
        f"chosen split: 2^{b.bits} = {b.shards} shards, {b.replicas} replica(s); latency "
        f"{b.latency_seconds * 1e3:.1f} ms, throughput {b.throughput_qps:.2f} queries/s",
        f"coordinator network per query: {_size(b.coordinator_bytes_out)} out (the query to "
        f"each shard), {_size(b.coordinator_bytes_in)} in (partial answers); the shards "
        f"expanding the query themselves instead of receiving it expanded saves "
        f"{_size(b.expanded_bytes - b.expand_at_shard_bytes)} per query",
        "splits (best first):",
    ]
    lines += [split_row(e) for e in sp.splits[:splits]]
    return "\n".join(lines)
