"""`spiralpir generate`: a plan (file, or planned now) -> a specialized build in generated/NAME/."""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import click
from spiralpir.optimizer import codegen
from spiralpir.optimizer.cli.counts import parse_count
from spiralpir.optimizer.cli.keyword_generate import keyword_document, write_keyword_file
from spiralpir.optimizer.cli.keyword_options import keyword_input_options, keyword_options
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
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.bucket_layout import BucketLayout
from spiralpir.optimizer.models.profile import Profile
from spiralpir.optimizer.plan.batch_plan import plan_batch
from spiralpir.optimizer.plan.planner import plan_json
from spiralpir.optimizer.plan.space import OBJECTIVES
from spiralpir.optimizer.service import records as records_file
from spiralpir.optimizer.service.batch_server import BATCH_FILE
from spiralpir.optimizer.service.keyword_server import KEYWORD_FILE


@click.command(name="generate")
@click.option("--params", "params_file", type=click.Path(dir_okay=False, path_type=Path),
              help="A plan JSON file (`spiralpir plan --json` output, or a build's params.json).")
@click.option("--records", default=None,
              help="Plan now for this many records (instead of --params): 1048576, 2^20, 1Mi.")
@click.option("--from-db", "from_db", type=click.Path(exists=False, path_type=Path), default=None,
              help="Plan now for this database (a .jsonl file, a directory of values, or a "
              "binary file with --record-size): its record count and longest value.")
@click.option("--headroom", default=None, metavar="PERCENT",
              help="With --from-db: plan for this many more records than the file holds "
              "(e.g. 20%%), so that it can grow without a new build.")
@click.option("--record-size", default=None,
              help="Record size (with --records, or --from-db; default there: the longest "
              "value): 256, 30KB.")
@click.option("--variant", default=None,
              help="Plan option: spiral, stream, pack, stream_pack or auto.")
@click.option("--objective", type=click.Choice(OBJECTIVES), default=None,
              help="Plan option (default dollars). " + OBJECTIVE_HELP)
