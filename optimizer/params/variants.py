"""The variant vocabulary: which SPIRAL variants exist and what each one changes.

* stream (stream, stream_pack): no query expansion; the client uploads the expanded query
  (2^ν1 first-dimension and ν2·t_gsw GSW-digit Regev ciphertexts).
* pack (pack, stream_pack): the server computes with n_comp = 1 over n² sub-databases, then
  packs the n² scalar responses of each instance into one (n+1)×n matrix Regev ciphertext.

The formulas that depend on the variant live in params/sizes.py, models/noise.py,
models/cost.py and plan/evaluate.py; runtime/FORMATS.md §7 describes the wire formats.
"""

from __future__ import annotations

VARIANTS = ("spiral", "stream", "pack", "stream_pack")
# the variants the runtime implements (every one today)
IMPLEMENTED_VARIANTS = VARIANTS
# spellings the planner and the CLI accept for stream_pack
ALIASES = {"streampack": "stream_pack", "stream-pack": "stream_pack"}


def is_stream(variant: str) -> bool:
    """The client uploads the expanded query (no server-side expansion)."""
    return variant in ("stream", "stream_pack")


def is_pack(variant: str) -> bool:
    """The server computes with 1×1 matrices and packs the responses."""
    return variant in ("pack", "stream_pack")


def n_comp(variant: str, n: int) -> int:
    """The matrix dimension the server computes with."""
    return 1 if is_pack(variant) else n
