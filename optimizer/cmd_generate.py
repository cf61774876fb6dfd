"""`spiralpir generate`: a plan (file, or planned now) -> a specialized build in generated/NAME/."""

from __future__ import annotations

from pathlib import Path

import click
from spiralpir.optimizer import codegen
from spiralpir.optimizer.errors import SpiralpirError


def plan_document(records: int, record_size: int, **options: object) -> dict[str, object]:
    """Run the optimizer for a database shape; returns its JSON document (params, estimate)."""
    from spiralpir.optimizer.planning import plan_json

    return plan_json(records, record_size, **options)


@click.command(name="generate")
@click.option("--params", "params_file", type=click.Path(dir_okay=False, path_type=Path),
              help="A plan JSON file (`spiralpir plan --json` output, or a build's params.json).")
@click.option("--records", type=int, help="Plan now for this many records (instead of --params).")
@click.option("--record-size", type=int, help="Record size in bytes (with --records).")
@click.option("--variant", default=None, help="Plan option: spiral, stream, pack, stream_pack.")
@click.option("--objective", default=None, help="Plan option: what to minimize.")
@click.option("--min-security", type=float, default=None, help="Plan option: bits (default 128).")
@click.option("--name", required=True, help="Build name: lowercase C++ identifier, e.g. demo.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=codegen.DEFAULT_OUT, show_default="generated/",
              help="Directory that receives NAME/.")
def generate(
    params_file: Path | None,
    records: int | None,
    record_size: int | None,
    variant: str | None,
    objective: str | None,
    min_security: float | None,
    name: str,
    out_dir: Path,
) -> None:
    """Generate generated/NAME/: params.json, params.hpp, instance, bench entry points, CMake."""
    if (params_file is None) == (records is None):
        raise SpiralpirError("give either --params FILE or --records N --record-size B")
    if params_file is not None:
        plan_opts = (record_size, variant, objective, min_security)
        if any(o is not None for o in plan_opts):
            raise SpiralpirError("plan options (--record-size, --variant, ...) go with --records")
        doc = codegen.load_document(params_file)
    else:
        if record_size is None:
            raise SpiralpirError("--records needs --record-size")
        options = {k: v for k, v in (("variant", variant), ("objective", objective),
                                     ("min_security", min_security)) if v is not None}
        doc = plan_document(records, record_size, **options)
    params, estimate = codegen.parse_plan_document(doc)
    target = codegen.generate(name, params, estimate, out_dir)
    files = sorted([*codegen.TEMPLATE_FILES, "params.json"])
    click.echo(f"generated {target}/ ({', '.join(files)})")
    click.echo(f"next: spiralpir build {target}")
