"""Hypothesis strategies shared by the property tests of tests/fuzz: arbitrary JSON values and
mutations of a valid document (a field replaced, dropped or added, at any depth) or of its
bytes (flips, cuts, insertions, invalid UTF-8)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

# numbers that break naive parsers: huge, negative, non-finite, unicode digits as strings
_AWKWARD = st.sampled_from([
    0, -1, 1 << 70, -(1 << 70), 10**400, 1e308, -0.0, True, False, None, "", "١٢", "²", "0x10",
    " 7", "NaN", "inf", [], {}, [1, 2], {"a": 1}, "é",
])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
    | _AWKWARD,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12,
)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every location inside a JSON value (dict keys and list indices)."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


def _replace(doc: Any, path: tuple[Any, ...], value: Any, drop: bool) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        out = dict(doc)
        if drop and not rest:
            out.pop(head, None)
        else:
            out[head] = _replace(doc[head], rest, value, drop)
        return out
    out_list = list(doc)
    if drop and not rest:
        del out_list[head]
    else:
        out_list[head] = _replace(doc[head], rest, value, drop)
    return out_list


@st.composite
def mutated_json(draw: st.DrawFn, doc: Any) -> Any:
    """`doc` with one to three locations replaced by arbitrary values, dropped, or given an
    extra key."""
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        if draw(st.booleans()):  # half the time a top-level field: whole sections change type
            paths = [p for p in paths if len(p) <= 1]
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "drop", "add"]))
        if action == "drop" and path:
            doc = _replace(doc, path, None, drop=True)
        elif action == "add":
            target = doc
            for p in path:
                target = target[p]
            if isinstance(target, dict):
                doc = _replace(doc, path, {**target, draw(st.text(max_size=8)): draw(JSON_VALUES)},
                               drop=False)
        else:
            doc = _replace(doc, path, draw(st.one_of(_AWKWARD, JSON_VALUES)), drop=False)
    return doc


@st.composite
def mutated_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    """`data` cut, extended, or with bytes flipped, replaced by invalid UTF-8 or removed."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.sampled_from(["flip", "cut", "insert", "invalid_utf8", "delete"]))
        pos = draw(st.integers(0, max(len(buf) - 1, 0)))
        if action == "flip" and buf:
            buf[pos] ^= 1 << draw(st.integers(0, 7))
        elif action == "cut":
            del buf[pos:]
        elif action == "insert":
            buf[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif action == "invalid_utf8":
            buf[pos:pos] = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"]))
        elif buf:
            del buf[pos]
    return bytes(buf)


@st.composite
def file_contents(draw: st.DrawFn, doc: Any) -> bytes:
    """A file that started as the JSON document `doc`: mutated as JSON, as bytes, or both, or
    replaced by arbitrary JSON."""
    kind = draw(st.sampled_from(["json"] * 5 + ["bytes", "both", "other"]))
    if kind == "other":
        return json.dumps(draw(JSON_VALUES)).encode()
    value = draw(mutated_json(doc)) if kind in ("json", "both") else doc
    text = json.dumps(value, indent=1).encode()
    return draw(mutated_bytes(text)) if kind in ("bytes", "both") else text
