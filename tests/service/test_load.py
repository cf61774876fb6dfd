"""A bounded run of the load test (bench_load.py): more clients than the server keeps and than
it admits at once, for a few seconds; no query may fail or come back wrong, and the server
logs no 5xx (resent 503s and re-uploads are the expected slowness)."""

from __future__ import annotations

from pathlib import Path

from bench_load import report, run
from spiralpir.optimizer.build import builder


def test_more_clients_than_the_server_keeps(demo_inst: builder.Instance, tmp_path: Path) -> None:
    r = run(clients=6, max_clients=2, seconds=8.0, workers=1, threads=1, work=tmp_path,
            extra=["--max-queue", "4"])
    print(report(r))
    assert r["queries"] >= 6, report(r)
    assert r["failed"] == {} and r["wrong"] == 0 and r["server_log_5xx"] == 0, report(r)
    assert r["resent_setup"] > 0, "6 clients in 2 places: some were evicted and came back"
    assert r["server"]["clients"] <= 2
