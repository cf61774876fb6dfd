#!/usr/bin/env python3
"""Benchmark (a command, not a test): every SPIRAL variant beside vanilla in one run (issue 8).

    python3 runtime/tests/variants/bench_variants.py [--shapes 2e20x256b,2e14x100kb]
        [--threads 1,2] [--trials 3] [--max-db-gib 2] [--json]

Builds (spiralpir's builder, shared runtime build) and runs the full-size benchmark of the
checked-in builds spiral_/stream_/pack_/streampack_<shape> (generated/, planned by the
optimizer at >= 128-bit security), at each thread count, and prints per variant: the whole
answer's wall and CPU seconds and throughput, the streaming figures (one query prepared once,
then answered per database: time and throughput without the one-time expansion/conversion),
the first dimension's streaming bandwidth over the preprocessed database, and the ratios to
vanilla. Databases larger than --max-db-gib use SPIRAL's implicit-database convention (>= 1 GiB
of distinct data addressed cyclically), as the bench driver reports.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
VARIANTS = ("spiral", "stream", "pack", "streampack")
SINGLE_CORE_READ_GBPS = 17.0  # issue 8: this machine's measured single-core read bandwidth


def _builder():  # the repo's own optimizer package (spiralpir.optimizer)
    try:
        from spiralpir.optimizer import builder
    except ImportError:  # run from a checkout without installing
        sys.exit("install spiralpir (pip install -e .) or set PYTHONPATH so that "
                 "spiralpir.optimizer imports")
    return builder


def run(name: str, threads: int, trials: int, max_db_gib: float) -> dict:
    builder = _builder()
    inst = builder.build(REPO / "generated" / name, show_progress=False)
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
            f"({100 * (fd_cpu or fd) / SINGLE_CORE_READ_GBPS:.0f}% of "
            f"{SINGLE_CORE_READ_GBPS:g}) | q {r['query_bytes'] / 1e6:.2f} MB "
            f"resp {r['response_bytes'] / 1e3:.1f} KB pp {r['public_params_bytes'] / 1e6:.2f} MB"
            + ("  [implicit db]" if r["implicit_db"] else ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="2e20x256b,2e14x100kb")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--max-db-gib", type=float, default=2.0)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = []
    for shape in a.shapes.split(","):
        for t in (int(x) for x in a.threads.split(",")):
            for v in a.variants.split(","):
                r = run(f"{v}_{shape}", t, a.trials, a.max_db_gib)
                rows.append(r)
                if not a.json:
                    print(_line(r, t), flush=True)
            base = next((r for r in rows if r["name"] == f"spiral_{shape}"
                         and r["threads"] == t), None)
            if base and not a.json:
                bt = base["throughput_bytes_per_second"]
                for r in rows:
                    if r["threads"] == t and r["name"].endswith(shape) and r is not base:
                        ans = r["throughput_bytes_per_second"] / bt
                        stream = r["streaming"]["throughput_bytes_per_second"] / bt
                        print(f"  {r['name']:<22} vs vanilla: answer throughput {ans:.2f}x, "
                              f"streaming throughput {stream:.2f}x")
    if a.json:
        print(json.dumps(rows, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
