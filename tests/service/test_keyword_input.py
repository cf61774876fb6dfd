"""Reading keyword databases: JSON Lines and CSV, text and base64 values; duplicate keys,
over-long values and malformed lines are errors naming where; nothing is dropped. And the
table's slots: every key's value recovered from its slot, absent keys absent (no PIR)."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

import pytest
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service.keyword_input import (
    KeywordData,
    KeywordOptions,
    read_keyword_db,
)
from spiralpir.optimizer.service.keyword_table import (
    TableShape,
    find,
    make_table,
    slot_size_for,
)


def jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_jsonl_text_and_base64(tmp_path: Path, rng: random.Random) -> None:
    rows = [{"key": f"k{i}", "value": f"v{i} ü"} for i in range(50)]
    data = read_keyword_db(jsonl(tmp_path / "a.jsonl", rows))
    assert data.keys == [f"k{i}".encode() for i in range(50)]
    assert data.values == [f"v{i} ü".encode() for i in range(50)]
    raw = [rng.randbytes(rng.randrange(40)) for _ in range(20)]
    rows = [{"key": f"k{i}", "value": base64.b64encode(v).decode()} for i, v in enumerate(raw)]
    data = read_keyword_db(jsonl(tmp_path / "b.jsonl", rows), KeywordOptions(base64_values=True))
    assert data.values == raw and data.longest == max(map(len, raw))


def test_csv_columns(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text('id,url,note\n1,"https://a, b",x\n2,https://c,"y\nz"\n',
                                    encoding="utf-8")
    data = read_keyword_db(tmp_path / "a.csv",
                           KeywordOptions(key_column="url", value_column="note"))
    assert data.keys == [b"https://a, b", b"https://c"] and data.values == [b"x", b"y\nz"]
    with pytest.raises(SpiralpirError, match=r"no column 'key' in the header \(--key-column"):
        read_keyword_db(tmp_path / "a.csv")


def test_duplicate_key_names_both_lines(tmp_path: Path) -> None:
    rows = [{"key": "a", "value": "1"}, {"key": "b", "value": "2"}, {"key": "a", "value": "3"}]
    p = jsonl(tmp_path / "d.jsonl", rows)
    with pytest.raises(SpiralpirError, match=rf'line 3 of {p}: key "a" already given at line '
                       rf"1 of {p}"):
        read_keyword_db(p)
    (tmp_path / "d.csv").write_text("key,value\nx,1\ny,2\nx,3\n")
    with pytest.raises(SpiralpirError, match='line 4 of .*key "x" already given at line 2'):
        read_keyword_db(tmp_path / "d.csv")


def test_over_long_value_names_its_key(tmp_path: Path) -> None:
    rows = [{"key": "short", "value": "x" * 10}, {"key": "long one", "value": "y" * 11}]
    p = jsonl(tmp_path / "o.jsonl", rows)
    assert len(read_keyword_db(p, max_value=11).keys) == 2
    with pytest.raises(SpiralpirError, match='line 2 .*key "long one" is 11 bytes, longer '
                       "than the table's 10"):
        read_keyword_db(p, max_value=10)
    data = read_keyword_db(p)
    with pytest.raises(SpiralpirError, match='key "long one" is 11 bytes, longer than the 10 '
                       "a 17-byte slot holds"):
        make_table(data, TableShape(2, 2, 1, 2, 6, 17))


@pytest.mark.parametrize("line,problem", [
    ('{"key": "a"}', 'expected {"key": ..., "value": ...}'),
    ('{"key": "a", "value": "b", "x": 1}', "and nothing else"),
    ('{"key": 1, "value": "b"}', "'key' must be a string"),
    ('{"key": "a", "value": 5}', "'value' must be a string"),
    ("[1", "not a JSON object"),
])
def test_malformed_lines(tmp_path: Path, line: str, problem: str) -> None:
    p = tmp_path / "m.jsonl"
    p.write_text('{"key": "ok", "value": "v"}\n' + line + "\n")
    with pytest.raises(SpiralpirError, match=f"line 2 of {p}: .*" + problem.replace(
            "{", r"\{").replace("}", r"\}").replace(".", r"\.").replace("(", r"\(")):
        read_keyword_db(p)


def test_bad_base64_empty_and_unknown_files(tmp_path: Path) -> None:
    p = jsonl(tmp_path / "b.jsonl", [{"key": "a", "value": "not base64!"}])
    with pytest.raises(SpiralpirError, match="line 1 .*'value' is not base64"):
        read_keyword_db(p, KeywordOptions(base64_values=True))
    (tmp_path / "e.jsonl").write_text("\n\n")
    with pytest.raises(SpiralpirError, match="holds no keys"):
        read_keyword_db(tmp_path / "e.jsonl")
    with pytest.raises(SpiralpirError, match="a keyword database is a .jsonl or .csv file"):
        read_keyword_db(tmp_path / "x.bin")


def test_table_slots_hold_every_value(rng: random.Random) -> None:
    keys = list(dict.fromkeys(rng.randbytes(rng.randrange(1, 30)) for _ in range(5000)))
    values = [rng.randbytes(rng.randrange(0, 41)) for _ in keys]
    size = slot_size_for(40, 6)
    record = size + 3  # the build's record size may exceed the slot's
    shape = TableShape(h=4, rows=64, columns=16, slots=8, tag_bytes=6, slot_size=size)
    kt = make_table(KeywordData(keys, values, "random"), shape)
    assert kt.records.num_records == shape.capacity and kt.records.record_size == size
    table = bytes(kt.records.data)
    lay = kt.table.layout

    def fetch(key: bytes) -> list[bytes]:
        """The key's h bins as a client decodes them: each plaintext's slots, records of
        ``record`` bytes (slot bytes then zeros)."""
        column, rows, _ = lay.locate(key)
        out = []
        for r in rows:
            b = lay.bin_of(r, column)
            out.append(b"".join(table[(b * shape.slots + s) * size:(b * shape.slots + s + 1) * size]
                                + bytes(record - size) for s in range(shape.slots)))
        return out

    for k, v in zip(keys, values, strict=True):
        assert find(lay, k, fetch(k), size, record) == v
    present = set(keys)
    for _ in range(2000):
        k = rng.randbytes(rng.randrange(1, 30))
        if k not in present:
            assert find(lay, k, fetch(k), size, record) is None
    # the same keys give the same table (seed from the keys), so stores are reused
    again = make_table(KeywordData(keys, values, "random"), shape)
    assert again.table.layout.seed == lay.seed and bytes(again.records.data) == table
