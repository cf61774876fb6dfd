"""Parameters.replace re-derives the layout (instances, db_item_size) when a field it depends on
changes — record_size, n, p or poly_len — and keeps explicit values otherwise. Each case moves a
10000-byte record across the one-plaintext boundary: a plaintext holds n²·poly_len·log2 p bits
(8192 bytes for n = 2, poly_len 2048, p = 2^8), so the expected instance counts are written out."""

from __future__ import annotations

import pytest
from spiralpir.optimizer.params.paper import PAPER_EXAMPLE
from spiralpir.optimizer.params.parameters import Parameters


def _big_record() -> Parameters:
    lit = {**PAPER_EXAMPLE, "record_size": 10000, "records": 4096}
    del lit["instances"], lit["db_item_size"]
    p = Parameters.from_literal(lit)
    assert (p.instances, p.db_item_size) == (2, 10000)  # 80000 bits over 65536-bit plaintexts
    return p


@pytest.mark.parametrize("field,value,instances", [
    ("poly_len", 4096, 1),  # 131072-bit plaintexts
    ("n", 3, 1),  # 9·2048·8 = 147456 bits
    ("p", 1 << 16, 1),  # 4·2048·16 = 131072 bits
    ("n", 1, 5),  # 16384-bit plaintexts: ⌈80000 / 16384⌉
    ("record_size", 4000, 1),
])
def test_replace_rederives_the_layout(field: str, value: int, instances: int) -> None:
    p = _big_record().replace(**{field: value})
    assert p.instances == instances
    assert p.db_item_size == (value if field == "record_size" else 10000)


def test_replace_keeps_the_layout_of_other_changes() -> None:
    p = _big_record()
    for field, value in (("nu_2", 4), ("t_gsw", 4), ("noise_width", 3.2)):
        q = p.replace(**{field: value})
        assert (q.instances, q.db_item_size) == (2, 10000), field
    wider = p.replace(db_item_size=12000, record_size=10000)
    assert (wider.instances, wider.db_item_size) == (2, 12000)
