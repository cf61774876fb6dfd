"""Partial hypercubes: the stored first-dimension rows (runtime/FORMATS.md §3) in the sizes,
the models and the planner's choice.

Expected values are written out from the format's definitions (plaintext pt at row
pt >> nu_2), not taken from params/parameters.py.
"""

from __future__ import annotations

import pytest
from spiralpir.optimizer.models import cost, noise
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.params.sizes import HEADER_BYTES, Sizes
from spiralpir.optimizer.plan.planner import plan

# n = 2, p = 256, d = 2048: a plaintext holds 2·2·2048·8 bits = 8 KiB, 32 items of 256 B
BASE = {"variant": "spiral", "poly_len": 2048, "moduli": [268369921, 249561089],
        "noise_width": 6.4, "secret_distribution": "gaussian", "n": 2, "nu_1": 4, "nu_2": 2,
        "p": 256, "q2_bits": 20, "t_gsw": 8, "t_conv": 4, "t_exp_left": 8, "t_exp_right": 56,
        "instances": 1, "db_item_size": 256, "record_size": 256}


@pytest.mark.parametrize(("records", "rows"), [(1, 1), (32 * 4, 1), (32 * 4 + 1, 2), (711, 6),
                                               (32 * 4 * 15 + 5, 16), (32 * 64, 16)])
def test_stored_rows_and_file_size(records: int, rows: int) -> None:
    p = Parameters.from_literal({**BASE, "records": records})
    assert p.rows_stored == rows
    # 32 + 4 bytes per residue: instances · rows · 2^nu_2 plaintexts · n² · d · primes
    assert Sizes.of(p).preprocessed_db_bytes == HEADER_BYTES + 4 * rows * 4 * 4 * 2048 * 2


def test_large_records_store_the_rows_of_their_plaintexts() -> None:
    # 100 KB over 12 instances: one record per plaintext, nu 3/1 -> 5 records fill 3 rows
    p = Parameters.from_literal({**BASE, "n": 2, "p": 512, "q2_bits": 21, "nu_1": 3, "nu_2": 1,
                                 "t_gsw": 9, "t_exp_left": 16, "instances": 12,
                                 "db_item_size": 102400, "record_size": 102400, "records": 5})
    assert p.rows_stored == 3
    assert Sizes.of(p).preprocessed_db_bytes == HEADER_BYTES + 4 * 12 * 3 * 2 * 4 * 2048 * 2


def test_models_count_the_stored_rows() -> None:
    """The first dimension's work, bytes and variance are proportional to the stored rows;
    conversion converts only their selectors."""
    full = Parameters.from_literal({**BASE, "records": 32 * 64})
    part = full.replace(records=711)
    ops_f, ops_p = cost.stage_op_counts(full), cost.stage_op_counts(part)
    assert ops_p["first_dimension"]["fd"] * 16 == ops_f["first_dimension"]["fd"] * 6
    assert cost.params_db_bytes(part) * 16 == cost.params_db_bytes(full) * 6
    digits = full.nu_2 * full.t_gsw
    for p, rows in ((full, 16), (part, 6)):
        assert cost.stage_op_counts(p)["conversion"]["decomp"] == (
            (rows + 2 * digits) * p.t_conv * 2 * 2048)
    v_f = noise.stage_variances(full).variances["first_dimension"]
    v_p = noise.stage_variances(part).variances["first_dimension"]
    assert v_p < v_f
    assert noise.log2_failure(part) <= noise.log2_failure(full)


def test_planner_stores_only_the_rows_a_database_needs() -> None:
    """300,007 records of 32 B (a plaintext count no hypercube fits exactly at any p the
    planner picks here): the plan stores fewer rows than 2^nu_1, and its estimate is that
    file's size."""
    records = 300_007
    chosen = plan(records, 32)
    p = chosen.params
    per_pt = (p.n * p.n * p.poly_len * (p.p.bit_length() - 1)) // (8 * 32)
    pts = -(-records // per_pt)
    rows = -(-pts // (1 << p.nu_2))
    assert rows < 1 << p.nu_1
    assert p.rows_stored == rows
    assert chosen.estimate["preprocessed_db_bytes"] == (
        HEADER_BYTES + 4 * rows * (1 << p.nu_2) * p.n * p.n * p.poly_len * len(p.moduli))
