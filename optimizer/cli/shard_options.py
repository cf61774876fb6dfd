"""The machine options of the sharded plan (`plan --machines`, `shard-model`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from spiralpir.optimizer.cli.counts import parse_count
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.profile import Profile
from spiralpir.optimizer.models.shard_model import Calibration, Machine


def machine_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed([
        click.option("--memory-per-machine", default="256GiB", show_default=True,
                     help="Memory of each machine (a shard's database must fit 85% of it)."),
        click.option("--cores-per-machine", type=click.IntRange(min=1), default=16,
                     show_default=True, help="Cores of each machine (threads of a shard)."),
        click.option("--network-gbps", type=click.FloatRange(min=0, min_open=True),
                     default=10.0, show_default=True, help="Each machine's link, Gb/s."),
        click.option("--measured", type=click.Path(dir_okay=False, path_type=Path),
                     default=None, help="Scale the cost model's stage seconds by a measurement: "
                     "the JSON of `python tests/service/bench_ray.py BUILD --json FILE`."),
    ]):
        fn = opt(fn)
    return fn


def machine_of(memory: str, cores: int, gbps: float) -> Machine:
    return Machine(cores, parse_count(memory, "--memory-per-machine"), gbps * 1e9 / 8)


def calibration_of(path: Path | None, profile: Profile) -> Calibration | None:
    if path is None:
        return None
    try:
        doc = json.loads(Path(path).read_text())
        return Calibration.from_bench(doc, profile)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SpiralpirError(f"--measured {path}: not a bench_ray.py JSON ({exc})") from None
