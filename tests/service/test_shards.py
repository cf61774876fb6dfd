"""Shard sets on disk (service/shards.py, `spiralpir shard`): the shards' partial answers,
combined, are byte for byte the one-process server's response and decode to the record; a
damaged, swapped or foreign shard file and a malformed manifest are refused with one line."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from service_helpers import CLI, DEMO
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.shard_model import converted_query_bytes, partial_answer_bytes
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service import sample_db as sampledb
from spiralpir.optimizer.service import shards, store
from spiralpir.optimizer.service.binding import (
    Build,
    ClientKeys,
    PublicParams,
    ServerDb,
    combine_shards,
    prepare_for_shards,
)


@pytest.fixture(scope="module")
def build(demo_inst: builder.Instance) -> Build:
    return Build(demo_inst)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("shards") / "sample.db"
    sampledb.write_sample_db(path)
    return path


@pytest.fixture(scope="module")
def whole(build: Build, sample: Path) -> ServerDb:
    db = ServerDb(build.lib, 2)
    recs = database.read_records(sample, build.record_size)
    db.load_records(recs.data, recs.num_records, recs.record_size)
    return db


@pytest.fixture(scope="module")
def four(build: Build, sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4-shard set written by the command itself."""
    out = tmp_path_factory.mktemp("four")
    proc = subprocess.run([*CLI, "shard", "--build", str(DEMO), "--db", str(sample),
                           "--shards", "4", "--out", str(out), "--threads", "2"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "wrote 4 shards of 65536 records x 32 bytes" in proc.stdout
    return out


@pytest.mark.parametrize("count", [2, 4])
def test_combined_partial_answers_equal_the_one_process_response(
        build: Build, sample: Path, whole: ServerDb, four: Path, tmp_path: Path, count: int,
        rng: random.Random) -> None:
    if count == 4:
        directory = four
    else:
        recs = database.read_records(sample, build.record_size)
        shards.write_shards(build, recs, count, tmp_path, threads=2, progress=False,
                            log=lambda _m: None)
        directory = tmp_path
    manifest = shards.read_manifest(directory)
    assert (manifest.shards, manifest.num_records) == (count, sampledb.SAMPLE_RECORDS)
    dbs = [shards.open_shard(build, manifest, s, 1) for s in range(count)]
    keys = ClientKeys.new(build.lib, rng.randbytes(32))
    pp = PublicParams(build.lib, keys.public_params())
    for index in [rng.randrange(sampledb.SAMPLE_RECORDS) for _ in range(3)]:
        query = keys.query(index)
        want, _ = whole.answer(pp, query)
        carrier = rng.randrange(count)
        parts = [db.answer(pp, query, db.index == carrier)[0] for db in dbs]
        params = Parameters.from_literal(build.params)  # the shard model's sizes are these
        assert sorted({len(x) for x in parts}) == sorted(
            {partial_answer_bytes(params, manifest.bits, g) for g in (False, True)})
        rng.shuffle(parts)  # any order of arrival
        got = combine_shards(pp, parts)
        assert got == want, f"record {index}: sharded response differs"
        assert keys.decode(index, got, build.record_size) == sampledb.sample_record(index)
        shard_query = prepare_for_shards(pp, query, 2)  # the coordinator expanding once
        assert len(shard_query) == converted_query_bytes(params)
        parts = [db.answer_expanded(shard_query)[0] for db in dbs]
        assert combine_shards(pp, parts, 1, shard_query) == want


def test_damaged_swapped_or_foreign_shards_are_refused(build: Build, four: Path,
                                                        tmp_path: Path) -> None:
    d = tmp_path / "set"
    shutil.copytree(four, d)
    manifest = shards.read_manifest(d)
    first, second = manifest.entries[0].path, manifest.entries[1].path
    with open(first, "r+b") as fh:  # one flipped bit in the middle of shard 0's words
        fh.seek(manifest.object_bytes // 2)
        byte = fh.read(1)[0]
        fh.seek(manifest.object_bytes // 2)
        fh.write(bytes([byte ^ 1]))
    with pytest.raises(store.StoreRejected, match="does not match its checksum"):
        shards.open_shard(build, manifest, 0)
    shutil.copy(second, first)  # shard 1's file in shard 0's place: intact, but not shard 0
    with pytest.raises(store.StoreRejected):
        shards.open_shard(build, manifest, 0)
    doc = json.loads((d / shards.MANIFEST).read_text())
    doc["params_hash"] = "00" * 8
    (d / shards.MANIFEST).write_text(json.dumps(doc))
    with pytest.raises(SpiralpirError, match="shards of build demo"):
        shards.open_shard(build, shards.read_manifest(d), 1)
    del doc["files"][3]
    (d / shards.MANIFEST).write_text(json.dumps(doc))
    with pytest.raises(SpiralpirError, match="field 'files' lists 3 shards, expected 4"):
        shards.read_manifest(d)
    (d / shards.MANIFEST).unlink()
    with pytest.raises(SpiralpirError, match="no manifest"):
        shards.read_manifest(d)


def test_a_build_generated_for_sixteen_shards_splits_into_sixteen(
        build: Build, sample: Path, whole: ServerDb, tmp_path: Path, rng: random.Random) -> None:
    """`generate --max-shards 16` on the demo's parameters: the build compiles the split into
    2^4 shards (the default stops at 2^3), whose partial answers combine, byte for byte, into
    the one-process response of the demo build (same parameters, same params hash)."""
    proc = subprocess.run([*CLI, "generate", "--params", str(DEMO / "params.json"),
                           "--max-shards", "16", "--name", "demo_sixteen", "--out",
                           str(tmp_path / "gen")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    source = tmp_path / "gen" / "demo_sixteen"
    assert json.loads((source / "params.json").read_text())["shards"] == {"shard_bits": 4}
    wide = Build(builder.build(source, show_progress=False, targets=["library"]))
    assert int(wide.lib.fn("shard_max_bits")()) == 4
    assert int(build.lib.fn("shard_max_bits")()) == 3
    recs = database.read_records(sample, wide.record_size)
    manifest = shards.write_shards(wide, recs, 16, tmp_path / "set", threads=2, progress=False,
                                   log=lambda _m: None)
    assert manifest.bits == 4 and len(manifest.entries) == 16
    dbs = [shards.open_shard(wide, manifest, s, 1) for s in range(16)]
    keys = ClientKeys.new(build.lib, rng.randbytes(32))
    pp = PublicParams(build.lib, keys.public_params())  # the demo's: the same parameters
    wide_pp = PublicParams(wide.lib, keys.public_params())
    for index in [rng.randrange(sampledb.SAMPLE_RECORDS) for _ in range(2)]:
        query = keys.query(index)
        want, _ = whole.answer(pp, query)
        carrier = rng.randrange(16)
        parts = [db.answer(wide_pp, query, db.index == carrier)[0] for db in dbs]
        rng.shuffle(parts)
        got = combine_shards(wide_pp, parts)
        assert got == want, f"record {index}: 16-shard response differs from one process"
        assert keys.decode(index, got, build.record_size) == sampledb.sample_record(index)


def test_shard_counts_outside_the_build_are_one_line_errors(sample: Path, tmp_path: Path) -> None:
    columns = 1 << json.loads((DEMO / "params.json").read_text())["params"]["nu_2"]
    assert columns >= 16
    for count, why in ((3, "must be a power of two"), (16, "at most 8 shards; generate it "
                        "with --max-shards 16"),
                       (2 * columns, f"at most 2^nu_2 = {columns} shards")):
        proc = subprocess.run([*CLI, "shard", "--build", str(DEMO), "--db", str(sample),
                               "--shards", str(count), "--out", str(tmp_path / "x")],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode != 0 and why in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
