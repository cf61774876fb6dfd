"""Code generation: checked-in builds regenerate without a diff, banners, strict inputs,
atomic writes, and the generated static_asserts reject wrong constants."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from spiralpir.optimizer import codegen
from spiralpir.optimizer.errors import SpiralpirError

REPO = Path(__file__).resolve().parents[2]
GENERATED = REPO / "generated"
CHECKED_IN = ["demo", "spiral_2e20x256b", "spiral_2e18x30kb", "spiral_2e14x100kb"]
# the same three databases for SpiralStream / SpiralPack / SpiralStreamPack
VARIANT_BUILDS = [f"{v}_{shape}" for v in ("stream", "pack", "streampack")
                  for shape in ("2e20x256b", "2e18x30kb", "2e14x100kb")]
CHECKED_IN += VARIANT_BUILDS
MIN_BITS = 128.0


def _doc(name: str) -> dict:
    return json.loads((GENERATED / name / "params.json").read_text())


@pytest.mark.parametrize("name", CHECKED_IN)
def test_regenerating_gives_no_diff(name: str, tmp_path: Path) -> None:
    doc = _doc(name)
    out = codegen.generate_from_document(name, doc, tmp_path)  # = the reproducing command
    on_disk = sorted(p.name for p in (GENERATED / name).iterdir() if p.is_file())
    fresh = sorted(p.name for p in out.iterdir() if p.is_file())
    assert on_disk == fresh
    for fname in fresh:
        assert (out / fname).read_text() == (GENERATED / name / fname).read_text(), (
            f"generated/{name}/{fname} is stale: run `{codegen.reproduce_command(name)}`"
        )


@pytest.mark.parametrize("name", CHECKED_IN)
def test_checked_in_params_are_secure(name: str) -> None:
    from spiralpir.estimator.gate import check_params_file

    doc = _doc(name)
    # the estimator's gate
    report = check_params_file(GENERATED / name / "params.json", floor=MIN_BITS)
    # the report stored at generation agrees with today's estimator (up to refinements)
    assert abs(report["security_bits"] - doc["security"]["security_bits"]) < 1.0
    bits = doc["security"]["security_bits"]
    assert bits is not None and bits >= MIN_BITS, f"{name}: {bits} bits < {MIN_BITS}"
    # the variant its name says, validated by the parameter layer
    params = codegen.normalize_params(doc["params"])
    assert params == doc["params"]
    prefix = name.split("_")[0]
    assert params["variant"] == {"stream": "stream", "pack": "pack",
                                 "streampack": "stream_pack"}.get(prefix, "spiral")


@pytest.mark.parametrize("name", CHECKED_IN)
def test_banner_on_every_file(name: str) -> None:
    for path in sorted((GENERATED / name).iterdir()):
        if path.name == "params.json" or not path.is_file():  # wasm/: a compiled client
            continue
        head = "\n".join(path.read_text().splitlines()[:4])
        assert "DO NOT EDIT" in head, path
        assert codegen.reproduce_command(name) in head, path
        assert codegen.GENERATOR_VERSION in head, path
        assert re.search(r"sha256 of inputs: [0-9a-f]{64}", head), path
        assert not re.search(r"\b20\d\d-\d\d-\d\d\b", path.read_text()), f"date in {path}"


def test_identifiers_carry_the_name() -> None:
    hpp = (GENERATED / "demo" / "params.hpp").read_text()
    assert "struct demo_params {" in hpp and "struct demo_ci_params : demo_params" in hpp
    assert "SPIRALPIR_DEFINE_C_API(spiralpir_demo, demo_params)" in (
        GENERATED / "demo" / "instance.cpp").read_text()


def test_generation_is_deterministic_and_atomic(tmp_path: Path) -> None:
    doc = _doc("demo")
    sec = doc["security"]
    a = codegen.generate("twin_a", doc["params"], doc["estimate"], tmp_path, security=sec)
    first = {p.name: p.read_bytes() for p in a.iterdir()}
    codegen.generate("twin_a", doc["params"], doc["estimate"], tmp_path, security=sec)
    assert {p.name: p.read_bytes() for p in a.iterdir()} == first
    assert not [p for p in a.iterdir() if p.name.startswith(".")], "temporary files left"


def test_strict_inputs(tmp_path: Path) -> None:
    doc = _doc("demo")
    bad = dict(doc["params"], bogus=1)
    with pytest.raises(SpiralpirError, match="bogus"):
        codegen.generate("x", bad, {}, tmp_path, security={})
    with pytest.raises(SpiralpirError, match="unknown top-level"):
        codegen.parse_plan_document({**doc, "extra": 1})
    with pytest.raises(SpiralpirError, match="invalid build name"):
        codegen.render("Bad-Name", doc)
    missing = dict(doc["params"])
    del missing["moduli"]
    with pytest.raises(SpiralpirError, match="moduli"):
        codegen.normalize_params(missing)
    assert not (tmp_path / "x").exists()


def test_a_wider_split_is_compiled_only_where_the_document_asks() -> None:
    """shards.shard_bits above the runtime's default of 3 becomes the params struct's max_shard_bits
    (the splits the build compiles); at or below it, or absent, the struct is unchanged; a split
    beyond 2^nu_2 folding columns or the runtime's ceiling is refused naming the field."""
    doc = _doc("demo")
    nu_2 = doc["params"]["nu_2"]
    assert nu_2 >= 5  # room for the 2^5 split below
    plain = codegen.render("x", doc)["params.hpp"]
    assert "max_shard_bits" not in plain
    assert codegen.render("x", {**doc, "shards": {"shard_bits": 3}})["params.hpp"].count(
        "max_shard_bits") == 0
    wide = codegen.render("x", {**doc, "shards": {"shard_bits": 5, "shards": 32}})
    assert "static constexpr unsigned max_shard_bits = 5;" in wide["params.hpp"]
    assert json.loads(wide["params.json"])["shards"]["shard_bits"] == 5
    field = "shards.shard_bits"
    for bits, why in ((nu_2 + 1, rf"exceed the 2\^nu_2 = {2**nu_2}"), (11, field), (-1, field),
                      ("4", field), (True, field)):
        with pytest.raises(SpiralpirError, match=why):
            codegen.render("x", {**doc, "shards": {"shard_bits": bits}})
    with pytest.raises(SpiralpirError, match="'shards' must be an object"):
        codegen.render("x", {**doc, "shards": 5})


