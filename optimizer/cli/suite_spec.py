"""`spiralpir calibrate --suite SPEC`: the advanced calibration and validation settings in one
option, a comma-separated list of NAME or NAME=VALUE items (lists inside a value: '+'):

  fit                 calibrate on the calibration shapes at full size (measure/validation.py)
  twins               also on the validation suite's CI twins (short, noisy)
  validate            run the validation suite full size: predicted vs measured per stage
  compare=DIR         with validate: compare saved full-size runs instead of benchmarking
  store=DIR           with validate: save each measurement (tests/models/data/timing)
  records=DIR         re-fit from saved suite runs (repeatable)
  instance=DIR        benchmark a generated build and fit on it (repeatable)
  run=PARAMS:REPORT   a saved bench --json report and its params (repeatable)
  arith-bench=PATH    spiral_runtime_bench to run (default: newest under build/)
  arith-json=FILE     a saved microbenchmark report instead
  arith-out=FILE      save the microbenchmark report
  profile=FILE        the profile to validate when not fitting (default: the active one)
  shapes=A+B, variants=A+B, work-dir=DIR, replan, trials=N, repeat=N, max-db-gib=G, threads=T
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.measure.validation import SUITE
from spiralpir.optimizer.params.variants import VARIANTS
from spiralpir.optimizer.resources import BUILD_ROOT

_FLAGS = ("fit", "twins", "validate", "replan")
_PATHS = ("compare", "store", "arith-bench", "arith-json", "arith-out", "profile", "work-dir")
_MANY = ("records", "instance", "run")
_NUMBERS = {"trials": int, "repeat": int, "max-db-gib": float, "threads": int}


@dataclass
class SuiteSpec:
    fit: bool = False
    twins: bool = False
    validate: bool = False
    replan: bool = False
    compare: Path | None = None
    store: Path | None = None
    arith_bench: Path | None = None
    arith_json: Path | None = None
    arith_out: Path | None = None
    profile: Path | None = None
    work_dir: Path = BUILD_ROOT / "calibrate"
    records: list[Path] = field(default_factory=list)
    instance: list[Path] = field(default_factory=list)
    run: list[tuple[Path, Path]] = field(default_factory=list)
    shapes: list[str] = field(default_factory=lambda: [s.name for s in SUITE])
    variants: list[str] = field(default_factory=lambda: list(VARIANTS))
    trials: int = 3
    repeat: int = 2
    max_db_gib: float = 1.5
    threads: int = 1

    @property
    def fitting(self) -> bool:
        return self.fit or self.twins or bool(self.records or self.instance or self.run)


def parse_suite(text: str) -> SuiteSpec:
    """The settings of a --suite value (module docstring); one-line errors name the item."""
    spec = SuiteSpec()
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        name, eq, value = item.partition("=")
        attr = name.replace("-", "_")
        if name in _FLAGS:
            if eq:
                raise SpiralpirError(f"--suite {name}: takes no value")
            setattr(spec, attr, True)
            continue
        if not eq or not value:
            known = ", ".join((*_FLAGS, *_PATHS, *_MANY, "shapes", "variants", *_NUMBERS))
            raise SpiralpirError(f"--suite item {item!r}: expected one of {known} "
                                 "(NAME or NAME=VALUE)")
        if name in _PATHS:
            setattr(spec, attr, Path(value))
        elif name == "run":
            params, sep, report = value.partition(":")
            if not sep or not params or not report:
                raise SpiralpirError(f"--suite run={value}: expected PARAMS.json:REPORT.json")
            spec.run.append((Path(params), Path(report)))
        elif name in _MANY:
            getattr(spec, attr).append(Path(value))
        elif name == "shapes":
            spec.shapes = [x for x in value.split("+") if x]
        elif name == "variants":
            vs = [{"streampack": "stream_pack"}.get(v, v) for v in value.split("+") if v]
            bad = [v for v in vs if v not in VARIANTS]
            if bad:
                raise SpiralpirError(f"--suite variants: {bad[0]!r} is not one of "
                                     f"{', '.join(VARIANTS)}")
            spec.variants = vs
        elif name in _NUMBERS:
            try:
                number = _NUMBERS[name](value)
            except ValueError:
                raise SpiralpirError(f"--suite {name}={value}: not a number") from None
            least = "> 0" if name == "max-db-gib" else ">= 1"
            if number <= 0 or (name != "max-db-gib" and number < 1):
                raise SpiralpirError(f"--suite {name}={value}: must be {least}")
            setattr(spec, attr, number)
        else:
            raise SpiralpirError(f"--suite item {name!r} is unknown (see spiralpir calibrate "
                                 "--help)")
    if not (spec.fitting or spec.validate):
        raise SpiralpirError("--suite: give fit, twins, records=, instance= or run= to "
                             "calibrate, or validate")
    return spec
