"""The variant models against what the runtime measured (recorded `bench --json --noise` runs
of the checked-in variant builds' CI twins, tests/models/data/measured_variants/*.json — see each
file's "command"): serialized sizes exactly. Their noise (every stage of the runtime's hook
within a factor 1.55 of the model both ways, failure probability never below what the measured noise
implies) is checked with every other noise reference in tests/models/test_measured.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.params.sizes import Sizes

DATA = sorted((Path(__file__).parent / "data" / "measured_variants").glob("*.json"))


def _load(path: Path) -> tuple[Parameters, dict]:
    doc = json.loads(path.read_text())
    return Parameters.from_literal(doc["params"]), doc["bench"]


def test_every_variant_is_measured() -> None:
    variants = {_load(p)[0].variant for p in DATA}
    assert variants == {"stream", "pack", "stream_pack"}


@pytest.mark.parametrize("path", DATA, ids=[p.stem for p in DATA])
def test_sizes_equal_serialized_objects(path: Path) -> None:
    p, rep = _load(path)
    assert rep["correct"] is True
    assert rep["variant"] == p.variant
    assert rep["params_hash"] == p.params_hash().hex()
    s = Sizes.of(p)
    assert (s.query_bytes, s.response_bytes, s.public_params_bytes, s.preprocessed_db_bytes) == (
        rep["query_bytes"], rep["response_bytes"], rep["public_params_bytes"],
        rep["preprocessed_db_bytes"])
