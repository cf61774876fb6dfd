"""Print the noise model's predicted/measured variance per stage of every stored reference.

    python tests/models/noise_ratio_table.py [--all]

References: the files test_measured.py checks (tests/models/data/measured*/, re-measured with
tests/models/measure_noise.py). By default only the stages test_measured.py compares (enough
coefficients; up to the first dimension on implicit databases, whose folds combine repeated
cts); --all prints every measured stage. The last lines give, per stage kind, the smallest and
largest ratio with the reference it comes from, over the references where the mean model
applies and, separately, where the bounded shared terms dominate. A report, not a test.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spiralpir.optimizer.models.noise import stage_variances  # noqa: E402
from test_measured import NOISE_DATA, _compared, _ids, _load, _shared_dominates  # noqa: E402


def _kind(stage: str) -> str:
    return "fold" if stage.startswith("fold_") or stage in ("folding", "packing") else stage


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="every measured stage")
    a = ap.parse_args()
    worst: dict[tuple[bool, str], list[tuple[float, str]]] = {}
    for path, name in zip(NOISE_DATA, _ids(NOISE_DATA), strict=True):
        p, rep = _load(path)
        sn = stage_variances(p)
        shared = _shared_dominates(sn)
        if a.all:
            cmp = {s: (sn.variances[s], m["variance"]) for s, m in rep["noise"].items()
                   if s in sn.variances and m["variance"] > 0}
        else:
            cmp = _compared(p, rep)
        cells = " ".join(f"{s}={pr / me:.2f}" for s, (pr, me) in cmp.items())
        print(f"{name}{' [shared terms dominate]' if shared else ''}: {cells}")
        for s, (pr, me) in cmp.items():
            worst.setdefault((shared, _kind(s)), []).append((pr / me, name))
    print()
    for (shared, kind), rs in sorted(worst.items()):
        lo, hi = min(rs), max(rs)
        geo = math.exp(sum(math.log(r) for r, _ in rs) / len(rs))
        print(f"{'shared' if shared else 'mean  '} {kind:16s} n={len(rs):3d} min {lo[0]:.2f} "
              f"({lo[1]})  max {hi[0]:.2f} ({hi[1]})  geo-mean {geo:.3f}")


if __name__ == "__main__":
    main()
