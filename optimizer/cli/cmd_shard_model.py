"""`spiralpir shard-model`: the sharded plan of one database shape on several machine counts
(default: 2^30 records of 256 B on 16, 64 and 256 machines): the split, latency, throughput
and the coordinator's network bytes per query, from the cost model scaled by a measurement
(--measured, the JSON of tests/service/bench_ray.py)."""

from __future__ import annotations

import json
from pathlib import Path

import click
from spiralpir.optimizer.cli.counts import parse_count
from spiralpir.optimizer.cli.shard_options import calibration_of, machine_of, machine_options
from spiralpir.optimizer.cli.shard_text import render_shard_plan
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.profile import Profile
from spiralpir.optimizer.plan.shard_plan import plan_sharded


@click.command(name="shard-model")
@click.option("--records", default="2^30", show_default=True)
@click.option("--record-size", default="256", show_default=True)
@click.option("--machines", "machine_counts", default="16,64,256", show_default=True,
              help="Machine counts to model, comma-separated.")
@click.option("--variant", default="spiral", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the plans as JSON.")
@machine_options
def shard_model(records: str, record_size: str, machine_counts: str, variant: str,
                as_json: bool, memory_per_machine: str, cores_per_machine: int,
                network_gbps: float, measured: Path | None) -> None:
    """Model a sharded deployment of RECORDS x RECORD-SIZE on each machine count."""
    try:
        counts = [int(c) for c in machine_counts.split(",")]
    except ValueError:
        raise SpiralpirError(f"--machines '{machine_counts}': expected counts such as "
                             "16,64,256") from None
    profile = Profile.load(None)
    machine = machine_of(memory_per_machine, cores_per_machine, network_gbps)
    cal = calibration_of(measured, profile)
    plans = [plan_sharded(parse_count(records, "--records"),
                          parse_count(record_size, "--record-size"), m, machine, cal,
                          variant=variant, profile=profile) for m in counts]
    if as_json:
        click.echo(json.dumps([p.to_json() for p in plans], sort_keys=True, indent=2))
        return
    click.echo("\n\n".join(render_shard_plan(p) for p in plans))
