"""The sharded plan (plan/shard_plan.py, models/shard_model.py, `plan --machines`,
`shard-model`): the split fits the machines' memory and count, the coordinator's bytes are
the partial answers' and queries' sizes (FORMATS.md §12, computed here from the format's
table, not by the model), more machines never make the chosen latency worse, and a database
that fits nowhere is a one-line error."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from spiralpir.optimizer.models.profile import Profile
from spiralpir.optimizer.models.shard_model import Machine, choose_bits
from spiralpir.optimizer.params import sizes
from spiralpir.optimizer.plan.errors import InvalidOption
from spiralpir.optimizer.plan.shard_plan import plan_sharded

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from cli_run import run_cli  # noqa: E402

GIB = 1 << 30


def test_chosen_split_fits_and_the_bytes_are_the_formats() -> None:
    profile = Profile.load(None)
    machine = Machine(16, 256 * GIB)
    latencies = []
    for machines in (16, 64, 256):
        sp = plan_sharded(1 << 30, 256, machines, machine, profile=profile)
        b, p = sp.best, sp.params
        assert b.fits and b.shards <= machines and b.bits <= p.nu_2
        assert b.shard_db_bytes * b.shards >= sizes.preprocessed_db_bytes(p)
        assert b.shard_db_bytes <= 0.85 * 256 * GIB
        nc = 1 if p.variant in ("pack", "stream_pack") else p.n
        inst = p.instances * (p.n * p.n if nc != p.n else 1)
        poly = p.poly_len * len(p.moduli) * 4
        partial = 32 + 8 + inst * (nc + 1) * nc * poly
        gsw = b.bits * (nc + 1) * (nc + 1) * p.t_gsw * poly
        assert b.coordinator_bytes_in == b.shards * partial + gsw
        assert b.coordinator_bytes_out == b.shards * sizes.query_bytes(p)
        latencies.append(b.latency_seconds)
    assert latencies[0] >= latencies[1] >= latencies[2]


def test_every_split_is_modelled_and_small_machines_are_refused() -> None:
    profile = Profile.load(None)
    sp = plan_sharded(1 << 20, 256, 4, Machine(2, 64 * GIB), profile=profile)
    bits = sorted(e.bits for e in choose_bits(sp.params, 4, sp.machine, profile))
    assert bits == list(range(min(2, sp.params.nu_2) + 1))
    with pytest.raises(InvalidOption, match="no split of 1073741824 x 256 B fits 4 machines"):
        plan_sharded(1 << 30, 256, 4, Machine(16, 8 * GIB), profile=profile)


def test_plan_machines_and_shard_model_commands(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(monkeypatch, capsys, "plan", "--records", "2^30", "--record-size", "256",
                "--machines", "64", "--memory-per-machine", "128GiB", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["shards"]["shards"] <= 64 and doc["shards"]["coordinator_bytes_per_query"] > 0
    r = run_cli(monkeypatch, capsys, "shard-model", "--machines", "16,64")
    assert r.code == 0, r.err
    assert r.out.count("chosen split: 2^") == 2 and "coordinator network per query" in r.out
    r = run_cli(monkeypatch, capsys, "shard-model", "--machines", "16,x")
    assert r.code == 2 and "expected counts such as 16,64,256" in r.err
