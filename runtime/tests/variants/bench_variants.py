#!/usr/bin/env python3
"""Benchmark (a command, not a test): every SPIRAL variant beside vanilla in one run.

    python3 runtime/tests/variants/bench_variants.py [--shapes 2e20x256b,2e14x100kb]
        [--threads 1,2] [--trials 3] [--max-db-gib 2] [--jobs J] [--json] [--table FILE]

Builds (spiralpir's builder, shared runtime build) and runs the full-size benchmark of the
checked-in builds spiral_/stream_/pack_/streampack_<shape> (generated/, planned by the
optimizer at >= 128-bit security), at each thread count, and prints per variant: the whole
answer's wall and CPU seconds and throughput, the streaming figures (one query prepared once,
then answered per database: time and throughput without the one-time expansion/conversion),
the first dimension's streaming bandwidth over the preprocessed database, and the ratios to
vanilla like for like: whole answer against vanilla's whole answer, streaming against
vanilla's streaming (vanilla measured the same way: one prepared query answered per
database). Databases larger than --max-db-gib use SPIRAL's implicit-database convention
(>= 1 GiB of distinct data addressed cyclically), as the bench driver reports.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
VARIANTS = ("spiral", "stream", "pack", "streampack")
SINGLE_CORE_READ_GBPS = 17.0  # this machine's measured single-core read bandwidth


def _builder():  # the repo's own optimizer package (spiralpir.optimizer)
    try:
        from spiralpir.optimizer.build import builder
    except ImportError:  # run from a checkout without installing
        sys.exit("install spiralpir (pip install -e .) or set PYTHONPATH so that "
                 "spiralpir.optimizer imports")
    return builder


def run(name: str, threads: int, trials: int, max_db_gib: float, jobs: int | None = None) -> dict:
    builder = _builder()
    inst = builder.build(REPO / "generated" / name, jobs=jobs, show_progress=False,
                         targets=["bench"])
    cmd = [str(inst.bench), "--json", "--threads", str(threads), "--trials", str(trials),
           "--max-db-gib", str(max_db_gib)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{name}: bench failed ({out.returncode}): {out.stderr.strip()}")
    r = json.loads(out.stdout)
    r["name"] = name
    if "streaming" not in r:  # vanilla driver: per-database part = every stage after conversion
        st = r["stages"]
        per_db = st["first_dimension"] + st["folding"] + st["modswitch"]
        r["streaming"] = {
            "prepare_seconds": st["expansion"] + st["conversion"],
            "per_database_seconds": per_db,
            "throughput_bytes_per_second": r["db_bytes"] / per_db,
            "first_dimension_bytes_per_second":
                r["preprocessed_db_bytes"] / st["first_dimension"],
            "stages": {"first_dimension": st["first_dimension"], "folding": st["folding"],
                       "packing": 0.0, "modswitch": st["modswitch"]},
        }
    return r


def _line(r: dict, t: int) -> str:
    s = r["streaming"]
    fd = s["first_dimension_bytes_per_second"] / 1e9
    fd_cpu = s.get("first_dimension_bytes_per_cpu_second", 0) / 1e9
    cpu_thr = r["db_bytes"] / s["per_database_cpu_seconds"] / 1e6 if s.get(
        "per_database_cpu_seconds") else 0.0
    return (f"{r['name']:<24} thr {t}  correct {r['correct']}  answer {r['server_seconds']:.3f} s "
            f"(cpu {r.get('server_cpu_seconds', 0):.3f}) "
            f"{r['throughput_bytes_per_second'] / 1e6:7.1f} MB/s | streaming "
            f"{s['per_database_seconds']:.3f} s {s['throughput_bytes_per_second'] / 1e6:7.1f} MB/s"
            f" (per CPU s {cpu_thr:7.1f} MB/s)"
            f" | first dim {fd:5.2f} GB/s, {fd_cpu:5.2f} GB/CPU-s "
            f"({100 * fd / SINGLE_CORE_READ_GBPS:.0f}% of "
            f"{SINGLE_CORE_READ_GBPS:g}) | q {r['query_bytes'] / 1e6:.2f} MB "
            f"resp {r['response_bytes'] / 1e3:.1f} KB pp {r['public_params_bytes'] / 1e6:.2f} MB"
            + ("  [implicit db]" if r["implicit_db"] else ""))


def table(rows: list[dict]) -> str:
    """Per shape and thread count, each variant beside vanilla, like for like: the whole answer
    against vanilla's whole answer, the streaming answer (without the one-time expansion /
    conversion, measured the same way for vanilla) against vanilla's streaming answer."""
    out = ["| shape | thr | variant | answer s | answer MB/s | x vanilla | streaming s | "
           "streaming MB/s | x vanilla | first dim s | first dim GB/s | % of "
           f"{SINGLE_CORE_READ_GBPS:g} | preproc. db GB |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        shape = r["name"].split("_", 1)[1]
        base = next((b for b in rows if b["name"] == f"spiral_{shape}"
                     and b["threads"] == r["threads"]), None)
        s = r["streaming"]
        fd_s = s["stages"]["first_dimension"] if "stages" in s else 0.0
        whole = strm = "-"
        if base:
            bs = base["streaming"]
            whole = f"{r['throughput_bytes_per_second'] / base['throughput_bytes_per_second']:.2f}"
            strm = f"{s['throughput_bytes_per_second'] / bs['throughput_bytes_per_second']:.2f}"
        fd = s["first_dimension_bytes_per_second"] / 1e9
        out.append(
            f"| {shape} | {r['threads']} | {r['name'].split('_', 1)[0]} | "
            f"{r['server_seconds']:.3f} | "
            f"{r['throughput_bytes_per_second'] / 1e6:.0f} | {whole} | "
            f"{s['per_database_seconds']:.3f} | {s['throughput_bytes_per_second'] / 1e6:.0f} | "
            f"{strm} | {fd_s:.3f} | {fd:.2f} | {100 * fd / SINGLE_CORE_READ_GBPS:.0f}% | "
            f"{r['preprocessed_db_bytes'] / 1e9:.2f} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="2e20x256b,2e14x100kb")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--max-db-gib", type=float, default=2.0)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--jobs", type=int, default=None, help="parallel compile jobs for the builds")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--table", type=Path, default=None,
                    help="only print the table of a JSON file written by --json")
    a = ap.parse_args()
    if a.table is not None:
        print(table(json.loads(a.table.read_text())))
        return
    rows = []
    for shape in a.shapes.split(","):
        for t in (int(x) for x in a.threads.split(",")):
            for v in a.variants.split(","):
                r = run(f"{v}_{shape}", t, a.trials, a.max_db_gib, a.jobs)
                rows.append(r)
                if not a.json:
                    print(_line(r, t), flush=True)
    if a.json:
        print(json.dumps(rows, indent=1, sort_keys=True))
    else:
        print(table(rows))


if __name__ == "__main__":
    main()