def test_templates_are_strict() -> None:
    import jinja2
    from spiralpir.optimizer.codegen import rendering

    env = rendering._environment()
    with pytest.raises(jinja2.UndefinedError):
        env.get_template("instance.cpp.j2").render(name="x")


def test_ci_twin_is_smaller_and_fits() -> None:
    from spiralpir.optimizer.params.parameters import Parameters

    for name in CHECKED_IN:
        lit = _doc(name)["params"]
        twin = Parameters.from_literal(codegen.ci_literal(lit))  # validates capacity
        full = Parameters.from_literal(lit)
        assert twin.nu_1 <= full.nu_1 and twin.nu_2 <= full.nu_2
        assert twin.records <= full.records and twin.records <= twin.capacity
        assert (twin.moduli, twin.poly_len, twin.t_gsw, twin.p, twin.instances) == (
            full.moduli, full.poly_len, full.t_gsw, full.p, full.instances)


@pytest.mark.parametrize("corrupt", [
    ("inline constexpr std::uint64_t q2 = ", "q2"),
    ("inline constexpr std::array<std::uint64_t, num_moduli> ntt_psi = { ", "moduli"),
    ("inline constexpr std::array<std::uint64_t, num_moduli> crt_hat_inv = { ", "moduli"),
    ("inline constexpr unsigned gadget_bits_gsw = ", "t_gsw"),
    ("inline constexpr std::uint64_t max_lazy_products = ", "lazy"),
])
def test_static_asserts_reject_wrong_constants(corrupt: tuple[str, str], tmp_path: Path) -> None:
    prefix, what = corrupt
    src = (GENERATED / "demo" / "params.hpp").read_text()
    start = src.index(prefix) + len(prefix)
    m = re.match(r"\d+", src[start:])
    assert m, prefix
    wrong = src[:start] + str(int(m.group()) + 2) + src[start + len(m.group()):]
    for text, ok in ((src, True), (wrong, False)):
        (tmp_path / "params.hpp").write_text(text)
        (tmp_path / "t.cpp").write_text('#include "params.hpp"\nint main() { return 0; }\n')
        proc = subprocess.run(
            ["c++", "-std=c++20", "-fsyntax-only", f"-I{REPO / 'runtime' / 'include'}",
             f"-I{tmp_path}", str(tmp_path / "t.cpp")], capture_output=True, text=True)
        assert (proc.returncode == 0) == ok, proc.stderr[-2000:]
        if not ok:
            assert "static assertion failed" in proc.stderr


def test_builder_explains_missing_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    from spiralpir.optimizer.build import builder

    real_which = builder.shutil.which
    monkeypatch.setattr(builder.shutil, "which",
                        lambda name: None if name == "cmake" else real_which(name))
    with pytest.raises(SpiralpirError, match="CMake not found"):
        builder.build(GENERATED / "demo", show_progress=False)
    monkeypatch.setattr(builder.shutil, "which",
                        lambda name: None if name in ("c++", "g++", "clang++") else real_which(
                            name))
    monkeypatch.delenv("CXX", raising=False)
    with pytest.raises(SpiralpirError, match="no C\\+\\+ compiler"):
        builder.build(GENERATED / "demo", show_progress=False)


def test_builder_refuses_avx512_on_a_cpu_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from spiralpir.optimizer.build import builder

    monkeypatch.setattr(builder, "cpu_has_avx512", lambda: False)
    with pytest.raises(SpiralpirError, match="lacks AVX-512"):
        builder.build(GENERATED / "demo", avx512=True, show_progress=False)


def test_not_a_generated_build(tmp_path: Path) -> None:
    from spiralpir.optimizer.build import builder

    with pytest.raises(SpiralpirError, match="not a generated build"):
        builder.build(tmp_path, show_progress=False)