@click.option("--blocks", default=None, help="Plan option. " + BLOCKS_HELP)
@click.option("--min-security", type=float, default=None, help="Plan option: bits (default 128).")
@click.option("--max-query-bytes", default=None, help="Plan option: cap on the query size.")
@click.option("--max-params-bytes", default=None, help="Plan option: cap on public params.")
@click.option("--max-response-bytes", default=None, help="Plan option: cap on the response.")
@click.option("--max-db-ratio", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Plan option. " + DB_RATIO_HELP)
@click.option("--max-db-bytes", default=None, metavar="SIZE|none",
              help="Plan option. " + DB_BYTES_HELP)
@click.option("--profile", "profile_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Plan option: machine profile (spiralpir calibrate); default: "
              "the active one ($SPIRALPIR_PROFILE, else the calibrated one, else the shipped "
              "one).")
@click.option("--refresh-security", is_flag=True,
              help="Re-run the security estimator even if the document holds a report.")
@click.option("--max-copies", type=click.IntRange(min=2), default=None, metavar="W",
              help=MAX_COPIES_HELP)
@click.option("--query-buckets", type=click.IntRange(min=1), default=None, metavar="G",
              help=QUERY_BUCKETS_HELP)
@click.option("--batch", type=click.IntRange(min=1), default=None, metavar="K",
              help="Plan now a batch build for up to K records per request (writes "
              "NAME/batch.json, the bucket layout, beside the bucket database's build).")
@click.option("--keys", default=None, metavar="FILE|N",
              help="Plan now a keyword build (key -> value lookups): a .jsonl or .csv file of "
              "keys and values, or a key count N with --max-value-size (writes "
              "NAME/keyword.json, the table's shape).")
@click.option("--max-value-size", default=None, metavar="B",
              help="With --keys: the longest value in bytes (with a file: default its longest).")
@keyword_input_options
@click.option("--max-shards", type=click.IntRange(min=2), default=None, metavar="2^S",
              help="Shards the build must split into (`spiralpir shard`); a build serves up to "
              "2^min(3, nu_2) unless generated for more (a sharded plan, `plan --machines "
              "--json`, sets it from its split), each split compiling the first dimension once "
              "more.")
@click.option("--name", required=True, help="Build name: lowercase C++ identifier, e.g. demo.")
@click.option("--force", is_flag=True,
              help="Replace an existing generated/NAME of different parameters.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=codegen.DEFAULT_OUT, show_default="generated/",
              help="Directory that receives NAME/.")
def generate(
    params_file: Path | None,
    records: str | None,
    from_db: Path | None,
    headroom: str | None,
    record_size: str | None,
    variant: str | None,
    objective: str | None,
    blocks: str | None,
    min_security: float | None,
    max_query_bytes: str | None,
    max_params_bytes: str | None,
    max_response_bytes: str | None,
    max_db_ratio: float | None,
    max_db_bytes: str | None,
    profile_path: Path | None,
    refresh_security: bool,
    max_copies: int | None, query_buckets: int | None,
    batch: int | None,
    keys: str | None,
    max_value_size: str | None,
    base64_values: bool,
    key_column: str,
    value_column: str,
    max_shards: int | None,
    name: str,
    force: bool,
    out_dir: Path,
) -> None:
    """Generate generated/NAME/: params.json, params.hpp, instance, bench entry points, CMake."""
    if sum(x is not None for x in (params_file, records, from_db, keys)) != 1:
        raise SpiralpirError("give one of --params FILE, --records N --record-size B, "
                             "--from-db FILE or --keys FILE|N")
    if max_value_size is not None and keys is None:
        raise SpiralpirError("--max-value-size goes with --keys")
    if keys is not None and (batch is not None or record_size is not None):
        raise SpiralpirError("--keys plans a keyword build: not with --batch or --record-size")
    if headroom is not None and from_db is None:
        raise SpiralpirError("--headroom goes with --from-db")
    if from_db is not None:
        records, record_size = db_shape(from_db, record_size, headroom)
    if max_copies is not None and batch is None:
        raise SpiralpirError("--max-copies goes with --batch")
    if query_buckets is not None and batch is None:
        raise SpiralpirError("--query-buckets goes with --batch")
    if params_file is not None and batch is not None:
        raise SpiralpirError("--batch plans now (with --records); a plan file made by `plan "
                             "--batch K --json` already holds its batch layout")
    if params_file is not None:
        plan_opts = (record_size, variant, objective, blocks, min_security, max_query_bytes,
                     max_params_bytes, max_response_bytes, max_db_ratio, max_db_bytes,
                     profile_path)
        if any(o is not None for o in plan_opts):
            raise SpiralpirError("plan options (--record-size, --variant, ...) go with --records")
        doc = codegen.load_document(params_file)
    else:
        if keys is None and (records is None or record_size is None):
            raise SpiralpirError("--records needs --record-size")
        profile = Profile.load(profile_path)
        options: dict[str, object] = {
            k: v for k, v in (("variant", variant), ("objective", objective),
                              ("blocks", parse_blocks(blocks)),
                              ("min_security", min_security), ("max_db_ratio", max_db_ratio),
                              ("max_db_bytes", db_bytes_cap(max_db_bytes)), ("profile", profile))
            if v is not None}
        options.update(caps(max_query_bytes, max_params_bytes, max_response_bytes))
        if query_buckets is not None:
            options["query_buckets"] = query_buckets
        if keys is not None:
            doc = keyword_document(keys, max_value_size,
                                   keyword_options(base64_values, key_column, value_column),
                                   **options)
        elif batch is not None:
            doc = plan_batch(parse_count(records, "--records"),
                             parse_count(record_size, "--record-size"), batch,
                             max_copies=max_copies, **options).to_json()
        else:
            doc = plan_json(parse_count(records, "--records"),
                            parse_count(record_size, "--record-size"), **options)
    if max_shards is not None:
        if max_shards & (max_shards - 1):
            raise SpiralpirError(f"--max-shards {max_shards}: must be a power of two >= 2")
        doc = {**doc, "shards": {"shard_bits": max_shards.bit_length() - 1}}
    if not force:
        check_replaces_same(out_dir / name, codegen.normalize_params(doc.get("params", {})))
    target = codegen.generate_from_document(name, doc, out_dir, refresh_security)
    files = sorted([*codegen.TEMPLATE_FILES, "params.json"])
    if write_batch_file(target, doc.get("batch")):
        files.append(BATCH_FILE)
    if write_keyword_file(target, doc.get("keyword")):
        files.append(KEYWORD_FILE)
    click.echo(f"generated {target}/ ({', '.join(files)})")
    if params_file is None:
        click.echo(f"planned with cost profile {profile.describe()}")
    click.echo(f"next: spiralpir build {target}")


def write_batch_file(target: Path, batch: Any) -> bool:
    """NAME/batch.json from a batch plan's section (removed for a plan without one, so a
    regenerated single-database build is not served as buckets)."""
    path = target / BATCH_FILE
    if batch is None:
        path.unlink(missing_ok=True)
        return False
    layout = BucketLayout.from_json(batch, "the plan's batch section")
    if layout.capacity > int(codegen.load_document(target / "params.json")["params"]["records"]):
        raise SpiralpirError(f"the plan's batch section: buckets of {layout.capacity} records "
                             "exceed the plan's records")
    codegen.write_atomic(path, json.dumps({"batch": batch}, sort_keys=True, indent=2) + "\n")
    return True


def parse_headroom(text: str) -> Fraction:
    """'20%' or '20' -> 1/5 (a percentage, ASCII digits; exact, so 10% of 3000 is 300)."""
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)\s*%?", text.strip(), re.ASCII)
    if m is None:
        raise SpiralpirError(f"--headroom '{text}': expected a percentage such as 20%")
    return Fraction(m.group(1)) / 100


