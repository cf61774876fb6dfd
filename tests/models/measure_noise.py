"""Re-measure the noise model's reference data with the runtime's noise hook.

    python tests/models/measure_noise.py [--build-dir build/noise] [--list] [NAME ...]
    python tests/models/measure_noise.py --file REFERENCE.json [--repeat N]

For each named parameter set (SETS below; default: all), this generates a build
(`spiralpir generate` into BUILD/gen), compiles only its benchmark executable (`spiralpir
build`'s bench target, runtime shared under BUILD), runs

    <bench> --json --threads 1 --trials 1 --noise [--implicit-db --max-db-gib G]

(the runtime's test-only NoiseMeter decrypts every intermediate ciphertext with the secret key
and reports each stage's noise variance; runtime/testing/include/spiralpir/testing/noise.hpp),
each run with its own SPIRALPIR_TEST_SEED (`run_seed`: fresh records, keys and query), and writes
tests/models/data/measured/noise/NAME.json = {params, bench, command, commit, what}
(data/measured/*.json are the previous session's full-size benchmark reports).
The runtime is built from $SPIRALPIR_RUNTIME_SOURCE when set (e.g. a `git archive` snapshot
of a commit, so that uncommitted work in a shared tree is not measured; describe it in
$SPIRALPIR_RUNTIME_NOTE, recorded with the commit).
tests/models/test_measured.py and tests/models/test_variant_measured.py check the noise
model (models/noise.py) against these files; this script is the benchmark command that
refreshes them (minutes per set: each set is a separate C++ instantiation).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from spiralpir.optimizer import codegen
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.params.parameters import Parameters

REPO = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "data" / "measured" / "noise"

_R54 = [268369921, 67104769]  # d = 2048 plans' 2^54 modulus (129.6-bit ring)
_R84_4096 = [268369921, 268361729, 268271617]  # d = 4096 NTT-friendly, q ~ 2^84
_R90_4096 = [1073692673, 1073668097, 1073651713]  # d = 4096 plans' 3-prime ring, q ~ 2^90
_R60_4096 = _R90_4096[:2]  # d = 4096 two-prime ring, q ~ 2^60 (objective stream's plans)
_IMPLICIT = ["--implicit-db", "--max-db-gib", "0.25"]


def _lit(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "variant": "spiral", "noise_width": 6.4, "secret_distribution": "gaussian",
        "q2_bits": 28, "t_gsw": 5, "t_conv": 6, "t_exp_left": 9, "t_exp_right": 54,
    }
    base.update(kw)
    return base


def _streamed(variant: str, moduli: list[int], n: int, nu_1: int, nu_2: int, log2_p: int,
              q2_bits: int, t_conv: int, records: int, record_size: int, t_gsw: int = 3,
              poly_len: int = 4096) -> dict[str, Any]:
    """A stream-variant literal (no expansion gadgets), by default d = 4096 and t_gsw 3 as the
    first objective-stream plans."""
    return _lit(variant=variant, poly_len=poly_len, moduli=moduli, n=n, nu_1=nu_1, nu_2=nu_2,
                p=1 << log2_p, q2_bits=q2_bits, t_gsw=t_gsw, t_conv=t_conv, t_exp_left=1,
                t_exp_right=1, records=records, record_size=record_size)


def _stream_p2_tconv18(n: int) -> dict[str, Any]:
    """SpiralStream at d = 2048, p = 2 with a fine conversion gadget (t_conv 18, 3-bit digits)."""
    return _lit(variant="stream", poly_len=2048, moduli=_R54, n=n, nu_1=9, nu_2=2, p=2,
                q2_bits=16, t_gsw=6, t_conv=18, records=2048, record_size=512)


# name -> (what it exercises, parameter literal, extra bench arguments, runs to pool).
# Databases are small (random plaintexts, built in memory): a run takes seconds once compiled.
SETS: dict[str, tuple[str, dict[str, Any], list[str], int]] = {
    "n_d1024_p4": (
        "d = 1024 (q ~ 2^56: a measurement ring, not a secure one), n = 1, p = 4, 5 instances",
        _lit(poly_len=1024, moduli=[268369921, 268361729], n=1, nu_1=6, nu_2=3, p=4, q2_bits=14,
             t_gsw=4, t_conv=4, t_exp_left=4, t_exp_right=28,
             records=500, record_size=1200), [], 2),
    "n_d2048_n2_p4096": (
        "d = 2048, q ~ 2^54, n = 2, p = 2^12",
        _lit(poly_len=2048, moduli=_R54, n=2, nu_1=8, nu_2=3, p=4096, q2_bits=27,
             records=2048, record_size=4096), [], 2),
    "n_d2048_n3_p256_ternary": (
        "d = 2048, n = 3, p = 2^8, ternary secret, coarse right gadget (t_exp_right 9)",
        _lit(poly_len=2048, moduli=_R54, n=3, nu_1=7, nu_2=2, p=256, q2_bits=21,
             secret_distribution="ternary", t_gsw=4, t_conv=5, t_exp_left=6, t_exp_right=9,
             records=512, record_size=9216), [], 2),
    "n_d2048_p2_texp9": (
        "d = 2048, n = 1, p = 2, fine left expansion gadget (t_exp_left 9, 6-bit digits): "
        "probes errors shared through the expansion tree",
        _lit(poly_len=2048, moduli=_R54, n=1, nu_1=9, nu_2=2, p=2, q2_bits=16,
             t_gsw=6, t_conv=3, t_exp_left=9, t_exp_right=27,
             records=2048, record_size=512), [], 16),
    "n_d4096_n2_p2e22": (
        "d = 4096, 3 primes (q ~ 2^84), n = 2, p = 2^22 (above the former 2^16 cap), q2 36 bits",
        _lit(poly_len=4096, moduli=_R84_4096, n=2, nu_1=6, nu_2=2, p=1 << 22, q2_bits=36,
             t_gsw=7, t_conv=7, t_exp_left=6, t_exp_right=28,
             records=256, record_size=90112), [], 2),
    "n_stream_d2048_n2": (
        "SpiralStream: fresh uploaded cts (no expansion), n = 2, p = 2^12",
        _lit(variant="stream", poly_len=2048, moduli=_R54, n=2, nu_1=7, nu_2=3, p=4096,
             q2_bits=27, records=1024, record_size=4096), [], 2),
    "n_stream_p2_tconv18": (
        "SpiralStream n = 1, p = 2, fine conversion gadget (t_conv 18, 3-bit digits): the "
        "first-dimension cts are uploaded under s_c (no ScalToMat, no coherent key-error term; "
        "before commit 51c1ea9 that term dominated here, see n_stream_n2_p2_tconv18)",
        _stream_p2_tconv18(n=1), [], 16),
    "n_stream_n2_p2_tconv18": (
        "SpiralStream n = 2 (first-dimension cts through ScalToMat), p = 2, t_conv 18: the "
        "coherent term (shared ScalToMat key error x digit mean x data mean) dominates the first "
        "dimension (with n = 1 the cts are uploaded under s_c and it is absent)",
        _stream_p2_tconv18(n=2), [], 16),
    "n_pack_d2048_n2": (
        "SpiralPack: n = 1 computation over 4 sub-databases + packing key switch, p = 2^10",
        _lit(variant="pack", poly_len=2048, moduli=_R54, n=2, nu_1=7, nu_2=3, p=1024,
             q2_bits=26, records=1024, record_size=2560), [], 2),
    "n_streampack_d2048_n3": (
        "SpiralStreamPack: n = 3 (9 sub-databases), p = 2^8, ternary secret",
        _lit(variant="stream_pack", poly_len=2048, moduli=_R54, n=3, nu_1=6, nu_2=2, p=256,
             q2_bits=22, secret_distribution="ternary", records=256, record_size=9216), [], 2),
    "n_plan_2e15x16b_p2": (
        "the planner's 2^15 x 16 B plan that decoded wrongly (d = 1024, q ~ 2^31.8, n = 2, p = 2, "
        "1-bit right and 2-bit GSW digits): digit means x shared GSW errors dominate folding",
        _lit(poly_len=1024, moduli=[61441, 59393], n=2, nu_1=8, nu_2=2, p=2, q2_bits=14,
             t_gsw=16, t_conv=4, t_exp_left=8, t_exp_right=32, records=32768, record_size=16,
             db_item_size=16), [], 24),
    "n_d1024_p4_gsw28": (
        "d = 1024 (q ~ 2^56), n = 2, p = 4, 2-bit GSW digits (t_gsw 28), 1-bit right expansion "
        "digits: the p = 4 counterpart of n_plan_2e15x16b_p2",
        _lit(poly_len=1024, moduli=[268369921, 268361729], n=2, nu_1=8, nu_2=2, p=4,
             q2_bits=20, t_gsw=28, t_conv=4, t_exp_left=8, t_exp_right=56, records=32768,
             record_size=16, db_item_size=16), [], 16),
    "n_plan_2e15x16b_d1024_after": (
        "the planner's 2^15 x 16 B choice at d = 1024 (>= 100-bit security) once the shared "
        "terms are bounded: n = 4, p = 4, q ~ 2^34.9, no folding (nu_2 = 0)",
        _lit(poly_len=1024, moduli=[520193, 61441], n=4, nu_1=7, nu_2=0, p=4, q2_bits=14,
             t_gsw=1, t_conv=4, t_exp_left=4, t_exp_right=5, records=32768, record_size=16,
             db_item_size=16), [], 16),
    "n_stream_2e15x16b_prev_plan": (
        "the planner's cheapest 2^15 x 16 B plan before the shared-term bounds (variant auto): "
        "SpiralStream, d = 1024, one 28-bit prime, p = 2, 5-bit GSW and 4-bit conversion digits",
        _lit(variant="stream", poly_len=1024, moduli=[268369921], n=1, nu_1=6, nu_2=6, p=2,
             q2_bits=14, t_gsw=6, t_conv=7, t_exp_left=1, t_exp_right=1, records=32768,
             record_size=16, db_item_size=16), [], 16),
    # the planner's choices (with this model) for SPIRAL's paper databases, at full
    # size with an implicit (cyclic) database: folding there combines repeated cts, so only
    # the stages up to the first dimension are references (test_measured.py)
    "plan_2e20x256b": (
        "plan for 2^20 x 256 B (spiral): d = 2048, q ~ 2^54, n = 1, p = 2^8",
        _lit(poly_len=2048, moduli=_R54, n=1, nu_1=8, nu_2=9, p=256, q2_bits=19, t_gsw=5,
             t_conv=4, t_exp_left=4, t_exp_right=9, records=1 << 20, record_size=256),
        _IMPLICIT, 2),
    "plan_2e14x100kb": (
        "plan for 2^14 x 100 KB (spiral): d = 4096, q ~ 2^90, n = 2, p = 2^25",
        _lit(poly_len=4096, moduli=_R90_4096, n=2, nu_1=8, nu_2=6, p=1 << 25, q2_bits=36,
             t_gsw=4, t_conv=5, t_exp_left=7, t_exp_right=8, records=1 << 14,
             record_size=100000), _IMPLICIT, 2),
    "plan_2e18x30kb": (
        "plan for 2^18 x 30 KB (spiral): d = 4096, q ~ 2^90, n = 1, p = 2^30 (the cap)",
        _lit(poly_len=4096, moduli=_R90_4096, n=1, nu_1=8, nu_2=10, p=1 << 30, q2_bits=43,
             t_gsw=4, t_conv=12, t_exp_left=23, t_exp_right=23, records=1 << 18,
             record_size=30000), _IMPLICIT, 2),
    "plan_2e18x30kb_streampack": (
        "plan for 2^18 x 30 KB (stream_pack): d = 4096, q ~ 2^90, n = 1, p = 2^30",
        _lit(variant="stream_pack", poly_len=4096, moduli=_R90_4096, n=1, nu_1=9, nu_2=9,
             p=1 << 30, q2_bits=41, t_gsw=3, t_conv=12, t_exp_left=1, t_exp_right=1,
             records=1 << 18, record_size=30000), _IMPLICIT, 2),
    # the planner's `--objective stream` choices (the streaming setting's per-database seconds).
    # The 2^14 x 100 KB ones keep the plan's ring, n, p, hypercube, gadgets and q2 with a
    # record filling ONE plaintext (instances 1 instead of 12 / 7: each coefficient's noise is
    # the plan's, the database 1/instances of it); the 2^20 x 256 B ones are the plans
    # themselves. Real (random, in-memory) databases: every stage is a reference.
    "plan_stream_2e14x100kb_streampack": (
        "objective stream, stream_pack 2^14 x 100 KB (one of its 12 instances): d = 4096, "
        "q ~ 2^60 (two 30-bit primes), n = 1, p = 2^17, nu 10/4, t_conv 30",
        _streamed("stream_pack", _R60_4096, 1, 10, 4, 17, 29, 30, 1 << 14, 8704), [], 2),
    "plan_stream_2e14x100kb_streampack_q128": (
        "objective stream with --max-query-bytes 128MB, stream_pack 2^14 x 100 KB (one of its "
        "7 instances): d = 4096, q ~ 2^90, n = 1, p = 2^28, nu 11/3",
        _streamed("stream_pack", _R90_4096, 1, 11, 3, 28, 39, 9, 1 << 14, 14336), [], 2),
    "plan_stream_2e20x256b_stream": (
        "objective stream, stream 2^20 x 256 B: d = 4096, q ~ 2^60, n = 1, p = 2^16, nu 10/5",
        _streamed("stream", _R60_4096, 1, 10, 5, 16, 28, 15, 1 << 20, 256), [], 2),
    "plan_stream_2e20x256b_streampack": (
        "objective stream, stream_pack 2^20 x 256 B: d = 4096, q ~ 2^90, n = 3, p = 2^29, "
        "nu 9/2",
        _streamed("stream_pack", _R90_4096, 3, 9, 2, 29, 40, 9, 1 << 20, 256), [], 2),
    # the same objective's plans once n_comp = 1 stream queries skip ScalToMat on the first
    # dimension (commit 51c1ea9: fresh first-dimension noise, p 2^17 -> 2^22 at q ~ 2^60)
    "plan_stream_2e14x100kb_streampack_direct": (
        "objective stream, stream_pack 2^14 x 100 KB after direct first-dimension cts: d = 4096, "
        "q ~ 2^60, n = 3, p = 2^22, nu 10/4, t_gsw 5, t_conv 12 (one instance; implicit db)",
        _streamed("stream_pack", _R60_4096, 3, 10, 4, 22, 37, 12, 1 << 14, 100000, t_gsw=5),
        _IMPLICIT, 2),
    "plan_stream_2e14x100kb_stream_direct": (
        "objective stream, stream 2^14 x 100 KB after direct first-dimension cts (one of its 9 "
        "instances): d = 4096, q ~ 2^60, n = 1, p = 2^22, nu 10/4, t_gsw 5, t_conv 12",
        _streamed("stream", _R60_4096, 1, 10, 4, 22, 37, 12, 1 << 14, 11264, t_gsw=5), [], 2),
    "plan_stream_2e20x256b_stream_direct": (
        "objective stream, stream 2^20 x 256 B after direct first-dimension cts: d = 2048, "
        "q ~ 2^54, n = 1, p = 2^16, nu 10/6, t_gsw 4, t_conv 11",
        _streamed("stream", _R54, 1, 10, 6, 16, 27, 11, 1 << 20, 256, t_gsw=4, poly_len=2048),
        [], 2),
    # the planner's default (dollars) choices for 32-byte records, where p is smallest
    # (p = 2^8: 8 preprocessed bytes per record byte); the noise model limits p there
    "plan_2e20x32b": (
        "plan for 2^20 x 32 B (spiral): d = 2048, q ~ 2^54, n = 1, p = 2^8, nu 7/7, full size "
        "with a real (random) database: every stage is a reference",
        _lit(poly_len=2048, moduli=_R54, n=1, nu_1=7, nu_2=7, p=256, q2_bits=19, t_gsw=4,
             t_conv=5, t_exp_left=4, t_exp_right=18, records=1 << 20, record_size=32,
             db_item_size=32), [], 2),
    "plan_2e24x32b": (
        "plan for 2^24 x 32 B (spiral): d = 2048, q ~ 2^54, n = 1, p = 2^8, nu 9/9 (its "
        "failure probability 2^-44.9 is the closest to the bound), implicit database",
        _lit(poly_len=2048, moduli=_R54, n=1, nu_1=9, nu_2=9, p=256, q2_bits=20, t_gsw=4,
             t_conv=5, t_exp_left=5, t_exp_right=18, records=1 << 24, record_size=32,
             db_item_size=32), _IMPLICIT, 2),
    "plan_2e24x32b_twin": (
        "plan_2e24x32b with nu_2 = 3 (2^18 records, a real random database): the plan's "
        "first dimension and per-fold noise with folding on distinct cts",
        _lit(poly_len=2048, moduli=_R54, n=1, nu_1=9, nu_2=3, p=256, q2_bits=20, t_gsw=4,
             t_conv=5, t_exp_left=5, t_exp_right=18, records=1 << 18, record_size=32,
             db_item_size=32), [], 8),
    "plan_stream_2e22x32b": (
        "plan for 2^22 x 32 B (variant stream): d = 2048, q ~ 2^54, n = 1, p = 2^16 (4 "
        "preprocessed bytes per record byte), nu 8/7, t_gsw 4, t_conv 11; full size, real "
        "(random) database",
        _streamed("stream", _R54, 1, 8, 7, 16, 27, 11, 1 << 22, 32, t_gsw=4, poly_len=2048)
        | {"db_item_size": 32}, [], 2),
    "dense_2e20x32b_d4096_p2e16": (
        "not a plan: 2^20 x 32 B (spiral) at 4 preprocessed bytes per record byte, d = 4096, "
        "q ~ 2^60 (two 30-bit primes), n = 1, p = 2^16, nu 7/5, the cheapest gadgets (by the "
        "cost model) that keep the failure <= 2^-40; full size, real (random) database",
        _lit(poly_len=4096, moduli=_R60_4096, n=1, nu_1=7, nu_2=5, p=1 << 16, q2_bits=32,
             t_gsw=6, t_conv=10, t_exp_left=20, t_exp_right=30, records=1 << 20,
             record_size=32, db_item_size=32), [], 4),
    "dense_2e24x32b_d4096_p2e16": (
        "not a plan: 2^24 x 32 B (spiral) at 4 preprocessed bytes per record byte (2.1 GB), "
        "d = 4096, q ~ 2^60, n = 1, p = 2^16, nu 7/9, the cheapest gadgets (by the cost model) "
        "that keep the failure <= 2^-40; full size, real (random) database",
        _lit(poly_len=4096, moduli=_R60_4096, n=1, nu_1=7, nu_2=9, p=1 << 16, q2_bits=32,
             t_gsw=7, t_conv=10, t_exp_left=30, t_exp_right=30, records=1 << 24,
             record_size=32, db_item_size=32), ["--max-db-gib", "3"], 2),
}


def _commit() -> str:
    """The commit measured: HEAD of the runtime sources used ($SPIRALPIR_RUNTIME_SOURCE, a
    snapshot, or this checkout), marked when its runtime/ differs from that commit."""
    src = Path(os.environ.get("SPIRALPIR_RUNTIME_SOURCE") or REPO)
    note = os.environ.get("SPIRALPIR_RUNTIME_NOTE")
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                         text=True, check=True).stdout.strip()
    if note:
        return f"{rev} ({note})"
    dirty = subprocess.run(["git", "-C", str(src), "status", "--porcelain", "--", "runtime"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return rev + (" + uncommitted runtime changes" if dirty else "")


def run_seed(name: str, run: int) -> int:
    """The bench's SPIRALPIR_TEST_SEED for run `run` of set `name` (distinct per run and set)."""
    digest = hashlib.sha256(f"{name}/{run}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def _merge(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One report from several runs: the first run's report with every noise stage pooled over
    all runs (variance = Σ sum of squares / Σ count), `correct` of all runs, and each run's
    variances in `noise_runs` (the variance of an error shared by all coefficients, e.g. the
    coherent first-dimension term, changes with every client key: pooling averages it)."""
    if len(runs) > 1 and all(r["noise"] == runs[0]["noise"] for r in runs[1:]):
        raise SystemExit("the runs measured identical noise: the bench is not reseeded per run")
    report = dict(runs[0])
    report["correct"] = all(r["correct"] for r in runs)
    report["correct_runs"] = [r["correct"] for r in runs]
    if len(runs) > 1:
        pooled = {}
        for stage in runs[0]["noise"]:
            ms = [r["noise"][stage] for r in runs]
            count = sum(m["count"] for m in ms)
            if count == 0:  # a stage this set does not have (e.g. folding with ν2 = 0)
                continue
            var = sum(m["variance"] * m["count"] for m in ms) / count
            pooled[stage] = {"count": count, "variance": var,
                             "log2_variance": math.log2(var) if var > 0 else None,
                             "max_abs": max(m["max_abs"] for m in ms)}
        report["noise"] = pooled
        report["noise_runs"] = {s: [r["noise"][s]["variance"] for r in runs] for s in pooled}
    return report


def _bench(name: str, lit: dict[str, Any], extra: list[str], repeat: int, build_dir: Path,
           jobs: int) -> tuple[Parameters, list[str], dict[str, Any]]:
    """Generate and build `name` from a parameter literal, run its bench `repeat` times with
    the noise hook; (parameters, the bench command, the merged report)."""
    params = Parameters.from_literal(lit)  # validates (errors name the field)
    gen = build_dir / "gen"
    src = codegen.generate(name, params.to_literal(), {}, gen, security={"note": "measurement"})
    inst = builder.build(src, build_dir, jobs=jobs, show_progress=False, targets=["bench"])
    cmd = [str(inst.bench), "--json", "--threads", "1", "--trials", "1", "--noise", *extra]
    runs = []
    for run in range(repeat):  # each run: a fresh client (keys), query and random database
        # the bench draws records, keys and queries from SPIRALPIR_TEST_SEED (a fixed default
        # when unset): one seed per run, else the runs repeat one realization
        env = {**os.environ, "SPIRALPIR_TEST_SEED": str(run_seed(name, run))}
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
        try:  # a response that decoded wrongly exits 1 but still reports ("correct": false)
            run = json.loads(proc.stdout)
        except json.JSONDecodeError:
            run = None
        if run is None or (proc.returncode != 0 and run.get("correct", True)):
            raise SystemExit(f"{name}: bench failed ({proc.returncode}): {proc.stderr[-2000:]}")
        runs.append(run)
    return params, cmd, _merge(runs)


def measure(name: str, build_dir: Path, jobs: int) -> Path:
    what, lit, extra, repeat = SETS[name]
    params, cmd, report = _bench(name, lit, extra, repeat, build_dir, jobs)
    doc = {
        "what": what,
        "command": (f"python tests/models/measure_noise.py {name}  (noise pooled over "
                    f"{repeat} run(s) of: SPIRALPIR_TEST_SEED=<run_seed({name!r}, run)> "
                    f"<{name}_bench> {' '.join(cmd[1:])})"),
        "commit": _commit(),
        "params": params.to_literal(),
        "bench": report,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    out = OUT / f"{name}.json"
    out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return out


def remeasure_file(path: Path, build_dir: Path, jobs: int, repeat: int = 1) -> Path:
    """Re-take a stored reference that is not one of SETS (tests/models/data/measured_variants/: the
    variant builds' CI twins) from the parameter literal it holds: `repeat` runs of the
    generated bench with --noise (as its original command; several runs pooled as for SETS:
    errors shared through the keys change with every client), the file rewritten in place with
    this command and commit."""
    doc = json.loads(path.read_text())
    name = path.stem
    extra = _IMPLICIT if doc["bench"].get("implicit_db") else []
    params, cmd, report = _bench(name, doc["params"], extra, repeat, build_dir, jobs)
    pooled = f"noise pooled over {repeat} runs of: " if repeat > 1 else ""
    doc.update({
        "command": (f"python tests/models/measure_noise.py --file {path.relative_to(REPO)}"
                    f"{f' --repeat {repeat}' if repeat > 1 else ''}  (the literal stored there; "
                    f"{pooled}<{name}_bench> {' '.join(cmd[1:])})"),
        "commit": _commit(),
        "params": params.to_literal(),
        "bench": report,
    })
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="sets to measure (default: all)")
    ap.add_argument("--build-dir", type=Path, default=REPO / "build" / "noise")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs pooled per --file reference (SETS fix their own)")
    ap.add_argument("--file", type=Path, action="append", default=[],
                    help="re-measure a stored reference from its own parameter literal "
                         "(e.g. tests/models/data/measured_variants/*.json); repeatable")
    a = ap.parse_args(argv)
    for path in a.file:
        print(remeasure_file(path.resolve(), a.build_dir.resolve(), a.jobs, a.repeat), flush=True)
    if a.file and not a.names:
        return 0
    if a.list:
        for k, (what, _, _, _) in SETS.items():
            print(f"{k:28s} {what}")
        return 0
    for name in a.names or list(SETS):
        if name not in SETS:
            print(f"unknown set {name!r}; --list shows them", file=sys.stderr)
            return 2
        print(measure(name, a.build_dir.resolve(), a.jobs), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
