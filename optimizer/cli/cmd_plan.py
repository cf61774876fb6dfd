"""`spiralpir plan`: the command-line face of plan/planner.py (parameters for a database shape).

`spiralpir plan --records N --record-size B [--variant spiral|stream|pack|stream_pack|auto]
[--objective dollars|time|response|traffic|stream [--blocks K]] [--max-query-bytes …]
[--max-params-bytes …] [--max-response-bytes …] [--max-db-ratio R] [--max-db-bytes SIZE|none]
[--min-security 128]
[--ring auto|paper] [--profile FILE] [--json] [--top K]`: a readable table of the chosen
parameters and estimates, the binding constraints and the next-best alternatives, or with
`--json` exactly {"params": {...}, "estimate": {...}}.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from spiralpir.optimizer.cli.batch_text import render_batch
from spiralpir.optimizer.cli.counts import parse_count
from spiralpir.optimizer.cli.keyword_generate import keyword_shape
from spiralpir.optimizer.cli.keyword_options import keyword_input_options, keyword_options
from spiralpir.optimizer.cli.keyword_text import render_keyword
from spiralpir.optimizer.cli.plan_options import (
    BLOCKS_HELP,
    DB_BYTES_HELP,
    DB_RATIO_HELP,
    MAX_COPIES_HELP,
    OBJECTIVE_HELP,
    QUERY_BUCKETS_HELP,
    caps,
    db_bytes_cap,
    parse_blocks,
)
from spiralpir.optimizer.cli.plan_text import render
from spiralpir.optimizer.cli.shard_options import calibration_of, machine_of, machine_options
from spiralpir.optimizer.cli.shard_text import render_shard_plan
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.profile import Profile
from spiralpir.optimizer.plan.batch_plan import plan_batch
from spiralpir.optimizer.plan.keyword_plan import plan_keyword
from spiralpir.optimizer.plan.planner import plan as make_plan
from spiralpir.optimizer.plan.shard_plan import plan_sharded
from spiralpir.optimizer.plan.space import OBJECTIVES


@click.command(name="plan")
@click.option("--records", default=None, help="Number of records: 1048576, 2^20, 1M, 1Mi.")
@click.option("--record-size", default=None, help="Bytes per record: 256, 30KB, 100KiB.")
@click.option("--keys", default=None, metavar="N|FILE",
              help="Plan a keyword build (key -> value lookups) for N keys with "
              "--max-value-size, or for the keys and values of a .jsonl/.csv FILE, instead of "
              "--records.")
@click.option("--max-value-size", default=None, help="With --keys: the longest value, bytes "
              "(with a FILE: default its longest).")
@keyword_input_options
@click.option("--variant", default="spiral", show_default=True,
              help="spiral | stream | pack | stream_pack | auto (the cheapest under the caps).")
@click.option("--objective", type=click.Choice(OBJECTIVES), default="dollars", show_default=True,
              help=OBJECTIVE_HELP)
@click.option("--blocks", default=None,
              help=BLOCKS_HELP)
@click.option("--max-query-bytes", default=None, help="Cap on the query size.")
@click.option("--max-params-bytes", default=None, help="Cap on the public parameters size.")
@click.option("--max-response-bytes", default=None, help="Cap on the response size.")
@click.option("--max-db-ratio", type=click.FloatRange(min=0, min_open=True), default=None,
              help=DB_RATIO_HELP)
@click.option("--max-db-bytes", default=None, metavar="SIZE|none", help=DB_BYTES_HELP)
@click.option("--min-security", type=float, default=128.0, show_default=True,
              help="Minimum security (bits, lattice estimator MATZOV model).")
@click.option("--ring", type=click.Choice(["auto", "paper"]), default="auto", show_default=True,
              help="'paper' asks for SPIRAL's published ring (d=2048, q≈2^55.9, width 6.4).")
@click.option("--profile", "profile_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Machine profile (spiralpir calibrate); default: the active "
              "one ($SPIRALPIR_PROFILE, else the calibrated one, else the shipped one).")
@click.option("--cpu-price", type=click.FloatRange(min=0), default=None,
              help="$ per CPU-hour (default 0.0195).")
@click.option("--egress-price", type=click.FloatRange(min=0), default=None,
              help="$ per GB egress (default 0.09).")
@click.option("--top", type=int, default=3, show_default=True,
              help="Show this many plans (the best and the next-best alternatives).")
@click.option("--json", "as_json", is_flag=True, help="Print {params, estimate} as JSON.")
@click.option("--max-copies", type=click.IntRange(min=2), default=None, metavar="W",
              help=MAX_COPIES_HELP)
@click.option("--query-buckets", type=click.IntRange(min=1), default=None, metavar="G",
              help=QUERY_BUCKETS_HELP)
@click.option("--batch", type=click.IntRange(min=1), default=None, metavar="K",
              help="Plan a batch build: up to K records per request (probabilistic batch "
              "codes; the plan gives w, the bucket count and size, and the failure bound).")
@click.option("--machines", type=click.IntRange(min=1), default=None,
              help="Plan a sharded deployment on this many machines: the split 2^S and the "
              "parameters together (with the coordinator's network bytes per query).")
@machine_options
def plan(records: str | None, record_size: str | None, keys: str | None,
         max_value_size: str | None, variant: str, objective: str, blocks: str | None,
                 max_query_bytes: str | None, max_params_bytes: str | None,
                 max_response_bytes: str | None, max_db_ratio: float | None,
                 max_db_bytes: str | None, min_security: float, ring: str,
                 profile_path: Path | None, cpu_price: float | None,
                 egress_price: float | None, top: int, as_json: bool, batch: int | None,
                 max_copies: int | None, query_buckets: int | None, base64_values: bool,
                 key_column: str, value_column: str, machines: int | None,
                 memory_per_machine: str, cores_per_machine: int, network_gbps: float,
                 measured: Path | None) -> None:
    """Choose SPIRAL parameters for a database of RECORDS records of RECORD-SIZE bytes."""
    if top < 1:
        raise SpiralpirError(f"--top must be at least 1, got {top}")
    opts: dict[str, Any] = {
        "variant": variant, "objective": objective, "blocks": parse_blocks(blocks),
        "min_security": min_security,
        "ring": ring, "profile": Profile.load(profile_path), "cpu_price": cpu_price,
        "egress_price": egress_price, "top": 1 if as_json else top, "explain": not as_json,
    }
    opts.update(caps(max_query_bytes, max_params_bytes, max_response_bytes))
    if max_db_ratio is not None:
        opts["max_db_ratio"] = max_db_ratio
    if machines is None:
        opts["max_db_bytes"] = db_bytes_cap(max_db_bytes)
    elif max_db_bytes is not None:
        raise SpiralpirError("--max-db-bytes does not go with --machines: a shard's database "
                             "fits --memory-per-machine")
    if max_copies is not None and batch is None:
        raise SpiralpirError("--max-copies goes with --batch")
    if query_buckets is not None:
        if batch is None:
            raise SpiralpirError("--query-buckets goes with --batch")
        opts["query_buckets"] = query_buckets
    if keys is not None or max_value_size is not None:
        if keys is None or records or record_size or batch:
            raise SpiralpirError("a keyword plan takes --keys N --max-value-size B or --keys "
                                 "FILE (not --records, --record-size or --batch)")
        kp = plan_keyword(*keyword_shape(keys, max_value_size, keyword_options(
            base64_values, key_column, value_column)), **opts)
        click.echo(json.dumps(kp.to_json(), sort_keys=True, indent=2) if as_json
                   else render_keyword(kp))
        return
    if records is None or record_size is None:
        raise SpiralpirError("give --records N --record-size B (or --keys N --max-value-size B); "
                             "see 'spiralpir plan --help'")
    if machines is not None:
        if batch is not None:
            raise SpiralpirError("--machines plans one sharded database, not a --batch")
        sp = plan_sharded(parse_count(records, "--records"),
                          parse_count(record_size, "--record-size"), machines,
                          machine_of(memory_per_machine, cores_per_machine, network_gbps),
                          calibration_of(measured, opts["profile"]),
                          **{k: v for k, v in opts.items() if k not in ("top", "explain")})
        if as_json:
            click.echo(json.dumps(sp.to_json(), sort_keys=True, indent=2))
        else:
            click.echo(render_shard_plan(sp))
            click.echo("to build it: this command with --json > plan.json, then `spiralpir "
                       "generate --params plan.json --name NAME` (the build splits into up to "
                       f"{max(sp.best.shards, 8)} shards)")
        return
    if batch is not None:
        bp = plan_batch(parse_count(records, "--records"),
                        parse_count(record_size, "--record-size"), batch,
                        max_copies=max_copies, **opts)
        click.echo(json.dumps(bp.to_json(), sort_keys=True, indent=2) if as_json
                   else render_batch(bp))
        return
    pl = make_plan(parse_count(records, "--records"), parse_count(record_size, "--record-size"),
              **opts)
    if as_json:  # exactly the plan document (machine output)
        click.echo(json.dumps(pl.to_json(), sort_keys=True, indent=2))
    else:
        click.echo(render(pl))
        click.echo(f"cost profile: {opts['profile'].describe()}")

