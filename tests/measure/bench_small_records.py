"""Benchmark 32-byte records against the SPIRAL deployment report (a benchmark, not a test).

    python3 tests/measure/bench_small_records.py [--log2 10,12,...,24] [--records N,...]
        [--work DIR] [--trials 5] [--repeat 3] [--old OTHER_SPIRALPIR] [--json OUT]
        [--objective time --max-query-bytes 13888 --max-response-bytes 7712]

For each N = 2^k: `spiralpir generate --records N --record-size 32` (the default plan, or the
plan of --objective under the size caps given), build,
and `spiralpir bench --threads 1` in DIR (default: a temporary directory), the minimum server
seconds of --repeat bench processes of --trials queries. Prints per N our CPU ms (and its stages:
expansion/conversion/first dimension/folding/[packing/]modulus switching), the report's
figure (the deployment report's single-threaded SPIRAL server, ../shared/seeds/003: the
smaller of its Tables 8/32, row 2), the speedup, the preprocessed bytes per record byte, query
and response bytes and the plan. --old SPIRALPIR (another checkout's CLI, e.g. a venv of main)
benches that code's plan and build of the same N too, each repetition alternating the two so
that machine load hits both alike, and adds the old figures and the ratio new/old.
--records adds record counts that are not powers of two (no report figure), where a partial
hypercube stores fewer first-dimension rows than 2^nu_1.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from spiralpir.optimizer.models.profile import STAGES

# ms, the report's smaller average of Tables 8 and 32 (row 2) per log2 N
REPORT_MS = {10: 57.2, 12: 57.2, 14: 57.3, 16: 57.2, 18: 57.3, 20: 78.1, 22: 161.4, 24: 431.0}
RECORD_SIZE = 32


def _run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return proc.stdout


class Side:
    """One CLI's generated and built instance of one N."""

    def __init__(self, cli: str, root: Path, records: int, plan_args: list[str]) -> None:
        self.cli, self.root, self.records, self.plan_args = cli, root, records, plan_args
        self.name = f"small_{records}x{RECORD_SIZE}b"
        self.src = root / self.name
        self.build_dir = root / "build"
        self.best: dict[str, Any] | None = None

    def prepare(self) -> None:
        _run([self.cli, "generate", "--records", str(self.records), "--record-size",
              str(RECORD_SIZE), "--name", self.name, "--out", str(self.root), "--force",
              *self.plan_args])
        _run([self.cli, "build", str(self.src), "--build-dir", str(self.build_dir), "-j", "2"])

    def bench(self, trials: int) -> None:
        rep = json.loads(_run([self.cli, "bench", str(self.src), "--build-dir",
                               str(self.build_dir), "--threads", "1", "--trials", str(trials),
                               "--json"]))
        if not rep.get("correct", False):
            sys.exit(f"{self.cli}: {self.records} records answered wrongly")
        if self.best is None or rep["server_seconds"] < self.best["server_seconds"]:
            self.best = rep

    def figures(self) -> dict[str, Any]:
        assert self.best is not None
        params = json.loads((self.src / "params.json").read_text())["params"]
        rep = self.best
        return {
            "ms": rep["server_seconds"] * 1e3,
            "bytes_per_byte": (rep["preprocessed_db_bytes"] - 32) / (self.records * RECORD_SIZE),
            "query_bytes": rep["query_bytes"], "response_bytes": rep["response_bytes"],
            "plan": f"n {params['n']}, p 2^{params['p'].bit_length() - 1}, "
                    f"nu {params['nu_1']}/{params['nu_2']}, rows {_rows(params)}",
            "stages_ms": {s: v * 1e3 for s, v in rep.get("stages", {}).items()},
        }


def _stages_text(stages_ms: dict[str, float]) -> str:
    """The bench's stage times in the runtime's order, 'a/b/…', the fixed per-query work beside
    the database's."""
    return "/".join(f"{stages_ms[s]:.1f}" for s in STAGES if s in stages_ms)


def _rows(params: dict[str, Any]) -> str:
    """'stored/2^nu_1' first-dimension rows (FORMATS.md §3), from the params alone."""
    pt_bits = params["n"] ** 2 * params["poly_len"] * (params["p"].bit_length() - 1)
    item_bits = 8 * params["db_item_size"]
    per = pt_bits // item_bits if item_bits <= pt_bits else 1
    pts = -(-params["records"] // per)
    return f"{min(1 << params['nu_1'], -(-pts >> params['nu_2']))}/{1 << params['nu_1']}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--log2", default="10,12,14,16,18,20,22,24")
    ap.add_argument("--records", default="", help="extra record counts, e.g. 1000000")
    ap.add_argument("--work", type=Path)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--old", help="another spiralpir CLI to compare with (interleaved)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--objective", help="generate's objective (default: generate's default)")
    ap.add_argument("--max-query-bytes", help="generate's cap on the query size")
    ap.add_argument("--max-response-bytes", help="generate's cap on the response size")
    args = ap.parse_args()
    plan_args: list[str] = []
    for flag, val in (("--objective", args.objective), ("--max-query-bytes", args.max_query_bytes),
                      ("--max-response-bytes", args.max_response_bytes)):
        if val is not None:
            plan_args += [flag, val]
    ks = [int(x) for x in args.log2.split(",") if x]
    if unknown := [k for k in ks if k not in REPORT_MS]:
        sys.exit(f"--log2: no report figure for {unknown} (have {sorted(REPORT_MS)})")
    counts = [(1 << k, REPORT_MS[k]) for k in ks] + [
        (int(x), None) for x in args.records.split(",") if x]
    cli = shutil.which("spiralpir", path=str(Path(sys.executable).parent)) or "spiralpir"
    work = args.work or Path(tempfile.mkdtemp(prefix="spiralpir_small_"))
    rows = []
    for records, report in counts:
        sides = [Side(cli, work / "new", records, plan_args)]
        if args.old:
            sides.append(Side(args.old, work / "old", records, plan_args))
        for s in sides:
            s.prepare()
        for _ in range(args.repeat):
            for s in sides:
                s.bench(args.trials)
        new = sides[0].figures()
        row: dict[str, Any] = {"records": records, "report_ms": report, **new,
                               "speedup": report / new["ms"] if report else None}
        label = f"2^{records.bit_length() - 1}" if records & (records - 1) == 0 else str(records)
        vs = f"report {report:6.1f}  {row['speedup']:5.2f}x" if report else f"{'':21}"
        line = (f"{label:<8} {new['ms']:8.1f} ms  {vs}  {new['bytes_per_byte']:6.2f} B/B  "
                f"query {new['query_bytes']:6d}  response {new['response_bytes']:6d}  "
                f"{new['plan']}  stages ms {_stages_text(new['stages_ms'])}")
        if args.old:
            old = sides[1].figures()
            row["old"] = old
            row["new_over_old"] = new["ms"] / old["ms"]
            line += (f"  | old {old['ms']:7.1f} ms {old['bytes_per_byte']:5.2f} B/B "
                     f"q {old['query_bytes']} r {old['response_bytes']} {old['plan']}  "
                     f"new/old {row['new_over_old']:.3f}")
        print(line, flush=True)
        rows.append(row)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
