"""The NTT counts cost.py charges the per-query fixed work, against the runtime's loops
counted by hand for the 2^20 × 32 B time plan (ServerStages::expand and ::convert: b stays
in the NTT domain from the parse to the conversion)."""

from __future__ import annotations

from spiralpir.optimizer.models.cost import stage_op_counts
from spiralpir.optimizer.params.parameters import Parameters

# `spiralpir generate --records 1048576 --record-size 32 --objective time`
PLAN = {"variant": "spiral", "poly_len": 2048, "moduli": [268369921, 67104769],
        "noise_width": 6.4, "secret_distribution": "gaussian", "q2_bits": 20, "instances": 1,
        "db_item_size": 32, "records": 1 << 20, "record_size": 32, "p": 256, "n": 1, "nu_1": 7,
        "nu_2": 7, "t_gsw": 4, "t_conv": 5, "t_exp_left": 4, "t_exp_right": 14}


def test_expansion_and_conversion_ntts() -> None:
    p = Parameters.from_literal(PLAN)
    L = 2
    # 128 first-dimension leaves (even), 28 GSW digits (odd): 8 rounds, the right branch 6.
    # Left key switches: round r ≥ 1 has 2^(r−1) even cts: 1 + 2 + … + 64 = 127.
    # Right: round 0's query, then 1 + 2 + 4 + 8 + 16 odd cts in rounds 1 … 5 = 32.
    left, right = 127, 32
    # per key switch and residue: t digits forward, the new a back; the query: a back, b forward
    expansion = (left * (p.t_exp_left + 1) + right * (p.t_exp_right + 1) + 2) * L
    # n = 1: ScalToMat is the identity, so a first-dimension ct costs its a forward (b arrives
    # in the NTT domain); a digit ct its a forward, b back, and the t_conv digits of a and of b
    # forward (RegevToGSW)
    digits = p.nu_2 * p.t_gsw
    conversion = (128 + digits * (1 + 1 + 2 * p.t_conv)) * L
    ops = stage_op_counts(p)
    assert (ops["expansion"]["ntt"], ops["conversion"]["ntt"]) == (expansion, conversion)
    assert (expansion, conversion) == (2234, 928)
