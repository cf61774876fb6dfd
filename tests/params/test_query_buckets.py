"""query_buckets G (one query ct carries G buckets' indices, FORMATS.md §1, §3): left out of
the literal and the canonical string at G = 1, the packed shape's expansion schedule and key
count, the noise of its deeper expansion, and the bounds (power of two, not stream, the query
polynomial holds 2·G·2^nu_1 and 2·G·nu_2·t_gsw positions)."""

from __future__ import annotations

import pytest
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.noise import log2_failure
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.params.sizes import Sizes

BUCKET = {  # a small bucket database: 2^6 × 2^6 plaintexts, 24 GSW digits
    "variant": "spiral", "poly_len": 2048, "moduli": [268369921, 67104769], "noise_width": 6.4,
    "secret_distribution": "gaussian", "n": 1, "nu_1": 6, "nu_2": 6, "p": 4, "q2_bits": 14,
    "t_gsw": 4, "t_conv": 3, "t_exp_left": 2, "t_exp_right": 6, "records": 65536,
    "record_size": 32,
}


def params(**changes: object) -> Parameters:
    return Parameters.from_literal({**BUCKET, **changes})


def test_one_bucket_changes_nothing() -> None:
    one, plain = params(query_buckets=1), params()
    assert one == plain and "query_buckets" not in one.to_literal()
    assert one.canonical_string() == plain.canonical_string()
    assert one.params_hash() == plain.params_hash()


def test_packed_schedule_keys_and_canonical_string() -> None:
    plain, four = params(), params(query_buckets=4)
    assert four.to_literal()["query_buckets"] == 4
    assert four.canonical_string() == plain.canonical_string() + "query_buckets=4\n"
    assert four.params_hash() != plain.params_hash()
    # 4·64 selectors: 9 rounds (was 7); 4·24 = 96 digits: 8 right rounds (was 6)
    assert (plain.rounds, plain.rounds_right) == (7, 6)
    assert (four.rounds, four.rounds_right) == (9, 8)
    s1, s4 = Sizes.of(plain), Sizes.of(four)
    assert s4.query_bytes == s1.query_bytes
    d_polys = 2 * plain.t_exp_left + 2 * plain.t_exp_right
    assert s4.public_params_bytes - s1.public_params_bytes == d_polys * 2048 * plain.q_bits // 8


def test_deeper_expansion_is_noisier_but_planned_sets_hold() -> None:
    fails = [log2_failure(params(query_buckets=g)) for g in (1, 2, 4, 8)]
    assert fails == sorted(fails) and fails[0] < fails[-1]
    assert fails[2] <= -40


@pytest.mark.parametrize(("changes", "needle"), [
    ({"query_buckets": 3}, "power of two"),
    ({"query_buckets": 0}, "power of two"),
    ({"query_buckets": 2, "variant": "stream"}, "no query expansion"),
    ({"query_buckets": 32}, "do not fit"),
])
def test_bounds(changes: dict[str, object], needle: str) -> None:
    with pytest.raises(SpiralpirError, match="query_buckets") as exc:
        params(**changes)
    assert needle in str(exc.value)
