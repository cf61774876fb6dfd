"""`serve`'s page options: the page at / with the build's WebAssembly client (compiled on the
first start when missing, build/wasm_client.py) and the origins CORS allows."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from spiralpir.optimizer.build import builder, wasm_client
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service.web_page import Page, check_origin


def page_options(f: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed([
        click.option("--page/--no-page", default=True, show_default=True,
                     help="Serve a lookup page at / running the build's WebAssembly client "
                     "(compiled with em++ into generated/NAME/wasm/ when missing)."),
        click.option("--cors-origin", "cors_origins", multiple=True, metavar="ORIGIN",
                     help="Let pages of ORIGIN (https://host[:port], or *) call the API from "
                     "a browser; repeatable. Default: same origin only."),
    ]):
        f = opt(f)
    return f


def _say(line: str) -> None:
    click.echo(f"spiralpir: {line}", err=True)


def prepare_page(source_dir: Path, ci: bool, build_dir: Path | None, enabled: bool,
                 cors_origins: tuple[str, ...]) -> Page:
    """The Page to serve: the WebAssembly client built if it is missing or stale (with
    progress lines); without em++, the page explains in one line how to get it."""
    try:
        origins = tuple(check_origin(o) for o in cors_origins)
    except ValueError as exc:
        raise SpiralpirError(str(exc)) from None
    if not enabled:
        return Page(cors_origins=origins)
    try:
        wasm_client.find_emxx()
    except SpiralpirError as exc:
        client = wasm_client.wasm_client(source_dir, ci)
        if all(p.is_file() for p in client.files().values()):
            return Page(True, client.files(), origins)  # built elsewhere, copied here
        _say(f"the page at / has no WebAssembly client: {exc}; then restart, or run "
             f"`spiralpir build --target wasm {source_dir}` where em++ is")
        return Page(True, None, origins)
    _say(f"the page at / uses the WebAssembly client in {source_dir}/wasm/ (built when missing)")
    client = wasm_client.build_wasm_client(source_dir, builder.build_root(build_dir)
                                           / "wasm-objects", ci=ci, log=_say)
    return Page(True, client.files(), origins)
