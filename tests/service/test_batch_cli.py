"""`spiralpir serve` of a batch layout and `spiralpir query --index I,J,K` against it, as real
processes: records in the caller's order (duplicates included) on stdout, in --json and in
--out; several indices against a one-database server are refused."""

from __future__ import annotations

import json
import random
import subprocess
from collections.abc import Callable
from pathlib import Path

from service_helpers import CLI, DEMO, ServerProcess
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.models.bucket_layout import BucketLayout
from spiralpir.optimizer.models.placement_bound import min_buckets

RS = 32


def query(url: str, indices: str, state: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "query", "--server", url, "--index", indices, "--state",
                           str(state), "--build", str(DEMO), *extra],
                          capture_output=True, text=True, timeout=600)


def test_serve_and_query_a_batch(demo_inst: builder.Instance, tmp_path: Path,
                                 rng: random.Random,
                                 serve_process: Callable[[list[str], Path], ServerProcess],
                                 sample_server: ServerProcess) -> None:
    n = 1500
    lay = BucketLayout(n, 4, min_buckets(8, 4), rng.randbytes(16).hex(), 0).sized()
    (tmp_path / "batch.json").write_text(json.dumps({"batch": lay.to_json()}))
    data = rng.randbytes(n * RS)
    (tmp_path / "db.bin").write_bytes(data)
    srv = serve_process(["--build", str(DEMO), "--ci", "--db", str(tmp_path / "db.bin"),
                         "--batch-layout", str(tmp_path / "batch.json"), "--threads", "2",
                         "--preprocessed", str(tmp_path / "stores")], tmp_path / "server.log")
    idx = [*rng.sample(range(n), 6)]
    idx = [idx[0], *idx, idx[2], n - 1]
    text = ",".join(map(str, idx))
    proc = query(srv.url, text, tmp_path / "state.json", "--json", "--out",
                 str(tmp_path / "out.bin"))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    want = [data[i * RS:(i + 1) * RS] for i in idx]
    assert [r["index"] for r in report["records"]] == idx
    assert [bytes.fromhex(r["record_hex"]) for r in report["records"]] == want
    assert (tmp_path / "out.bin").read_bytes() == b"".join(want)
    assert report["buckets"] == lay.buckets and report["distinct_records"] == len(set(idx))
    proc = query(srv.url, text, tmp_path / "state.json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [w for i, r in zip(idx, want, strict=True)
                                   for w in (str(i), r.hex())]
    assert len(list((tmp_path / "stores").glob("bucket-*.spiralpir-db"))) == lay.buckets
    # several indices need a batch build
    proc = query(sample_server.url, "1,2", tmp_path / "s2.json")
    assert proc.returncode != 0 and "needs a batch build" in proc.stderr
    proc = query(srv.url, "1,x", tmp_path / "state.json")
    assert proc.returncode != 0 and "--index" in proc.stderr
