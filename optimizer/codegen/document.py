"""Plan documents: the JSON a plan writes and a generated build keeps as params.json.

A document is {"params": literal, "estimate": {...}, "security": {...}}, and for a build that
splits into more shards than the runtime's default, {"shards": {"shard_bits": S}} (a sharded plan's
chosen split, or `generate --max-shards 2^S`); the literal is validated by `Parameters`
(unknown keys are errors, every failure names the field) and written canonically (sorted keys),
so regeneration is a pure function of the document.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spiralpir.estimator.jsonfile import read_json_object
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.params.parameters import Parameters


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, indent=2) + "\n"


def normalize_params(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a plan's ``params`` literal with ``Parameters`` (unknown keys are errors,
    every failure names the field) and return the canonical literal."""
    if not isinstance(raw, Mapping):
        raise SpiralpirError("'params' must be a JSON object")
    lit = Parameters.from_literal(dict(raw)).to_literal()
    return dict(json.loads(json.dumps(lit, sort_keys=True)))


def struct_fields(lit: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of the generated params struct (templates/params.hpp.j2) from a canonical
    literal."""
    p = Parameters.from_literal(dict(lit))
    return {
        "poly_len": p.poly_len, "moduli": list(p.moduli), "variant": p.variant,
        "noise_width": p.noise_width, "secret_dist": p.secret_kind,
        "secret_plus": p.secret_plus, "secret_minus": p.secret_minus, "n": p.n,
        "nu_1": p.nu_1, "nu_2": p.nu_2, "p": p.p, "q2_bits": p.q2_bits, "t_gsw": p.t_gsw,
        "t_conv": p.t_conv, "t_exp_left": p.t_exp_left, "t_exp_right": p.t_exp_right,
        "instances": p.instances, "db_item_size": p.db_item_size,
        "num_records": p.records, "record_size": p.record_size,
        "query_buckets": p.query_buckets,
    }


# a build answers splits into 2^1 .. 2^S shards for S up to the larger of DEFAULT_SHARD_BITS
# and its document's shards.shard_bits, within nu_2 (runtime shard.hpp: kDefaultShardBits,
# kShardBitsCeiling; each S compiles the first-dimension kernel once more)
DEFAULT_SHARD_BITS = 3
MAX_SHARD_BITS = 10


def shard_bits_of(doc: Mapping[str, Any], nu_2: int) -> int | None:
    """The document's shards.shard_bits (a sharded plan's split; None: none given), checked against
    the runtime's ceiling and the parameters' nu_2."""
    section = doc.get("shards")
    if section is None:
        return None
    if not isinstance(section, Mapping):
        raise SpiralpirError("plan document's 'shards' must be an object")
    bits = section.get("shard_bits")
    if isinstance(bits, bool) or not isinstance(bits, int) or not 0 <= bits <= MAX_SHARD_BITS:
        raise SpiralpirError(f"plan document's shards.shard_bits: expected an integer S in "
                             f"[0, {MAX_SHARD_BITS}] (2^S shards), got {bits!r}")
    if bits > nu_2:
        raise SpiralpirError(f"plan document's shards.shard_bits: 2^{bits} shards exceed the "
                             f"2^nu_2 = {1 << nu_2} folding columns the parameters split along")
    return bits


def max_shard_bits(doc: Mapping[str, Any], nu_2: int) -> int | None:
    """The params struct's max_shard_bits: the document's split where it exceeds the default
    (None: the runtime's default, so builds without a wide split render as before)."""
    bits = shard_bits_of(doc, nu_2)
    return bits if bits is not None and bits > DEFAULT_SHARD_BITS else None


def parse_plan_document(doc: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a plan JSON document (or a checked-in params.json) into (params, estimate)."""
    # batch, keyword: the cli writes NAME/batch.json, NAME/keyword.json
    allowed = {"params", "estimate", "security", "batch", "keyword", "shards"}
    unknown = sorted(set(doc) - allowed)
    if unknown:
        raise SpiralpirError(f"unknown top-level key(s) in plan document: {', '.join(unknown)}")
    if "params" not in doc:
        raise SpiralpirError("plan document has no 'params' object")
    estimate = doc.get("estimate", {})
    if not isinstance(estimate, dict):
        raise SpiralpirError("plan document's 'estimate' must be an object")
    return normalize_params(doc["params"]), dict(estimate)


def load_document(path: Path) -> dict[str, Any]:
    """A plan document, a build's params.json or a server's ``GET /v1/params`` reply (whose
    ``plan`` is its build's params.json), checked (parse_plan_document) so that a bad field is
    reported with the file that holds it."""
    doc = read_json_object(path, "parameters file")
    if "api" in doc and isinstance(doc.get("plan"), dict):
        doc = doc["plan"]
    try:
        parse_plan_document(doc)
    except SpiralpirError as exc:
        raise SpiralpirError(f"parameters file {path}: {exc}") from None
    return doc