def db_shape(path: Path, record_size: str | None, headroom: str | None) -> tuple[str, str]:
    """(--records, --record-size) for the database at path: its record count (plus headroom)
    and the given record size or its longest value; says what it read."""
    size = parse_count(record_size, "--record-size") if record_size is not None else None
    found = records_file.survey(path, size)
    extra = parse_headroom(headroom) if headroom is not None else Fraction(0)
    count = math.ceil(found.num_records * (1 + extra))
    planned_size = found.item_size  # values are stored with their length (value_frame.py)
    if planned_size < 1:
        raise SpiralpirError(f"{path}: every value is empty; give --record-size")
    grown = f" (+{float(extra * 100):g}% headroom)" if extra else ""
    longest = "" if found.fmt == "binary" else f", longest value {found.max_size} bytes"
    click.echo(f"{path}: {found.num_records:,} records ({found.fmt}{longest}); planning for "
               f"{count:,} records{grown} of {planned_size} bytes", err=True)
    return str(count), str(planned_size)


def changed_fields(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """'field old -> new' for each field whose value differs (absent: '-')."""
    missing = object()
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key, missing), new.get(key, missing)
        if a != b:
            shown = ["-" if v is missing else json.dumps(v) for v in (a, b)]
            out.append(f"{key} {shown[0]} -> {shown[1]}")
    return out


def check_replaces_same(target: Path, params: dict[str, Any]) -> None:
    """An error if target holds a build of other parameters: clients and servers find a build
    by its name, so new parameters under an old name would break their copies."""
    existing = target / "params.json"
    if not existing.is_file():
        return
    try:
        old = codegen.normalize_params(json.loads(existing.read_text(encoding="utf-8"))["params"])
    except (OSError, ValueError, KeyError, TypeError, SpiralpirError):
        raise SpiralpirError(f"{target} exists but its params.json is unreadable; give --force "
                             "to replace it, or another --name") from None
    diff = changed_fields(old, params)
    if diff:
        raise SpiralpirError(f"{target} holds a build of other parameters ({'; '.join(diff)}); "
                             "give --force to replace it, or another --name")
