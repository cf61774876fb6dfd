"""The one rounding rule for printed levels, and the one integer syntax of the command line."""

from __future__ import annotations

import math

import pytest
from spiralpir.estimator.errors import SpiralpirError
from spiralpir.estimator.integers import parse_integer
from spiralpir.estimator.levels import bits_json, bits_text, shortfall_json, shortfall_text


@pytest.mark.parametrize("x,text", [
    (129.644, "129.6"), (124.89978186300313, "124.8"), (129.3933, "129.3"), (128.0, "128.0"),
    (127.99999999, "127.9"), (130.0 - 1e-12, "129.9"), (0.05, "0.0"), (math.inf, "inf"),
    (None, "inf"),
])
def test_text_truncates(x: float | None, text: str) -> None:
    assert bits_text(x) == text


def test_printed_level_never_exceeds_the_level() -> None:
    for i in range(2000):
        x = 100 + i * 0.0137
        assert float(bits_text(x)) <= x
        j = bits_json(x)
        assert j is not None and j <= x and x - j <= 1e-4 + 1e-9
        # a printed level of at least R (one decimal) means the level is at least R
        assert (float(bits_text(x)) >= 128.0) == (x >= 128.0)


def test_json_truncates_and_shortfalls_round_up() -> None:
    assert bits_json(129.64398) == 129.6439
    assert bits_json(math.inf) is None and bits_json(None) is None
    assert shortfall_text(128, 124.89978186300313) == "3.2"  # = 128 - 124.8 as printed
    assert shortfall_text(128, 127.96) == "0.1"
    assert shortfall_text(128, 129.0) == "0.0"
    assert shortfall_json(128, 124.89978186300313) == 3.1003


@pytest.mark.parametrize("text,value", [
    ("66974689739603969", 66974689739603969), ("2^54", 2**54), ("2**54", 2**54),
    ("268369921*249561089", 268369921 * 249561089), ("268369921 · 249561089", 66974689739603969),
    ("2^60 - 2^18 + 1", 2**60 - 2**18 + 1), ("0x3fff", 0x3FFF), ("(2^28-2^16+1)*3", 805109763),
    ("1_000", 1000), ("2^2^3", 256),
])
def test_integer_syntax(text: str, value: int) -> None:
    assert parse_integer(text, "--modulus") == value


@pytest.mark.parametrize("text", ["2^^3", "2.5", "1e9", "x", "2^5000", "2^-1", "abs(3)", "",
                                  "__import__('os')", "2/3"])
def test_integer_syntax_rejects(text: str) -> None:
    with pytest.raises(SpiralpirError, match="--modulus"):
        parse_integer(text, "--modulus")


def test_plan_counts_take_the_same_syntax() -> None:
    from spiralpir.optimizer.cli.counts import parse_count

    for text in ("2^20", "2**20", "2^10*2^10", "1048576", "0x100000"):
        assert parse_count(text, "--records") == 2**20
    assert parse_count("1Mi", "--records") == 2**20
