"""sizes.py against runtime/FORMATS.md §6 (the runtime's own pinned reference values)."""

from __future__ import annotations

import dataclasses

import pytest
from spiralpir.optimizer.params.paper import PAPER_EXAMPLE
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.params.sizes import Sizes, pp_polys


def test_formats_reference_set_1() -> None:
    p = Parameters.from_literal(PAPER_EXAMPLE)
    s = Sizes.of(p)
    assert p.params_hash().hex() == "d61bf71dc74fe77a"
    assert (p.q2, p.rounds, p.rounds_right, pp_polys(p)) == (1032193, 10, 7, 496)
    assert (s.public_params_bytes, s.query_bytes, s.response_bytes, s.preprocessed_db_bytes) == (
        7_110_720, 14_400, 20_512, 2_147_483_680)


def test_formats_reference_set_2() -> None:
    p = Parameters.from_literal(dict(
        PAPER_EXAMPLE, nu_2=5, p=512, q2_bits=21, t_gsw=9, t_exp_left=16, instances=12,
        db_item_size=102400, record_size=102400, records=2**14))
    s = Sizes.of(p)
    assert p.params_hash().hex() == "065bbb4600419004"
    assert (p.q2, p.rounds, p.rounds_right, pp_polys(p)) == (2056193, 10, 7, 568)
    assert (s.public_params_bytes, s.query_bytes, s.response_bytes, s.preprocessed_db_bytes) == (
        8_142_912, 14_400, 264_224, 12_884_901_920)


def test_sizes_are_immutable() -> None:
    s = Sizes.of(Parameters.from_literal(PAPER_EXAMPLE))
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.query_bytes = 0  # type: ignore[misc]
