"""`spiralpir generate`: a plan (file, or planned now) -> a specialized build in generated/NAME/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from spiralpir.optimizer import codegen
from spiralpir.optimizer.cli.counts import parse_count
from spiralpir.optimizer.cli.plan_options import BLOCKS_HELP, OBJECTIVE_HELP, caps, parse_blocks
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.plan.planner import plan_json
from spiralpir.optimizer.plan.space import OBJECTIVES


@click.command(name="generate")
@click.option("--params", "params_file", type=click.Path(dir_okay=False, path_type=Path),
              help="A plan JSON file (`spiralpir plan --json` output, or a build's params.json).")
@click.option("--records", default=None,
              help="Plan now for this many records (instead of --params): 1048576, 2^20, 1Mi.")
@click.option("--record-size", default=None, help="Record size (with --records): 256, 30KB.")
@click.option("--variant", default=None,
              help="Plan option: spiral, stream, pack, stream_pack or auto.")
@click.option("--objective", type=click.Choice(OBJECTIVES), default=None,
              help="Plan option (default dollars). " + OBJECTIVE_HELP)
@click.option("--blocks", default=None, help="Plan option. " + BLOCKS_HELP)
@click.option("--min-security", type=float, default=None, help="Plan option: bits (default 128).")
@click.option("--max-query-bytes", default=None, help="Plan option: cap on the query size.")
@click.option("--max-params-bytes", default=None, help="Plan option: cap on public params.")
@click.option("--max-response-bytes", default=None, help="Plan option: cap on the response.")
@click.option("--profile", "profile_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Plan option: machine profile (spiralpir calibrate); default: "
              "the shipped one.")
@click.option("--refresh-security", is_flag=True,
              help="Re-run the security estimator even if the document holds a report.")
@click.option("--name", required=True, help="Build name: lowercase C++ identifier, e.g. demo.")
@click.option("--force", is_flag=True,
              help="Replace an existing generated/NAME of different parameters.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=codegen.DEFAULT_OUT, show_default="generated/",
              help="Directory that receives NAME/.")
def generate(
    params_file: Path | None,
    records: str | None,
    record_size: str | None,
    variant: str | None,
    objective: str | None,
    blocks: str | None,
    min_security: float | None,
    max_query_bytes: str | None,
    max_params_bytes: str | None,
    max_response_bytes: str | None,
    profile_path: Path | None,
    refresh_security: bool,
    name: str,
    force: bool,
    out_dir: Path,
) -> None:
    """Generate generated/NAME/: params.json, params.hpp, instance, bench entry points, CMake."""
    if (params_file is None) == (records is None):
        raise SpiralpirError("give either --params FILE or --records N --record-size B")
    if params_file is not None:
        plan_opts = (record_size, variant, objective, blocks, min_security, max_query_bytes,
                     max_params_bytes, max_response_bytes, profile_path)
        if any(o is not None for o in plan_opts):
            raise SpiralpirError("plan options (--record-size, --variant, ...) go with --records")
        doc = codegen.load_document(params_file)
    else:
        if records is None or record_size is None:
            raise SpiralpirError("--records needs --record-size")
        options: dict[str, object] = {
            k: v for k, v in (("variant", variant), ("objective", objective),
                              ("blocks", parse_blocks(blocks)),
                              ("min_security", min_security), ("profile", profile_path))
            if v is not None}
        options.update(caps(max_query_bytes, max_params_bytes, max_response_bytes))
        doc = plan_json(parse_count(records, "--records"),
                            parse_count(record_size, "--record-size"), **options)
    if not force:
        check_replaces_same(out_dir / name, codegen.normalize_params(doc.get("params", {})))
    target = codegen.generate_from_document(name, doc, out_dir, refresh_security)
    files = sorted([*codegen.TEMPLATE_FILES, "params.json"])
    click.echo(f"generated {target}/ ({', '.join(files)})")
    click.echo(f"next: spiralpir build {target}")


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
