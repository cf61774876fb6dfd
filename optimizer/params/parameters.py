"""SPIRAL parameters: the plain literal and the validated, immutable `Parameters` made from it.

This module is the ONE place where a parameter set is validated (every error names the field
and the bound) and where derived values are computed. The code generator, the models and the
CLI all read parameters through it.

Literal (a plain dict, e.g. parsed JSON; unknown keys are an error)::

    {"variant": "spiral", "poly_len": 2048, "moduli": [268369921, 249561089],
     "noise_width": 6.4, "secret_distribution": "gaussian",
     "n": 2, "nu_1": 9, "nu_2": 6, "p": 256, "q2_bits": 20,
     "t_gsw": 8, "t_conv": 4, "t_exp_left": 8, "t_exp_right": 56,
     "instances": 1, "db_item_size": 256, "records": 1048576, "record_size": 256}

`variant` ∈ spiral | stream | pack | stream_pack (params/variants.py);
`secret_distribution` ∈ `gaussian` | `ternary` | `sparse-ternary:PLUS,MINUS`;
`noise_width` is the Gaussian WIDTH s (σ = s/√(2π)).
`instances` and `db_item_size` may be omitted: they default to the layout rule below.

API (stable; used by codegen):
  * `Parameters.from_literal(d) -> Parameters`  (raises SpiralpirError naming field and bound)
  * `Parameters.from_json(text)`, `p.to_literal() -> dict`, `p.to_json() -> str`
    (sorted keys, round-trips exactly)
  * `p.replace(**changes) -> Parameters` (re-validated)
  * derived (properties): `q` (product of moduli), `q_bits` (= ceil(log2 q)), `log2_q`,
    `base_bits(t)` = ceil(q_bits/t) and `gadget_base(t)` = 2^base_bits(t) (z = 2^ceil(log2 q / t)),
    `bits_gsw/bits_conv/bits_exp_left/bits_exp_right`, `q1` = 4p, `q1_bits`, `log2_p`,
    `q2` (largest prime < 2^q2_bits, ≡ 1 mod 2·poly_len), `delta` = floor(q/p),
    `pt_bits` (= n²·poly_len·log2 p, bits per plaintext), `items_per_pt`, `dim0` (= 2^nu_1),
    `num_pts` (plaintexts per instance), `capacity` (records that fit),
    `rows_stored` (first-dimension rows holding records, the ones stored), `stored_pts`,
    `num_gsw_digits` (= nu_2·t_gsw), `rounds_right`, `rounds` (query expansion schedule),
    `secret_kind` ('gaussian'|'ternary'|'sparse_ternary'), `secret_plus`, `secret_minus`,
    `sigma` (= noise_width/√(2π)), `canonical_string()` and `params_hash()` (runtime/FORMATS.md
    §1: the first 8 bytes of SHA-256 of the canonical string, as in every object header).
  * `layout(record_size, n, p, poly_len) -> (instances, items_per_pt, db_item_size)`.

The bounds mirror the runtime's static_asserts (runtime/include/spiralpir/spiral/params.hpp), so a
validated `Parameters` always compiles.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from dataclasses import asdict, dataclass, fields
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.params.primes import (
    MAX_PRIMES,
    MAX_Q_BITS,
    POLY_LENS,
    find_q2,
    is_prime,
    lazy_terms,
)
from spiralpir.optimizer.params.variants import IMPLEMENTED_VARIANTS, VARIANTS

MAX_PRIME = 1 << 32
MAX_N = 8
MAX_LOG2_P = 30  # runtime bound (params.hpp): p ≤ 2^30, q1 = 4p ≤ 2^32 in 64-bit words
Q2_BITS_RANGE = (14, 48)  # runtime: q2 < 2^48 (client NTT/pointwise mod q2 need < 2^50)
MAX_NU_2 = 20
MAX_NU_TOTAL = 30

_INT_FIELDS = (
    "poly_len", "n", "nu_1", "nu_2", "p", "q2_bits", "t_gsw", "t_conv", "t_exp_left",
    "t_exp_right", "instances", "db_item_size", "records", "record_size", "query_buckets",
)
_REQUIRED = (
    "variant", "poly_len", "moduli", "noise_width", "secret_distribution", "n", "nu_1", "nu_2",
    "p", "q2_bits", "t_gsw", "t_conv", "t_exp_left", "t_exp_right", "records", "record_size",
)
_OPTIONAL = ("instances", "db_item_size", "query_buckets")


def _err(field: str, msg: str) -> SpiralpirError:
    return SpiralpirError(f"parameter '{field}': {msg}")


def parse_secret_distribution(text: str, poly_len: int) -> tuple[str, int, int]:
    """'gaussian' | 'ternary' | 'sparse-ternary:PLUS,MINUS' -> (kind, plus, minus)."""
    if text == "gaussian":
        return "gaussian", 0, 0
    if text == "ternary":
        return "ternary", 0, 0
    if text.startswith("sparse-ternary:"):
        parts = text.split(":", 1)[1].split(",")
        if len(parts) == 2 and all(x.strip().isdigit() for x in parts):
            plus, minus = (int(x) for x in parts)
            if 0 < plus + minus <= poly_len:
                return "sparse_ternary", plus, minus
            raise _err(
                "secret_distribution",
                f"sparse-ternary needs 0 < PLUS + MINUS <= poly_len ({poly_len}), "
                f"got {plus + minus}",
            )
    raise _err(
        "secret_distribution",
        f"expected 'gaussian', 'ternary' or 'sparse-ternary:PLUS,MINUS', got {text!r}",
    )


def ceil_log2(x: int) -> int:
    """Smallest k with 2^k >= x (x >= 1)."""
    return (x - 1).bit_length()


def rows_stored(records: int, items_per_pt: int, nu_1: int, nu_2: int) -> int:
    """ceil(ceil(records / items_per_pt) / 2^nu_2), at most 2^nu_1 (FORMATS.md §3)."""
    pts = -(-records // items_per_pt)
    return min(1 << nu_1, -(-pts // (1 << nu_2)))


def layout(record_size: int, n: int, p: int, poly_len: int) -> tuple[int, int, int]:
    """Item layout (runtime/FORMATS.md): -> (instances, items_per_pt, db_item_size).

    A plaintext holds n²·poly_len·log2 p bits. Records that fit are packed
    floor(pt_bits / (8·record_size)) per plaintext; larger records are split over
    instances = ceil(8·record_size / pt_bits) parallel databases.
    """
    pt_bits = n * n * poly_len * ceil_log2(p)
    item_bits = 8 * record_size
    if item_bits <= pt_bits:
        return 1, pt_bits // item_bits, record_size
    return -(-item_bits // pt_bits), 1, record_size


@dataclass(frozen=True)
class Parameters:
    """A validated, immutable SPIRAL parameter set (see the module docstring)."""

    variant: str
    poly_len: int
    moduli: tuple[int, ...]
    noise_width: float
    secret_distribution: str
    n: int
    nu_1: int
    nu_2: int
    p: int
    q2_bits: int
    t_gsw: int
    t_conv: int
    t_exp_left: int
    t_exp_right: int
    instances: int
    db_item_size: int
    records: int
    record_size: int
    # buckets whose indices one query ct carries (runtime batch_query.hpp); 1 = plain queries,
    # left out of the literal and the canonical string so every other set is unchanged
    query_buckets: int = 1

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_literal(cls, lit: dict[str, Any]) -> Parameters:
        if not isinstance(lit, dict):
            raise SpiralpirError("parameters must be a JSON object")
        unknown = sorted(set(lit) - set(_REQUIRED) - set(_OPTIONAL))
        if unknown:
            raise _err(unknown[0], "unknown parameter (allowed: "
                       + ", ".join(sorted(_REQUIRED + _OPTIONAL)) + ")")
        for k in _REQUIRED:
            if k not in lit:
                raise _err(k, "missing")
        vals: dict[str, Any] = dict(lit)
        for k in _INT_FIELDS:
            if k in vals:
                v = vals[k]
                if isinstance(v, bool) or not isinstance(v, int):
                    raise _err(k, f"must be an integer, got {v!r}")
        mods = vals["moduli"]
        if not isinstance(mods, list | tuple) or not mods or not all(
            isinstance(m, int) and not isinstance(m, bool) for m in mods
        ):
            raise _err("moduli", f"must be a non-empty list of integers, got {mods!r}")
        vals["moduli"] = tuple(mods)
        nw = vals["noise_width"]
        if isinstance(nw, bool) or not isinstance(nw, int | float):
            raise _err("noise_width", f"must be a number, got {nw!r}")
        vals["noise_width"] = float(nw)
        for k in ("variant", "secret_distribution"):
            if not isinstance(vals[k], str):
                raise _err(k, f"must be a string, got {vals[k]!r}")
        if "instances" not in vals or "db_item_size" not in vals:
            n, p, d, rs = vals["n"], vals["p"], vals["poly_len"], vals["record_size"]
            if n >= 1 and p >= 2 and d >= 1 and rs >= 1:
                inst, _, item = layout(rs, n, p, d)
                vals.setdefault("instances", inst)
                vals.setdefault("db_item_size", item)
            else:
                vals.setdefault("instances", 1)
                vals.setdefault("db_item_size", max(rs, 1))
        obj = cls(**vals)
        obj._validate()
        return obj

    @classmethod
    def from_json(cls, text: str) -> Parameters:
        try:
            lit = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SpiralpirError(f"parameters: invalid JSON ({exc})") from exc
        return cls.from_literal(lit)

    def to_literal(self) -> dict[str, Any]:
        d = asdict(self)
        d["moduli"] = list(self.moduli)
        if self.query_buckets == 1:
            del d["query_buckets"]
        return d

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_literal(), sort_keys=True, indent=indent)

    def replace(self, **changes: Any) -> Parameters:
        lit = self.to_literal()
        lit.update(changes)
        if ("n" in changes or "p" in changes or "poly_len" in changes or "record_size" in changes):
            if "instances" not in changes:
                lit.pop("instances")
            if "db_item_size" not in changes:
                lit.pop("db_item_size")
        return Parameters.from_literal(lit)

    # ------------------------------------------------------------------ validation
    def _validate(self) -> None:
        if self.variant not in VARIANTS:
            raise _err("variant", f"must be one of {', '.join(VARIANTS)}, got {self.variant!r}")
        d = self.poly_len
        if d not in POLY_LENS:
            raise _err("poly_len", f"must be one of {POLY_LENS}, got {d}")
        if not 1 <= len(self.moduli) <= MAX_PRIMES:
            raise _err("moduli", f"need 1..{MAX_PRIMES} primes, got {len(self.moduli)}")
        for m in self.moduli:
            if not 2 < m < MAX_PRIME:
                raise _err("moduli", f"each prime must be in (2, 2^32), got {m}")
            if not is_prime(m):
                raise _err("moduli", f"{m} is not prime")
            if m % (2 * d) != 1:
                raise _err("moduli", f"{m} is not ≡ 1 mod 2·poly_len = {2 * d} (not NTT-friendly)")
        if len(set(self.moduli)) != len(self.moduli):
            raise _err("moduli", "primes must be distinct")
        if self.q_bits > MAX_Q_BITS:
            raise _err("moduli", f"q must be < 2^{MAX_Q_BITS}, got 2^{self.log2_q:.1f}")
        if not (0.0 < self.noise_width < 1000.0) or math.isnan(self.noise_width):
            raise _err("noise_width", f"must be in (0, 1000), got {self.noise_width}")
        parse_secret_distribution(self.secret_distribution, d)
        if not 1 <= self.n <= MAX_N:
            raise _err("n", f"must be in [1, {MAX_N}], got {self.n}")
        if lazy_terms(self.moduli) < self.n:
            raise _err("n", f"the first-dimension kernel sums lazy_terms // n products before "
                       f"reducing; with primes of {max(self.moduli).bit_length()} bits "
                       f"lazy_terms = {lazy_terms(self.moduli)} < n = {self.n}")
        if self.p < 2 or self.p & (self.p - 1):
            raise _err("p", f"must be a power of two >= 2, got {self.p}")
        if self.log2_p > MAX_LOG2_P:
            raise _err("p", f"must be <= 2^{MAX_LOG2_P} (runtime bound), got 2^{self.log2_p}")
        if self.p // 2 >= min(self.moduli):
            raise _err("p", f"p/2 must be below every CRT prime (the database stores centred "
                       f"coefficients as residues), got p = 2^{self.log2_p}, smallest prime "
                       f"{min(self.moduli)}")
        if self.nu_1 < 1:
            raise _err("nu_1", f"must be >= 1, got {self.nu_1}")
        if not 0 <= self.nu_2 <= MAX_NU_2:
            raise _err("nu_2", f"must be in [0, {MAX_NU_2}], got {self.nu_2}")
        if self.nu_1 + self.nu_2 > MAX_NU_TOTAL:
            total = self.nu_1 + self.nu_2
            raise _err("nu_2", f"nu_1 + nu_2 must be <= {MAX_NU_TOTAL}, got {total}")
        lo, hi = Q2_BITS_RANGE
        if not lo <= self.q2_bits <= hi:
            raise _err("q2_bits", f"must be in [{lo}, {hi}], got {self.q2_bits}")
        if self.q2 == 0:
            raise _err("q2_bits", f"no prime ≡ 1 mod {2 * d} below 2^{self.q2_bits}")
        if not self.q1 < self.q2 < self.q:
            raise _err("q2_bits", f"need 4p = {self.q1} < q2 = {self.q2} < q = 2^{self.log2_q:.1f}")
        for k in ("t_gsw", "t_conv", "t_exp_left", "t_exp_right"):
            t = getattr(self, k)
            if not 1 <= t <= self.q_bits:
                raise _err(k, f"must be in [1, ceil(log2 q) = {self.q_bits}], got {t}")
        g = self.query_buckets
        if g < 1 or g & (g - 1):
            raise _err("query_buckets", f"must be a power of two >= 1, got {g}")
        if g > 1 and self.variant in ("stream", "stream_pack"):
            raise _err("query_buckets",
                       f"must be 1 for {self.variant} (no query expansion), got {g}")
        if g > 1 and (2 * g * self.dim0 > d or 2 * g * self.num_gsw_digits > d):
            raise _err("query_buckets", f"{g} buckets of 2^nu_1 = {self.dim0} selectors and "
                       f"{self.num_gsw_digits} digits do not fit the {d} coefficients of a query "
                       "(2·G·2^nu_1 and 2·G·nu_2·t_gsw must be <= poly_len)")
        if self.rounds > ceil_log2(d):
            raise _err("nu_1", f"query expansion needs {self.rounds} rounds > log2(poly_len) = "
                       f"{ceil_log2(d)}; lower nu_1 or nu_2·t_gsw")
        if 2 * self.dim0 > d:
            raise _err("nu_1", f"2^(nu_1+1) = {2 * self.dim0} must be <= poly_len = {d}")
        if 2 * self.num_gsw_digits > d:
            raise _err("t_gsw", f"2·nu_2·t_gsw = {2 * self.num_gsw_digits} must be <= "
                       f"poly_len = {d}")
        if self.record_size < 1:
            raise _err("record_size", f"must be >= 1, got {self.record_size}")
        if self.records < 1:
            raise _err("records", f"must be >= 1, got {self.records}")
        if not self.record_size <= self.db_item_size:
            raise _err("db_item_size", f"must be >= record_size = {self.record_size}, "
                       f"got {self.db_item_size}")
        want = max(1, -(-8 * self.db_item_size // self.pt_bits))
        if self.instances != want:
            raise _err("instances", f"must be max(1, ceil(8·db_item_size / plaintext bits)) = "
                       f"{want}, got {self.instances}")
        if self.records > self.capacity:
            raise _err("records", f"{self.records} records exceed the capacity "
                       f"2^(nu_1+nu_2)·items_per_pt = {self.capacity}; raise nu_1/nu_2")

    # ------------------------------------------------------------------ derived values
    @property
    def q(self) -> int:
        return math.prod(self.moduli)

    @property
    def q_bits(self) -> int:
        """ceil(log2 q) (q is odd and never a power of two)."""
        return self.q.bit_length()

    @property
    def log2_q(self) -> float:
        return math.log2(self.q)

    def base_bits(self, t: int) -> int:
        """Gadget base bits for length t: ceil(log2(q)/t) = ceil(q_bits/t)."""
        return -(-self.q_bits // t)

    def gadget_base(self, t: int) -> int:
        """z = 2^ceil(log2(q)/t)."""
        return 1 << self.base_bits(t)

    @property
    def bits_gsw(self) -> int:
        return self.base_bits(self.t_gsw)

    @property
    def bits_conv(self) -> int:
        return self.base_bits(self.t_conv)

    @property
    def bits_exp_left(self) -> int:
        return self.base_bits(self.t_exp_left)

    @property
    def bits_exp_right(self) -> int:
        return self.base_bits(self.t_exp_right)

    @property
    def log2_p(self) -> int:
        return ceil_log2(self.p)

    @property
    def q1(self) -> int:
        return 4 * self.p

    @property
    def q1_bits(self) -> int:
        return self.log2_p + 2

    @property
    def q2(self) -> int:
        return find_q2(self.q2_bits, self.poly_len)

    @property
    def delta(self) -> int:
        return self.q // self.p

    @property
    def pt_bits(self) -> int:
        return self.n * self.n * self.poly_len * self.log2_p

    @property
    def items_per_pt(self) -> int:
        item_bits = 8 * self.db_item_size
        return self.pt_bits // item_bits if item_bits <= self.pt_bits else 1

    @property
    def dim0(self) -> int:
        return 1 << self.nu_1

    @property
    def num_pts(self) -> int:
        return 1 << (self.nu_1 + self.nu_2)

    @property
    def capacity(self) -> int:
        return self.num_pts * self.items_per_pt

    @property
    def rows_stored(self) -> int:
        """First-dimension rows the database stores (FORMATS.md §3): plaintext pt sits at row
        pt >> nu_2, so the rows holding the records' plaintexts; the zero rows after them are
        neither stored nor multiplied."""
        return rows_stored(self.records, self.items_per_pt, self.nu_1, self.nu_2)

    @property
    def stored_pts(self) -> int:
        return self.rows_stored << self.nu_2

    @property
    def num_gsw_digits(self) -> int:
        return self.nu_2 * self.t_gsw

    @property
    def rounds_right(self) -> int:
        """Expansion rounds on the odd (GSW) branch, round 0 included (the packed shape's:
        query_buckets·nu_2·t_gsw digits)."""
        g = self.query_buckets * self.num_gsw_digits
        return 1 + (ceil_log2(g) if g > 1 else 0)

    @property
    def rounds(self) -> int:
        return max(self.nu_1 + ceil_log2(self.query_buckets) + 1, self.rounds_right)

    @property
    def secret_kind(self) -> str:
        return parse_secret_distribution(self.secret_distribution, self.poly_len)[0]

    @property
    def secret_plus(self) -> int:
        return parse_secret_distribution(self.secret_distribution, self.poly_len)[1]

    @property
    def secret_minus(self) -> int:
        return parse_secret_distribution(self.secret_distribution, self.poly_len)[2]

    @property
    def sigma(self) -> float:
        """Standard deviation of the error: noise_width / √(2π)."""
        return self.noise_width / math.sqrt(2 * math.pi)

    @property
    def implemented(self) -> bool:
        return self.variant in IMPLEMENTED_VARIANTS

    def canonical_string(self) -> str:
        """The runtime's params canonical string (runtime/FORMATS.md §1)."""
        nw = struct.unpack("<Q", struct.pack("<d", self.noise_width))[0]
        rows = [
            ("variant", self.variant),
            ("poly_len", str(self.poly_len)),
            ("moduli", ",".join(str(m) for m in self.moduli)),
            ("noise_width", f"0x{nw:016x}"),
            ("secret_dist", self.secret_kind),
            ("secret_plus", str(self.secret_plus)),
            ("secret_minus", str(self.secret_minus)),
            ("n", str(self.n)),
            ("nu_1", str(self.nu_1)),
            ("nu_2", str(self.nu_2)),
            ("p", str(self.p)),
            ("q2_bits", str(self.q2_bits)),
            ("t_gsw", str(self.t_gsw)),
            ("t_conv", str(self.t_conv)),
            ("t_exp_left", str(self.t_exp_left)),
            ("t_exp_right", str(self.t_exp_right)),
            ("instances", str(self.instances)),
            ("db_item_size", str(self.db_item_size)),
        ]
        if self.query_buckets != 1:
            rows.append(("query_buckets", str(self.query_buckets)))
        return "spiralpir-params-v1\n" + "".join(f"{k}={v}\n" for k, v in rows)

    def params_hash(self) -> bytes:
        """First 8 bytes of SHA-256(canonical string), as written in every runtime header."""
        return hashlib.sha256(self.canonical_string().encode()).digest()[:8]


FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Parameters))
