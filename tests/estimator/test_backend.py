"""The optional real-lattice-estimator backend: absent here, exercised with a stand-in."""

from __future__ import annotations

import math
import sys
import types
from typing import Any

import pytest
from spiralpir.estimator import backend
from spiralpir.estimator.distributions import gaussian, sparse_ternary
from spiralpir.estimator.lwe_parameters import LWEParameters

PARAMS = LWEParameters(1024, 2**27, sparse_ternary(10, 12), gaussian(3.2))


def test_reports_unavailable_without_sage(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "estimator", None)  # import fails
    out = backend.reference_backend(PARAMS, "matzov")
    assert out["available"] is False and "reason" in out


def test_translates_parameters_and_results(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    fake = types.ModuleType("estimator")
    fake.ND = types.SimpleNamespace(  # type: ignore[attr-defined]
        DiscreteGaussian=lambda s: ("G", s),
        SparseTernary=lambda p, m: ("T", p, m),
        Uniform=lambda a, b: ("U", a, b),
    )

    def parameters(**kw: Any) -> dict[str, Any]:
        seen.update(kw)
        return kw

    def estimate(p: Any, red_cost_model: Any, deny_list: Any) -> dict[str, Any]:
        seen["model"], seen["deny"] = red_cost_model, deny_list
        return {"usvp": {"rop": 2.0**100, "beta": 300}, "dual": {"rop": math.inf}}

    fake.LWE = types.SimpleNamespace(Parameters=parameters, estimate=estimate)  # type: ignore[attr-defined]
    fake.RC = types.SimpleNamespace(MATZOV="M", ADPS16="A")  # type: ignore[attr-defined]
    sage = types.ModuleType("sage")
    sage_all = types.ModuleType("sage.all")
    sage_all.oo = math.inf  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "estimator", fake)
    monkeypatch.setitem(sys.modules, "sage", sage)
    monkeypatch.setitem(sys.modules, "sage.all", sage_all)
    monkeypatch.setenv("LATTICE_ESTIMATOR_COMMIT", "27a581bb")
    out = backend.reference_backend(PARAMS, "matzov")
    assert out["available"] is True and out["commit"] == "27a581bb"
    assert out["attacks"]["usvp"] == {"log2_rop": 100.0, "beta": 300}
    assert out["attacks"]["dual"]["log2_rop"] is None
    assert seen["n"] == 1024 and seen["q"] == 2**27 and seen["m"] == math.inf
    assert seen["Xs"] == ("T", 10, 12) and seen["Xe"] == ("G", 3.2)
    assert seen["model"] == "M"
