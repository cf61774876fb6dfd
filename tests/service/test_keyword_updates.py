"""Keyword updates end to end: change lines checked with line and field; random insert, replace
and delete batches landing while two threads look keys up with real decryption (every answer is
the value at the version it names, absent keys not found); an overflowing column refused with
nothing applied; a restart serving the updated table (keys found in the stored table); the
online endpoint and the offline `spiralpir update` of a keyword build as real processes; and a
short round of SIGKILLs during updates (keyword_torture.py)."""

from __future__ import annotations

import json
import random
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import keyword_torture
import pytest
import requests
from service_helpers import CLI, DEMO, ServerProcess
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.models.cuckoo_layout import max_keys
from spiralpir.optimizer.service import batch_wire, changes, keyword_client, keyword_table
from spiralpir.optimizer.service.binding import Build, ClientKeys
from spiralpir.optimizer.service.changes import BadChanges
from spiralpir.optimizer.service.keyword_server import KeywordServer
from spiralpir.optimizer.service.keyword_updates import StoredTable, open_table
from spiralpir.optimizer.service.pir_client import PirClient

TOKEN = "kw-admin-token-0123456789abcdef"


@pytest.mark.parametrize(("line", "message"), [
    ('{"key": "a", "value": "' + "x" * 40 + '"}', r"line 2: field 'value' is 40 bytes, longer "
                                                   r"than the \d+ a slot of this table holds"),
    ('{"key": "a", "value": "v", "colour": 1}', r"line 2: unknown field 'colour'"),
    ('{"key": "a"}', r"line 2: give exactly one of 'value' \(text\) and 'value_hex'"),
    ('{"key": 5, "value": "v"}', r"line 2: field 'key' must be a string"),
    ('{"key": "a", "delete": false}', r"line 2: field 'delete' must be true"),
    ('{"key": "a", "delete": true, "value": "v"}', r"line 2: field 'delete' must be true"),
    ('{"key": "a", "value_base64": "!!"}', r"line 2: field 'value_base64' is not base64"),
    ('{"index": 3, "value": "v"}', r"line 2: field 'index': an index change"),
    ('[1]', r"line 2: expected a JSON object"),
])
def test_bad_keyword_lines_name_line_and_field(line: str, message: str) -> None:
    with pytest.raises(BadChanges, match=message + r".*nothing was applied"):
        changes.parse_keyword('{"key": "ok", "value": "v"}\n' + line + "\n", "c", 20)


def test_keyword_lines_in_order() -> None:
    got = changes.parse_keyword('{"key": "é", "value_hex": "00ff"}\n\n{"key": "b", "value_base64":'
                                ' "AAE="}\n{"key": "é", "delete": true}\n', "c", 8)
    assert [(c.key, c.value) for c in got] == [("é".encode(), b"\x00\xff"), (b"b", b"\x00\x01"),
                                               ("é".encode(), None)]
    with pytest.raises(BadChanges, match="field 'key': a keyword change, but this is an index"):
        changes.parse('{"key": "a", "value": "v"}', "c", 10, 8)


@pytest.fixture(scope="module")
def ci_build(demo_inst: builder.Instance) -> Build:
    return Build(demo_inst, ci=True)


def _lookup(srv: KeywordServer, keys: ClientKeys, cid: str, key: bytes
            ) -> tuple[bytes | None, int]:
    """A real blocked lookup of ``key``: its value (None: absent) and the version answered."""
    kt = srv.keyword
    lay = kt.table.layout
    reply, _, _, version = srv.answer_keyword(cid, keyword_client.lookup_query(keys, lay, key))
    responses = batch_wire.unpack(reply, lay.h, srv.response_bytes, batch_wire.REPLY_MAGIC,
                                  "reply")
    bins = keyword_client.decode_bins(keys, responses)
    return keyword_table.find(lay, key, bins, kt.slot_size, srv.build.record_size), version


