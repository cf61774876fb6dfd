"""How far the cost model's server seconds are from measured ones (a benchmark, not a test):
every checked-in build in generated/ (implicit database above --max-db-gib, as the validation
suite), and shapes no calibration was fitted on (the validation suite's smaller members, built
under --work-dir), each at 1 and 2 threads, interleaved (one repetition of every member and
thread count, then the next), the minimum of --repeat bench processes; predictions from the
active profile and from the shipped one, at the thread count used.

    python3 tests/models/bench_accuracy.py [--repeat 2] [--trials 2] [--profile FILE]
        [--only NAME,...] [--json OUT] [--store DIR]
    python3 tests/models/bench_accuracy.py --plans [--profile FILE] [--baseline FILE]

Prints one line per (member, threads): predicted / measured seconds and their ratio for each
profile, then per profile the largest deviation and how many are within ±20% and ±35%; at
several threads against the measured wall time and against the bench's uncontended estimate
(`server_uncontended_seconds`: what the wall time would have been with no other process
competing for the cores — on a shared machine the wall time is mostly that competition).
`--store DIR` keeps every (member, threads) measurement as a timing reference (params, the
minimum report, every repetition's total, command, commit, CPU model, load averages, date:
measure/validation.py's record), what tests/models/test_timing.py re-checks.
`--plans` benchmarks nothing: it re-plans every checked-in build's shape (records, record
size, variant, default objective) under the profile and lists the builds whose plan would
change, with the fields that differ, and whether the baseline profile (default: the shipped
one) plans them the same.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from spiralpir.optimizer.build import builder
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.measure.bench import run_bench
from spiralpir.optimizer.measure.quick import min_report
from spiralpir.optimizer.measure.validation import (
    SUITE,
    compare,
    loadavg,
    measured_total,
    prepare,
    record,
    store,
)
from spiralpir.optimizer.models.profile import Profile
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.plan.planner import plan_json

REPO = Path(__file__).resolve().parents[2]
GENERATED = REPO / "generated"
# shapes outside every calibration: the validation suite's two smaller shapes, two variants
EXTRA = (("2e14x32b", "spiral"), ("2e16x1kb", "spiral"), ("2e16x1kb", "stream"))


def members(work: Path, only: set[str]) -> list[tuple[str, builder.Instance, dict[str, Any]]]:
    out = []
    for src in sorted(p for p in GENERATED.iterdir() if (p / "params.json").is_file()):
        if only and src.name not in only:
            continue
        try:
            inst = builder.build(src, show_progress=False, targets=["bench"])
        except SpiralpirError as exc:
            print(f"{src.name}: skipped ({str(exc).splitlines()[0][:160]})", file=sys.stderr)
            continue
        out.append((src.name, inst, json.loads((src / "params.json").read_text())["params"]))
    by = {s.name: s for s in SUITE}
    for shape, variant in EXTRA:
        name = f"unfitted_{variant}_{shape}"
        if only and name not in only:
            continue
        inst, lit = prepare(by[shape], variant, work, build_dir=builder.build_root(None))
        out.append((name, inst, lit))
    return out


def measure(todo: list[tuple[str, builder.Instance, dict[str, Any]]], threads: list[int],
            repeat: int, trials: int, max_db_gib: float
            ) -> tuple[dict[tuple[str, int], dict[str, Any]], dict[tuple[str, int], list[float]]]:
    """(the minimum report, every repetition's total) per (member, threads)."""
    reps: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in range(repeat):
        for name, inst, _ in todo:
            for t in threads:
                print(f"  [{r + 1}/{repeat}] {name}, {t} thread(s) (load {loadavg()})",
                      file=sys.stderr, flush=True)
                rep = run_bench(inst, threads=t, trials=trials, max_db_gib=max_db_gib)
                if not rep["correct"]:
                    raise SystemExit(f"{name}: the benchmark decoded wrong records")
                reps.setdefault((name, t), []).append(rep)
    return ({k: min_report(v) for k, v in reps.items()},
            {k: [measured_total(x) for x in v] for k, v in reps.items()})


def report(todo: list[tuple[str, builder.Instance, dict[str, Any]]],
           runs: dict[tuple[str, int], dict[str, Any]], profiles: dict[str, Profile]
           ) -> list[dict[str, Any]]:
    """One line per (member, threads): measured seconds (1 thread: process CPU; several: wall,
    and the uncontended estimate `uncont.` — the wall time on an idle machine, from the pool
    tasks' thread CPU times), each profile's prediction and its ratio to both; then per
    profile how many are within ±20% and ±35% of the measured figure and of the uncontended
    one (at 1 thread the same)."""
    rows = []
    head = f"{'member':<34}{'T':>2}  {'measured':>9} {'uncont.':>8}" + "".join(
        f"  {label + ' pred':>14} {'ratio':>6} {'r.unc':>6}" for label in profiles)
    print(head)
    for name, _, lit in todo:
        p = Parameters.from_literal(lit)
        for (n, t), rep in sorted(runs.items()):
            if n != name:
                continue
            cmps = {label: compare(p, rep, prof) for label, prof in profiles.items()}
            first = next(iter(cmps.values()))
            meas = first["total"][1]
            unc = first.get("uncontended", (0.0, meas))[1]
            row: dict[str, Any] = {"member": name, "threads": t, "measured": meas,
                                   "uncontended": unc}
            line = f"{name:<34}{t:>2}  {meas:9.4f} {unc:8.4f}"
            for label, cmp in cmps.items():
                pred = cmp["total"][0]
                row[label] = {"predicted": pred, "ratio": cmp["ratio"],
                              "ratio_uncontended": pred / unc}
                line += f"  {pred:14.4f} {cmp['ratio']:6.2f} {pred / unc:6.2f}"
            print(line)
            rows.append(row)
    for label in profiles:
        for key, what in (("ratio", "measured"), ("ratio_uncontended", "uncontended")):
            ratios = [r[label][key] for r in rows]
            worst = max(ratios, key=lambda x: abs(x - 1))
            print(f"{label} vs {what}: {sum(abs(x - 1) <= 0.20 for x in ratios)}/{len(ratios)} "
                  f"within ±20%, {sum(abs(x - 1) <= 0.35 for x in ratios)}/{len(ratios)} within "
                  f"±35%, worst ratio {worst:.2f} ({profiles[label].describe()})")
    return rows


def _diff(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [f"{k} {old.get(k)} -> {new.get(k)}" for k in sorted(set(old) | set(new))
            if old.get(k) != new.get(k)]


def plans(profile: Profile, baseline: Profile) -> int:
    """Lists the checked-in builds whose plan changes under `profile`, and whether the
    baseline profile already plans them differently today (planner changes since they were
    generated) or the profile is what changes them; returns how many the profile changes."""
    by_profile = 0
    for src in sorted(p for p in GENERATED.iterdir() if (p / "params.json").is_file()):
        old = json.loads((src / "params.json").read_text())["params"]
        shape = (old["records"], old["record_size"])
        new = plan_json(*shape, variant=old["variant"], profile=profile)["params"]
        base = plan_json(*shape, variant=old["variant"], profile=baseline)["params"]
        if new == old:
            print(f"{src.name:<24}unchanged")
            continue
        why = ("the profile changes it" if base == old else
               "the baseline profile plans it the same" if base == new else
               "the baseline profile plans it differently again")
        by_profile += base != new
        print(f"{src.name:<24}{'; '.join(_diff(old, new))}  ({why})")
    print(f"{by_profile} of the checked-in builds' plans change with {profile.describe()} "
          f"instead of {baseline.describe()}")
    return by_profile


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", type=Path, default=None,
                    help="The profile to check (default: the active one).")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--max-db-gib", type=float, default=1.5)
    ap.add_argument("--only", default="", help="Comma-separated member names.")
    ap.add_argument("--work-dir", type=Path, default=REPO / "build" / "calibrate")
    ap.add_argument("--json", type=Path, default=None, help="Also write the rows here.")
    ap.add_argument("--store", type=Path, default=None,
                    help="Keep every measurement here (tests/models/data/timing).")
    ap.add_argument("--plans", action="store_true",
                    help="List the checked-in builds whose plan changes; benchmark nothing.")
    ap.add_argument("--baseline", type=Path, default=None,
                    help="With --plans: the profile to compare with (default: the shipped one).")
    args = ap.parse_args()
    prof = Profile.load(args.profile)
    if args.plans:
        plans(prof, Profile.load(args.baseline) if args.baseline else Profile.shipped())
        return
    start = time.monotonic()
    todo = members(args.work_dir, {x for x in args.only.split(",") if x})
    print(f"built in {time.monotonic() - start:.0f} s", file=sys.stderr)
    load = loadavg()
    runs, totals = measure(todo, [int(x) for x in args.threads.split(",")], args.repeat,
                           args.trials, args.max_db_gib)
    profiles = {"active": prof, "shipped": Profile.shipped()}
    rows = report(todo, runs, profiles)
    print(f"measured in {time.monotonic() - start:.0f} s, load average now {loadavg()}")
    if args.store is not None:
        lits = {name: lit for name, _, lit in todo}
        cmd = (f"python3 tests/models/bench_accuracy.py --repeat {args.repeat} --trials "
               f"{args.trials} --threads {args.threads} --max-db-gib {args.max_db_gib} "
               "(interleaved; per stage the minimum of the repetitions)")
        store([(f"{n}_t{t}", lits[n], record(lits[n], rep, totals[(n, t)], cmd, load))
               for (n, t), rep in sorted(runs.items())], args.store)
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": rows, "runs": {f"{k[0]}_t{k[1]}": v for k, v
                                                                in runs.items()}}, indent=1))


if __name__ == "__main__":
    main()
