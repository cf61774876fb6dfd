"""`spiralpir security` and the CI gate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from spiralpir.estimator.errors import SpiralpirError
from spiralpir.estimator.gate import check_params_file

REPO = Path(__file__).resolve().parents[2]
SPIRAL_MODULI = [268369921, 249561089]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from spiralpir.optimizer.cli import main; main()", *args],
        capture_output=True, text=True, timeout=120,
    )


def test_cli_params_file_json(tmp_path: Path) -> None:
    f = tmp_path / "params.json"
    f.write_text(json.dumps({"params": {"poly_len": 2048, "moduli": SPIRAL_MODULI,
                                        "noise_width": 6.4, "secret_distribution": "gaussian"}}))
    res = run("security", str(f), "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["cheapest_attack"] == "bdd"
    assert abs(out["security_bits"] - 124.9) < 0.1
    assert out["cost_model"] == "matzov"
    assert out["security_bits"] == min(a["log2_rop"] for a in out["attacks"].values())


def test_cli_lwe_instance_adps16() -> None:
    res = run("security", "--lwe-dim", "2048", "--modulus", "66974689739603969",
              "--secret", "ternary", "--error", "gaussian:2.553231",
              "--cost-model", "adps16", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["cost_model"] == "adps16"
    # reference (lattice-estimator, ADPS16): dual_hybrid 92.272, usvp 92.856
    assert abs(out["attacks"]["dual_hybrid"]["log2_rop"] - 92.272) < 0.01
    assert abs(out["attacks"]["usvp"]["log2_rop"] - 92.856) < 0.01


def test_cli_human_output_and_errors(tmp_path: Path) -> None:
    res = run("security", "--lwe-dim", "1024", "--modulus", "0x1000000", "--secret",
              "sparse-ternary:64,64", "--error", "gaussian:3.2")
    assert res.returncode == 0, res.stderr
    assert "security:" in res.stdout and "dual_hybrid" in res.stdout
    bad = run("security", "--lwe-dim", "1024", "--modulus", "65537", "--secret", "binary",
              "--error", "gaussian:3.2")
    assert bad.returncode == 2
    assert "secret" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    missing = run("security", "--lwe-dim", "1024")
    assert missing.returncode == 2 and "--modulus" in missing.stderr
    f = tmp_path / "p.json"
    f.write_text(json.dumps({"poly_len": 2048, "noise_width": 6.4}))
    nofield = run("security", str(f))
    assert nofield.returncode == 2 and "moduli" in nofield.stderr


def test_gate_passes_and_fails(tmp_path: Path) -> None:
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps({"poly_len": 2048, "moduli": [2**54 + 1], "noise_width": 6.4}))
    rep = check_params_file(ok)
    assert rep["security_bits"] >= 128
    weak = tmp_path / "weak.json"
    weak.write_text(json.dumps({"params": {"poly_len": 2048, "moduli": SPIRAL_MODULI,
                                           "noise_width": 6.4}}))
    with pytest.raises(SpiralpirError, match=r"weak\.json.*< floor 128"):
        check_params_file(weak)
    assert check_params_file(weak, floor=120)["cheapest_attack"] == "bdd"


def test_every_shipped_parameter_set_meets_the_floor() -> None:
    files = sorted((REPO / "generated").glob("*/params.json"))
    for f in files:
        rep = check_params_file(f, floor=128)
        assert rep["security_bits"] >= 128, f
