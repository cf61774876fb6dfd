"""The optional lattice-estimator backend, run as it runs for users: reference_runner.py in a
separate Python.  CI has no Sage, so a stand-in `sage` and `estimator` on PYTHONPATH play the
environment; they record what they were asked."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from spiralpir.estimator import backend
from spiralpir.estimator.distributions import gaussian, sparse_ternary
from spiralpir.estimator.errors import SpiralpirError
from spiralpir.estimator.lwe_parameters import LWEParameters

PARAMS = LWEParameters(1024, 2**27 + 1, sparse_ternary(10, 12), gaussian(3.2))

FAKE_ESTIMATOR = '''
import json, math, os, types
from sage.all import oo
ND = types.SimpleNamespace(
    DiscreteGaussian=lambda s: ["G", s],
    SparseTernary=lambda p, m: ["T", p, m],
    Uniform=lambda a, b: ["U", a, b],
)
RC = types.SimpleNamespace(MATZOV="M", ADPS16="A")
def _parameters(**kw):
    return kw
def _estimate(p, red_cost_model, deny_list):
    print("estimator log line on stdout")
    with open(os.environ["FAKE_SEEN"], "w") as f:
        json.dump({"p": {k: (str(v) if k in ("q", "m") else v) for k, v in p.items()},
                   "model": red_cost_model, "deny": list(deny_list)}, f)
    return {"usvp": {"rop": 2.0**100, "beta": 300, "d": 2000},
            "bdd": {"rop": 2.0**99.5, "beta": 290, "d": 1990},
            "dual": {"rop": oo}}
LWE = types.SimpleNamespace(Parameters=_parameters, estimate=_estimate)
'''


@pytest.fixture
def fake_sage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "sage").mkdir()
    (tmp_path / "sage" / "__init__.py").write_text("")
    (tmp_path / "sage" / "all.py").write_text("oo = float('inf')\n")
    (tmp_path / "estimator").mkdir()
    (tmp_path / "estimator" / "__init__.py").write_text(FAKE_ESTIMATOR)
    seen = tmp_path / "seen.json"
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("FAKE_SEEN", str(seen))
    monkeypatch.setenv("LATTICE_ESTIMATOR_COMMIT", "27a581bb")
    return seen


def test_translates_parameters_and_results(fake_sage: Path) -> None:
    out = backend.reference_estimate(PARAMS, "matzov", ["usvp", "bdd", "dual"], sys.executable)
    seen = json.loads(fake_sage.read_text())
    assert seen["p"] == {"n": 1024, "q": str(2**27 + 1), "Xs": ["T", 10, 12], "Xe": ["G", 3.2],
                         "m": "inf"}
    assert seen["model"] == "M"
    assert sorted(seen["deny"]) == ["arora-gb", "bdd_hybrid", "bdd_mitm_hybrid", "bkw",
                                    "dual_hybrid"]
    assert out["commit"] == "27a581bb" and out["python"] == sys.executable
    assert out["attacks"]["usvp"] == {"log2_rop": 100.0, "beta": 300, "d": 2000}
    assert out["attacks"]["dual"]["log2_rop"] is None
    assert out["security_bits"] == 99.5 and out["cheapest_attack"] == "bdd"


def test_adps16_and_finite_samples(fake_sage: Path) -> None:
    backend.reference_estimate(PARAMS.updated(m=4096), "adps16", ["usvp"], sys.executable)
    seen = json.loads(fake_sage.read_text())
    assert seen["model"] == "A" and seen["p"]["m"] == "4096"


def test_without_sage_the_error_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # no sage here
    with pytest.raises(SpiralpirError, match=r"--reference: .*No module named 'sage'.*recipe"):
        backend.reference_estimate(PARAMS, "matzov", ["usvp"], sys.executable)
    with pytest.raises(SpiralpirError, match="no Python at"):
        backend.reference_estimate(PARAMS, "matzov", ["usvp"], str(tmp_path / "nope"))


def test_interpreter_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(backend.ENV_PYTHON, raising=False)
    assert backend.sage_python(None) == sys.executable
    monkeypatch.setenv(backend.ENV_PYTHON, "/opt/sage/bin/python")
    assert backend.sage_python(None) == "/opt/sage/bin/python"
    assert backend.sage_python("/x/python") == "/x/python"


def test_gate_reports_both_levels_and_the_lower_decides(
    fake_sage: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from spiralpir.optimizer.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["spiralpir", "security", *args])
        capsys.readouterr()
        with pytest.raises(SystemExit) as exc:
            main()
        out, err = capsys.readouterr()
        return int(exc.value.code or 0), out, err

    code, out, err = run("--preset", "spiralpir-d2048", "--require", "128", "--reference",
                         "--sage-python", sys.executable, "--json")
    assert code == 1, err
    rec = json.loads(out)
    ref = rec["reference"]
    assert ref["security_bits"] == 99.5 and ref["cheapest_attack"] == "bdd"
    assert ref["commit"] == "27a581bb"
    assert ref["ours_minus_reference"] == round(rec["security_bits"] - 99.5, 4)
    assert ref["attacks"]["usvp"]["ours_minus_reference"] == round(
        rec["attacks"]["usvp"]["log2_rop"] - 100.0, 4)
    assert rec["security_bits"] > 128 and rec["deciding_level"] == 99.5
    assert rec["status"] == "fail" and rec["shortfall_bits"] == 28.5
    code, out, _ = run("--preset", "spiralpir-d2048", "--reference", "--sage-python",
                       sys.executable)
    assert code == 0
    assert "reference: lattice-estimator 27a581bb: 99.5 bits (bdd" in out
    assert "ours - reference = +30.1" in out
