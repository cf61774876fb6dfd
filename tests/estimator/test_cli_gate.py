"""`spiralpir security` as a CI gate: exit statuses, records, every file kind, malformed files.

Expected levels come from the public lattice-estimator's rows (reference/), never from the
code under test; "just above / just below" straddle those rows by 0.1 bit, more than our
largest level error against them (0.021 bit, test_reference.py) and less than any gap that
would hide a wrong unit or a wrong secret.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from spiralpir.estimator.errors import SpiralpirError
from spiralpir.estimator.gate import check_params_file
from spiralpir.optimizer.cli import main

REPO = Path(__file__).resolve().parents[2]
REFERENCE = Path(__file__).parent / "reference" / "lattice_estimator.jsonl"
SPIRAL_MODULI = [268369921, 249561089]
STRADDLE = 0.1


def reference_level(set_id: str) -> float:
    for line in REFERENCE.read_text().splitlines():
        row = json.loads(line)
        if (row["set_id"] == set_id and row["attack"] == "min" and row["cost_model"] == "MATZOV"
                and not row["rough"]):
            return float(row["log2_rop"])
    raise KeyError(set_id)


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


Run = Callable[..., Result]


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    """`spiralpir ARGS...` in this process (the real entry point: exit status, stdout, stderr);
    test_real_process checks the same path through a separate process."""
    def invoke(*args: str) -> Result:
        monkeypatch.setattr(sys, "argv", ["spiralpir", *args])
        capsys.readouterr()
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return Result(code, out, err)

    return invoke


def write(tmp: Path, name: str, doc: Any) -> Path:
    f = tmp / name
    f.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return f


def ring(**kw: Any) -> dict[str, Any]:
    return {"ring_dimension": 2048, "modulus": "2^54", "error_stddev": 3.2,
            "secret": "gaussian", **kw}


# one ring file per secret distribution, with the reference row it must reproduce
SECRETS = {
    "gaussian": (ring(), "n=2048,log2q=54,q=18014398509481984,sigma=3.2,secret=gaussian,m=oo"),
    "ternary": (ring(secret="ternary"),
                "n=2048,log2q=54,q=18014398509481984,sigma=3.2,secret=ternary,m=oo"),
    "sparse-ternary": (
        {"ring_dimension": 2048, "moduli": SPIRAL_MODULI, "error_width": 6.4,
         "secret": "sparse-ternary:256,256"},
        "n=2048,log2q=56,q=66974689739603969,sigma=2.55323,secret=sparse_ternary_h512,m=oo"),
    # uniform mod q: the normal form swaps secret and error, so it sits at the Gaussian row
    "uniform": (ring(secret="uniform"),
                "n=2048,log2q=54,q=18014398509481984,sigma=3.2,secret=gaussian,m=oo"),
}


@pytest.mark.parametrize("secret", sorted(SECRETS))
def test_each_secret_just_above_and_just_below(tmp_path: Path, secret: str, run: Run) -> None:
    doc, set_id = SECRETS[secret]
    level = reference_level(set_id)
    f = write(tmp_path, f"{secret}.json", doc)
    above = run("security", "--require", f"{level - STRADDLE:.3f}", str(f))
    assert above.returncode == 0, above.stdout + above.stderr
    assert above.stdout.startswith(f"PASS {f}: ")
    below = run("security", "--require", f"{level + STRADDLE:.3f}", str(f), "--json")
    assert below.returncode == 1, below.stdout + below.stderr
    rec = json.loads(below.stdout)
    assert rec["status"] == "fail" and rec["file"] == str(f) and rec["kind"] == "ring file"
    assert 0 < rec["shortfall_bits"] <= 2 * STRADDLE
    assert abs(rec["security_bits"] - level) < STRADDLE
    assert rec["instance"]["secret"] == secret.replace("sparse-ternary", "sparse-ternary:256,256")


def test_failure_line_names_file_level_attack_and_shortfall(tmp_path: Path, run: Run) -> None:
    level = reference_level("n=2048,log2q=56,q=66974689739603969,sigma=2.55323,"
                            "secret=gaussian,m=oo")  # SPIRAL's ring, 124.90 bits
    plan = write(tmp_path, "plan.json", {"params": {"poly_len": 2048, "moduli": SPIRAL_MODULI,
                                                    "noise_width": 6.4}, "estimate": {}})
    res = run("security", "--require", "128", str(plan))
    assert res.returncode == 1 and res.stderr == ""
    line = res.stdout.strip()
    assert line.startswith(f"FAIL {plan}: 124.8 bits < 128 required, short by 3.2 bits")
    assert "cheapest attack bdd" in line and int(level) == 124


def test_statuses_of_several_files(tmp_path: Path, run: Run) -> None:
    ok = write(tmp_path, "ok.json", {"poly_len": 2048, "moduli": [2**54 + 1],
                                     "noise_width": 6.4})
    weak = write(tmp_path, "weak.json", ring(modulus="2^60"))
    bad = write(tmp_path, "bad.json", ring(moduli=[3]))
    assert run("security", "--require", "128", str(ok)).returncode == 0
    res = run("security", "--require", "128", str(ok), str(weak), "--json")
    assert res.returncode == 1
    recs = [json.loads(x) for x in res.stdout.splitlines()]
    assert [r["status"] for r in recs] == ["pass", "fail"]
    assert recs[0]["shortfall_bits"] == 0.0 and recs[0]["required_bits"] == 128
    res = run("security", "--require", "128", str(ok), str(bad), str(weak))
    assert res.returncode == 2  # a bad file outranks a weak one; the others are still checked
    assert res.stdout.splitlines()[0].startswith(f"PASS {ok}")
    assert res.stdout.splitlines()[1].startswith(f"FAIL {weak}")
    assert res.stderr.strip().splitlines() == [
        f"spiralpir: error: {bad}: give exactly one of the fields 'modulus' and 'moduli'"]


MALFORMED = [
    (ring(ring_dimension="2048"), "field 'ring_dimension'"),
    (ring(ring_dimension=8), "field 'ring_dimension'"),
    (ring(modulus="2^^54"), "field 'modulus'"),
    (ring(modulus=54.5), "field 'modulus'"),
    (ring(modulus="2^300"), "field 'modulus'"),
    ({**ring(), "modulus": None}, "field 'modulus'"),
    ({k: v for k, v in ring().items() if k != "modulus"} | {"moduli": []}, "field 'moduli'"),
    ({k: v for k, v in ring().items() if k != "modulus"} | {"moduli": [97, "x"]},
     "field 'moduli'[1]"),
    (ring(error_width=6.4), "'error_stddev'"),
    (ring(error_stddev=-1), "field 'error_stddev'"),
    (ring(error_stddev="3.2"), "field 'error_stddev'"),
    (ring(secret="binary"), "field 'secret'"),
    ({k: v for k, v in ring().items() if k != "secret"}, "field 'secret'"),
    (ring(secret="sparse-ternary:2000,100"), "field 'secret'"),
    (ring(secret=3), "field 'secret'"),
    (ring(sigma=3.2), "'sigma'"),
    (ring(samples=0), "field 'samples'"),
    (ring(tags="spiral"), "field 'tags'"),
    ({"poly_len": 2048, "moduli": SPIRAL_MODULI, "noise_width": "6.4"}, "field 'noise_width'"),
    ({"poly_len": 2048, "moduli": [268369921.0], "noise_width": 6.4}, "field 'moduli'"),
    ({"poly_len": 2048, "moduli": SPIRAL_MODULI, "noise_width": 6.4,
      "secret_distribution": "binary"}, "field 'secret_distribution'"),
    ({"params": {"poly_len": 2048, "noise_width": 6.4}}, "'params.moduli'"),
    ({"params": {"poly_len": 8, "moduli": SPIRAL_MODULI, "noise_width": 6.4}},
     "field 'poly_len'"),
    ({"estimate": {}}, "expected a field 'params', 'poly_len' or 'ring_dimension'"),
    ("[1, 2]", "must hold a JSON object"),
    ("{\"ring_dimension\": 2048,", "is not valid JSON"),
]


@pytest.mark.parametrize("doc,field", MALFORMED, ids=[str(i) for i in range(len(MALFORMED))])
def test_malformed_file_exit_2_one_line(tmp_path: Path, doc: Any, field: str, run: Run) -> None:
    f = write(tmp_path, "p.json", doc)
    res = run("security", "--require", "128", str(f))
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and res.stdout == "", res.stderr
    assert str(f) in lines[0] and field in lines[0], lines[0]


def test_missing_file_and_json_error_record(tmp_path: Path, run: Run) -> None:
    res = run("security", "--require", "128", str(tmp_path / "none.json"), "--json")
    assert res.returncode == 2
    rec = json.loads(res.stdout)
    assert rec["status"] == "error" and "none.json" in rec["error"]
    assert "cannot read" in rec["error"]


def test_params_file_json_without_requirement(tmp_path: Path, run: Run) -> None:
    f = write(tmp_path, "params.json", {"params": {"poly_len": 2048, "moduli": SPIRAL_MODULI,
                                                   "noise_width": 6.4,
                                                   "secret_distribution": "gaussian"}})
    res = run("security", str(f), "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["status"] == "estimated" and out["kind"] == "plan document"
    assert out["cheapest_attack"] == "bdd"
    assert abs(out["security_bits"] - 124.9) < 0.1
    assert out["cost_model"] == "matzov"
    assert out["security_bits"] == min(a["log2_rop"] for a in out["attacks"].values())
    assert out["instance"]["modulus"] == str(268369921 * 249561089)


def test_lwe_instance_modulus_syntax_and_adps16(run: Run) -> None:
    outs = []
    for q in ("66974689739603969", "268369921*249561089", "268369921 · 249561089"):
        res = run("security", "--lwe-dim", "2048", "--modulus", q, "--secret", "ternary",
                  "--error", "gaussian:2.553231", "--cost-model", "adps16", "--json")
        assert res.returncode == 0, res.stderr
        outs.append(json.loads(res.stdout))
    assert outs[0] == outs[1] == outs[2]
    # reference (lattice-estimator, ADPS16): dual_hybrid 92.272, usvp 92.856
    assert abs(outs[0]["attacks"]["dual_hybrid"]["log2_rop"] - 92.272) < 0.01
    assert abs(outs[0]["attacks"]["usvp"]["log2_rop"] - 92.856) < 0.01
    a = run("security", "--lwe-dim", "2048", "--modulus", "2^54", "--secret", "gaussian",
            "--error", "gaussian:2.55323", "--json")
    b = run("security", "--lwe-dim", "2048", "--modulus", str(2**54), "--secret", "gaussian",
            "--error", "gaussian:2.55323", "--json")
    assert a.returncode == 0 and a.stdout == b.stdout
    level = reference_level("n=2048,log2q=54,q=18014398509481984,sigma=2.55323,"
                            "secret=gaussian,m=oo")
    assert abs(json.loads(a.stdout)["security_bits"] - level) < 0.03


def test_human_output_and_usage_errors(tmp_path: Path, run: Run) -> None:
    res = run("security", "--lwe-dim", "1024", "--modulus", "0x1000000", "--secret",
              "sparse-ternary:64,64", "--error", "gaussian:3.2")
    assert res.returncode == 0, res.stderr
    assert "security:" in res.stdout and "dual_hybrid" in res.stdout
    bad = run("security", "--lwe-dim", "1024", "--modulus", "65537", "--secret", "binary",
              "--error", "gaussian:3.2")
    assert bad.returncode == 2
    assert "--secret" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    assert "--modulus" in run("security", "--lwe-dim", "1024").stderr
    badq = run("security", "--lwe-dim", "1024", "--modulus", "2^x", "--secret", "ternary",
               "--error", "gaussian:3.2")
    assert badq.returncode == 2 and "--modulus: cannot read '2^x'" in badq.stderr
    assert run("security").returncode == 2
    neg = run("security", "--require", "-1", "--preset", "sealpir")
    assert neg.returncode == 2 and "--require" in neg.stderr
    unknown = run("security", "--preset", "nope")
    assert unknown.returncode == 2 and "sealpir" in unknown.stderr


def test_gate_api(tmp_path: Path) -> None:
    ok = write(tmp_path, "ok.json", {"poly_len": 2048, "moduli": [2**54 + 1], "noise_width": 6.4})
    assert check_params_file(ok)["status"] == "pass"
    weak = write(tmp_path, "weak.json", {"params": {"poly_len": 2048, "moduli": SPIRAL_MODULI,
                                                    "noise_width": 6.4}})
    with pytest.raises(SpiralpirError, match=r"weak\.json: 124\.8 bits < 128 required, short by "
                                             r"3\.2 bits \(cheapest attack bdd"):
        check_params_file(weak)
    assert check_params_file(weak, floor=120)["cheapest_attack"] == "bdd"


def test_every_shipped_parameter_set_meets_the_floor(run: Run) -> None:
    files = sorted((REPO / "generated").glob("*/params.json"))
    assert files
    res = run("security", "--require", "128", *map(str, files))
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("PASS ") == len(files)


def test_real_process(tmp_path: Path) -> None:
    f = write(tmp_path, "weak.json", ring(modulus="2^60"))
    res = subprocess.run(
        [sys.executable, "-c", "from spiralpir.optimizer.cli import main; main()", "security",
         "--require", "128", str(f)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 1 and res.stdout.startswith(f"FAIL {f}: ")
    bad = write(tmp_path, "bad.json", ring(secret="binary"))
    res = subprocess.run(
        [sys.executable, "-c", "from spiralpir.optimizer.cli import main; main()", "security",
         "--require", "128", str(bad)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "field 'secret'" in res.stderr