def _random_batch(rng: random.Random, state: dict[bytes, bytes], pool: list[bytes], cap: int,
                  n: int) -> tuple[str, dict[bytes, bytes]]:
    """A batch of n random lines over ``pool`` and the state after it (computed here)."""
    new = dict(state)
    lines = []
    for _ in range(n):
        key = rng.choice(pool)
        if key in new and rng.random() < 0.3:
            lines.append({"key": key.decode(), "delete": True})
            del new[key]
        else:
            value = rng.randbytes(rng.choice([0, 1, cap, rng.randrange(cap + 1)]))
            lines.append({"key": key.decode(), "value_hex": value.hex()})
            new[key] = value
    return "\n".join(json.dumps(x) for x in lines), new


def test_concurrent_lookups_see_one_version(ci_build: Build, tmp_path: Path,
                                            rng: random.Random) -> None:
    shape = keyword_torture.shape_of(ci_build, 2)
    cap = keyword_table.value_capacity(shape.slot_size, shape.tag_bytes)
    n = max_keys(shape.h, shape.rows, shape.columns, shape.slots) // 2
    db, pre = tmp_path / "kv.jsonl", tmp_path / "kv.pre"
    state = keyword_torture.write_keys(db, rng, n, cap)
    pool = list(state) + [f"new-{i}".encode() for i in range(n // 2)]
    stored = open_table(ci_build, shape, db, keyword_torture.OPTS, pre, lambda m: None, True)
    srv = KeywordServer(ci_build, stored.kt, preprocessed_dir=pre, threads=1, progress=False,
                        log=lambda m: None, version=stored.version, updatable=True)
    ku = stored.updater(srv.live)
    oracle = {0: dict(state)}
    hot = rng.sample(pool, 48)
    failures: list[str] = []
    seen: dict[int, int] = {}
    stop = threading.Event()

    def lookups(seed: int) -> None:
        keys = ClientKeys.new(ci_build.lib)
        cid = srv.setup(keys.public_params())
        local = random.Random(seed)
        while not stop.is_set():
            key = local.choice(hot) if local.random() < 0.7 else local.choice(pool)
            got, v = _lookup(srv, keys, cid, key)
            if got != oracle[v].get(key):
                failures.append(f"key {key!r} at version {v}: {got!r}")
            seen[v] = seen.get(v, 0) + 1
        keys.close()

    threads = [threading.Thread(target=lookups, args=(rng.randrange(1 << 30),))
               for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for v in range(1, 11):
            text, after = _random_batch(rng, oracle[v - 1], hot if v % 2 else pool, cap,
                                        rng.choice([1, 8, 60]))
            oracle[v] = after  # before it can be answered from
            report = ku.apply_text(text, f"batch {v}")
            assert report["version"] == v and report["keys"] == len(after), report
            threading.Event().wait(rng.uniform(0.0, 0.15))
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not failures, failures[:5]
    assert len(seen) >= 3, seen
    ku.close()
    assert srv.live is not None
    srv.live.close()
    stored.close()
    # a restart (read-only) finds every key in the stored table, and answers from the store
    again = open_table(ci_build, shape, db, keyword_torture.OPTS, pre, lambda m: None, False)
    notes: list[str] = []
    srv2 = KeywordServer(ci_build, again.kt, preprocessed_dir=pre, threads=1, progress=False,
                         log=notes.append, version=again.version)
    final = oracle[10]
    assert again.version == 10 and again.kt.keys == len(final) and srv2.loaded_from_cache, notes
    assert keyword_torture.table_values(again, pool) == final
    keys = ClientKeys.new(ci_build.lib)
    cid = srv2.setup(keys.public_params())
    for key in rng.sample(pool, 12):
        assert _lookup(srv2, keys, cid, key) == (final.get(key), 10)
    keys.close()
    srv2.close()
    again.close()


def _column_keys(stored: StoredTable, column: int, count: int) -> list[bytes]:
    lay = stored.kt.table.layout
    out: list[bytes] = []
    i = 0
    while len(out) < count:
        key = f"crowd-{i}".encode()
        if lay.locate(key)[0] == column:
            out.append(key)
        i += 1
    return out


def test_overflowing_column_is_refused_whole(ci_build: Build, tmp_path: Path,
                                             rng: random.Random) -> None:
    shape = keyword_torture.shape_of(ci_build, 2)
    cap = keyword_table.value_capacity(shape.slot_size, shape.tag_bytes)
    db = tmp_path / "kv.jsonl"
    state = keyword_torture.write_keys(db, rng, 40, cap)
    stored = open_table(ci_build, shape, db, keyword_torture.OPTS, None, lambda m: None, True)
    ku = stored.updater()
    victim = next(iter(state))
    pool = [*state, b"x1", b"nobody"]
    ku.apply_text(json.dumps({"key": victim.decode(), "value": "before"}), "first")
    state[victim] = b"before"
    table_file = stored.paths.table.read_bytes()
    column = stored.kt.table.layout.locate(victim)[0]
    room = shape.rows * shape.slots
    crowd = _column_keys(stored, column, room + 1)
    pool += crowd
    text = "\n".join([json.dumps({"key": victim.decode(), "value": "after"})]
                     + [json.dumps({"key": k.decode(), "value": "x"}) for k in crowd])
    with pytest.raises(BadChanges, match=rf"does not fit its column {column} \(\d+ of its "
                                         rf"{room} slots taken, load 1\.000\) .*nothing was "
                                         "applied"):
        ku.apply_text(text, "crowd")
    assert ku.updater.version == 1 and stored.paths.table.read_bytes() == table_file
    assert keyword_torture.table_values(stored, pool) == state
    with pytest.raises(BadChanges, match=r"line 2: field 'key': delete of key \"nobody\", which "
                                         "the table does not hold"):
        ku.apply_text('{"key": "x1", "value": "v"}\n{"key": "nobody", "delete": true}', "del")
    assert keyword_torture.table_values(stored, pool) == state
    # a crowd filling the column to 90 %, then nearly full, fits: the second batch moves keys
    # already stored along the column (cuckoo moves); a fuller try that does not fit is
    # refused whole like the first
    taken = sum(1 for k in state if stored.kt.table.layout.locate(k)[0] == column)
    first = int(0.9 * room) - taken

    def lines(keys: list[bytes]) -> str:
        return "\n".join(json.dumps({"key": k.decode(), "value": k.decode()}) for k in keys)

    assert ku.apply_text(lines(crowd[:first]), "fill")["version"] == 2
    state.update({k: k for k in crowd[:first]})
    for fill in (0.99, 0.98, 0.97, 0.96, 0.95):
        fit = crowd[first: int(fill * room) - taken]
        try:
            report = ku.apply_text(lines(fit), "fit")
            break
        except BadChanges as exc:
            assert f"column {column}" in str(exc)
            assert keyword_torture.table_values(stored, pool) == state
    assert report["version"] == 3 and report["inserted"] == len(fit) and report["moves"] > 0
    state.update({k: k for k in fit})
    assert keyword_torture.table_values(stored, pool) == state
    ku.close()
    stored.close()


def test_edited_key_file_starts_a_fresh_table(ci_build: Build, tmp_path: Path,
                                              rng: random.Random) -> None:
    shape = keyword_torture.shape_of(ci_build, 2)
    db = tmp_path / "kv.jsonl"
    state = keyword_torture.write_keys(db, rng, 30, 8)
    stored = open_table(ci_build, shape, db, keyword_torture.OPTS, None, lambda m: None, True)
    ku = stored.updater()
    ku.apply_text('{"key": "extra", "value": "e"}', "one")
    ku.apply_text('{"key": "extra", "value": "f"}', "two")
    ku.close()
    stored.close()
    pool = [*state, b"extra"]
    # a restart keeps the updated table; an edited key file is filled into a fresh table
    again = open_table(ci_build, shape, db, keyword_torture.OPTS, None, lambda m: None, True)
    assert again.version == 2 and keyword_torture.table_values(again, pool) == {
        **state, b"extra": b"f"}
    again.close()
    first = next(iter(state))
    db.write_text(json.dumps({"key": first.decode(), "value": "only"}) + "\n")
    notes: list[str] = []
    fresh = open_table(ci_build, shape, db, keyword_torture.OPTS, None, notes.append, True)
    assert keyword_torture.table_values(fresh, pool) == {first: b"only"}
    assert fresh.version == 3 and fresh.kt.keys == 1, notes  # versions go on after the journal
    fresh.close()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=600)


def test_online_and_offline_keyword_updates(ci_build: Build, tmp_path: Path, rng: random.Random,
                                            serve_process: Callable[[list[str], Path],
                                                                    ServerProcess]) -> None:
    shape = keyword_torture.shape_of(ci_build, 2)
    db = tmp_path / "kv.jsonl"
    state = keyword_torture.write_keys(db, rng, 50, 8)
    (tmp_path / "keyword.json").write_text(json.dumps({"keyword": shape.__dict__}))
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    args = ["--build", str(DEMO), "--ci", "--db", str(db), "--keyword-table",
            str(tmp_path / "keyword.json"), "--threads", "1"]
    srv = serve_process([*args, "--admin-token-file", str(token)], tmp_path / "server.log")
    old = next(iter(state))
    gone = list(state)[1]
    auth = {"Authorization": "Bearer " + TOKEN}
    body = (json.dumps({"key": old.decode(), "value": "nouveau"}) + "\n"
            + json.dumps({"key": gone.decode(), "delete": True}) + "\n"
            + json.dumps({"key": "added", "value_base64": "AAEC"}) + "\n")
    r = requests.post(srv.url + "/v1/admin/update", data=body.encode(), headers=auth, timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["version"] == 1 and r.json()["inserted"] == 1 and r.json()["deleted"] == 1
    r = requests.post(srv.url + "/v1/admin/update", data=b'{"key": "added", "value": 5}',
                      headers=auth, timeout=60)
    assert r.status_code == 400 and "request body line 1: field 'value'" in r.json()["error"]
    client = PirClient(srv.url, build=ci_build, state_path=tmp_path / "state")
    try:
        got = client.lookup(old)
        assert got.value == b"nouveau" and got.version == 1
        assert client.get(gone) is None and client.get(b"added") == b"\x00\x01\x02"
        # online through the CLI; an offline update meanwhile is refused (the server writes)
        (tmp_path / "c0.jsonl").write_text('{"key": "viacli", "value": "cli"}\n')
        r1 = _cli("update", "--server", srv.url, "--admin-token-file", str(token), "--changes",
                  str(tmp_path / "c0.jsonl"))
        assert r1.returncode == 0 and "database version 2" in r1.stdout, r1.stderr
        assert "1 inserted" in r1.stdout and client.get(b"viacli") == b"cli"
        offline = ["update", "--build", str(DEMO), "--ci", "--db", str(db), "--keyword-table",
                   str(tmp_path / "keyword.json"), "--changes", str(tmp_path / "c0.jsonl")]
        busy = _cli(*offline)
        assert busy.returncode == 2 and "is in use" in busy.stderr, busy.stderr
    finally:
        client.close()
    srv.stop()
    # offline, on the stopped server's files, then a restart (read-only) serves the result
    ch = tmp_path / "c.jsonl"
    ch.write_text('{"key": "added", "delete": true}\n{"key": "later", "value": "v2"}\n')
    offline[-1] = str(ch)
    r2 = _cli(*offline)
    assert r2.returncode == 0 and "database version 3" in r2.stdout, r2.stderr
    again = serve_process(args, tmp_path / "again.log")
    client = PirClient(again.url, build=ci_build, state_path=tmp_path / "state2")
    try:
        assert client.get(old) == b"nouveau" and client.get(gone) is None
        assert client.get(b"added") is None
        later = client.lookup(b"later")
        assert later.value == b"v2" and later.version == 3 and client.get(b"viacli") == b"cli"
        assert client.get(list(state)[2]) == state[list(state)[2]]
    finally:
        client.close()


def test_kill_round(ci_build: Build, rng: random.Random) -> None:
    """A short round of keyword_torture.py."""
    tally = keyword_torture.run(8.0, rng.randrange(1 << 32), ci_build)
    assert tally.kills >= 2 and tally.checked >= 2, tally.line()
