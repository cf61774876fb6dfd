"""The bench runner: run a built instance's benchmark executable and return its JSON report."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from spiralpir.optimizer.build import builder
from spiralpir.optimizer.errors import SpiralpirError

BENCH_KEYS = (
    "correct", "server_seconds", "threads", "stages", "query_bytes", "response_bytes",
    "public_params_bytes", "db_bytes", "preprocessed_db_bytes", "throughput_bytes_per_second",
    "implicit_db",
)


def run_bench(inst: builder.Instance, threads: int | None = None, trials: int = 3,
              ci: bool = False, records: int | None = None,
              timeout: float | None = None, max_db_gib: float | None = None,
              repeat_folding_mib: float | None = None) -> dict[str, Any]:
    """Run the instance's bench executable with --json and return its parsed report.
    repeat_folding_mib: an implicit database of that much distinct data that repeats folding
    indices (whatever the database's size; what the largest shapes' implicit databases do)."""
    exe = inst.ci_bench if ci else inst.bench
    cmd = [str(exe), "--json", "--trials", str(trials)]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    if records is not None:
        cmd += ["--records", str(records)]
    if repeat_folding_mib is not None:  # over a zero budget: repeated folding indices
        cmd += ["--max-db-gib", "0", "--implicit-distinct-mib", str(repeat_folding_mib)]
    elif max_db_gib is not None:  # larger databases: implicit (>= 1 GiB distinct, cyclic)
        cmd += ["--max-db-gib", str(max_db_gib)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise SpiralpirError(f"benchmark timed out after {timeout} s: {' '.join(cmd)}") from exc
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise SpiralpirError(
            f"benchmark failed (exit {proc.returncode}) without a JSON report: {' '.join(cmd)}"
            f"\n{proc.stderr.strip()[-2000:]}"
        ) from exc
    if proc.returncode != 0 and report.get("correct", False):
        raise SpiralpirError(f"benchmark failed (exit {proc.returncode}): {' '.join(cmd)}\n"
                             f"{proc.stderr.strip()[-2000:]}")
    missing = [k for k in BENCH_KEYS if k not in report]
    if missing:
        raise SpiralpirError(f"benchmark report lacks key(s): {', '.join(missing)}")
    return report
