"""`serve`'s page options (cli/serve_page.py): the CORS origins it accepts, and what it serves
when em++ is missing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from spiralpir.optimizer.cli.serve_page import prepare_page
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service.web_page import check_origin

DEMO = Path(__file__).resolve().parents[2] / "generated" / "demo"


@pytest.mark.parametrize("origin", ["*", "https://pages.example", "http://127.0.0.1:8080"])
def test_origins_accepted(origin: str) -> None:
    assert check_origin(origin) == origin


@pytest.mark.parametrize("origin", ["pages.example", "https://pages.example/app", "ftp://x",
                                    "https://", "http://a b"])
def test_origins_refused(origin: str) -> None:
    with pytest.raises(ValueError, match="--cors-origin"):
        check_origin(origin)
    with pytest.raises(SpiralpirError, match="expected '\\*' or an origin"):
        prepare_page(DEMO, False, None, False, (origin,))


def demo_copy(tmp_path: Path) -> Path:
    src = tmp_path / "demo"
    src.mkdir()
    for name in ("instance.cpp", "instance_ci.cpp", "params.hpp", "params.json"):
        shutil.copy(DEMO / name, src / name)
    return src


def test_without_emxx_the_page_says_how_to_get_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMXX", "no-such-em++")
    src = demo_copy(tmp_path)
    page = prepare_page(src, False, tmp_path / "build", True, ("https://pages.example",))
    assert page.enabled and page.wasm_files is None
    assert page.cors_origins == ("https://pages.example",)
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert "apt-get install emscripten" in lines[0]
    assert f"spiralpir build --target wasm {src}" in lines[0]
    assert not (src / "wasm").exists()


def test_without_emxx_a_client_built_elsewhere_is_served(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMXX", "no-such-em++")
    src = demo_copy(tmp_path)
    (src / "wasm").mkdir()
    for name in ("client_ci.mjs", "batch.mjs", "keyword.mjs", "spiralpir_demo_ci.js",
                 "spiralpir_demo_ci.wasm"):
        (src / "wasm" / name).write_text("built elsewhere")
    page = prepare_page(src, True, tmp_path / "build", True, ())
    assert page.wasm_files is not None
    assert {k: v.name for k, v in page.wasm_files.items()} == {
        "client.mjs": "client_ci.mjs", "batch.mjs": "batch.mjs", "keyword.mjs": "keyword.mjs",
        "spiralpir_demo_ci.js": "spiralpir_demo_ci.js",
        "spiralpir_demo_ci.wasm": "spiralpir_demo_ci.wasm"}
    # the full build's client is not there: no page client for it
    assert prepare_page(src, False, tmp_path / "build", True, ()).wasm_files is None


def test_no_page(tmp_path: Path) -> None:
    page = prepare_page(demo_copy(tmp_path), False, None, False, ())
    assert not page.enabled and page.wasm_files is None
