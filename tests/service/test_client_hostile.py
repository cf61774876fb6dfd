"""The Python client against a hostile server: it builds and loads nothing the server names
without checking, refuses over-long replies, and writes its state file safely."""

from __future__ import annotations

import http.server
import json
import os
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from service_helpers import DEMO
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import client_state, client_wire, pir_client
from spiralpir.optimizer.service import http_api as api
from spiralpir.optimizer.service.binding import Build
from spiralpir.optimizer.service.pir_client import PirClient

# path -> (status, body, send Content-Length)
Routes = dict[str, tuple[int, bytes, bool]]


class FakeServer:
    """A tiny HTTP server answering fixed routes (GET and POST alike)."""

    def __init__(self, routes: Routes) -> None:
        self.routes = routes
        self.hits: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # a body without Content-Length ends at close

            def _answer(self) -> None:
                outer.hits.append(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                status, body, with_length = outer.routes.get(self.path, (404, b"{}", True))
                self.send_response(status)
                self.send_header("Content-Type", "application/octet-stream")
                if with_length:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, *args: Any) -> None:
                pass

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, *_a: Any) -> None:
                pass  # the client hanging up on an over-long reply is expected here

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake_server() -> Iterator[Callable[[Routes], FakeServer]]:
    started: list[FakeServer] = []

    def start(routes: Routes) -> FakeServer:
        srv = FakeServer(routes)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()


@pytest.fixture
def no_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the client tries to compile or load anything."""
    def refuse(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("the client tried to build for the server")
    monkeypatch.setattr(pir_client, "open_build", refuse)


def params_route(info: dict[str, Any]) -> Routes:
    return {api.PARAMS: (200, json.dumps(info).encode(), True)}


@pytest.mark.parametrize("name", ["../demo", "/tmp/evil", "..", "demo/../demo", "de mo", "",
                                  "démo", "demo\n", 7, None])
def test_hostile_build_names_are_refused(name: Any, fake_server: Callable[[Routes], FakeServer],
                                         no_build: None, tmp_path: Path) -> None:
    srv = fake_server(params_route({"build": name, "params": {}}))
    with pytest.raises(SpiralpirError, match="not a plain name"):
        PirClient(srv.url, state_path=tmp_path / "state.json")


def test_build_names_must_resolve_under_the_generated_root(tmp_path: Path) -> None:
    root = tmp_path / "generated"
    (root / "good").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (root / "escape").symlink_to(tmp_path / "elsewhere")
    assert client_wire.generated_source("good", root) == (root / "good").resolve()
    with pytest.raises(SpiralpirError, match="outside"):
        client_wire.generated_source("escape", root)
    with pytest.raises(SpiralpirError, match="not a plain name"):
        client_wire.generated_source("../elsewhere", root)


def test_parameters_are_compared_before_any_build(fake_server: Callable[[Routes], FakeServer],
                                                  no_build: None, tmp_path: Path) -> None:
    local = json.loads((DEMO / "params.json").read_text())["params"]
    server_params = dict(local, nu_1=local["nu_1"] + 1, moduli=[1, 2])
    server_params["num_records"] = server_params.pop("records")
    srv = fake_server(params_route({"build": "demo", "ci": False, "params": server_params}))
    with pytest.raises(SpiralpirError) as err:
        PirClient(srv.url, source_dir=DEMO, state_path=tmp_path / "state.json")
    msg = str(err.value)
    assert "nu_1: server" in msg and "moduli: server [1, 2]" in msg
    assert "poly_len" not in msg, "only the differing fields are named"
    # equal parameters pass the check (and the client goes on to build: refused here)
    srv.routes.update(params_route({"build": "demo", "ci": False,
                                    "params": dict(local, num_records=local["records"])}))
    with pytest.raises(AssertionError, match="tried to build"):
        PirClient(srv.url, source_dir=DEMO, state_path=tmp_path / "state.json")


@pytest.fixture(scope="module")
def demo_build(demo_inst: builder.Instance) -> Build:
    return Build(demo_inst)


def demo_routes(build: Build, response: bytes, with_length: bool = True) -> Routes:
    info = {"build": "demo", "ci": False, "params": build.lib.params,
            "num_records": build.num_records, "record_size": build.record_size}
    return {**params_route(info),
            api.SETUP: (200, b'{"client_id": "c1"}', True),
            api.QUERY: (200, response, with_length)}


@pytest.mark.parametrize("with_length", [True, False])
def test_over_long_responses_are_refused(demo_build: Build, with_length: bool,
                                         fake_server: Callable[[Routes], FakeServer],
                                         tmp_path: Path) -> None:
    size = int(demo_build.lib.params["response_bytes"])
    srv = fake_server(demo_routes(demo_build, b"\0" * (size + 1), with_length))
    client = PirClient(srv.url, build=demo_build, state_path=tmp_path / "state.json")
    cid = api.client_id_of(client.keys.public_params())  # the id a real server assigns
    srv.routes[api.SETUP] = (200, json.dumps({"client_id": cid}).encode(), True)
    assert client.response_limit == size
    with pytest.raises(SpiralpirError, match=f"more than the {size} bytes"):
        client.query(3)
    # an exact-size (garbage) response gets through the limit to the decoder's own checks
    srv.routes[api.QUERY] = (200, b"\0" * size, with_length)
    with pytest.raises(SpiralpirError) as err:
        client.query(3)
    assert "more than" not in str(err.value)
    client.close()


def test_over_long_json_is_refused(fake_server: Callable[[Routes], FakeServer],
                                   tmp_path: Path) -> None:
    huge = json.dumps({"build": "demo", "pad": "x" * client_wire.MAX_JSON_BYTES}).encode()
    for with_length in (True, False):
        srv = fake_server({api.PARAMS: (200, huge, with_length)})
        with pytest.raises(SpiralpirError, match="bytes"):
            PirClient(srv.url, state_path=tmp_path / "state.json")


def test_state_file_is_private_and_never_follows_links(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    state = tmp_path / "state" / "client.json"
    state.parent.mkdir()
    state.symlink_to(victim)  # the rename replaces the link, it does not write through it
    client_state.write_private_file(state, b"secret")
    assert victim.read_text() == "keep"
    assert not state.is_symlink() and state.read_bytes() == b"secret"
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert sorted(os.listdir(state.parent)) == ["client.json"], "no temporary left behind"
    # a planted file or link at the temporary's name is an error, never written through
    monkeypatch.setattr(client_state.secrets, "token_hex", lambda _n: "fixed")
    planted = state.parent / ".client.json.fixed.tmp"
    planted.symlink_to(victim)
    with pytest.raises(FileExistsError):
        client_state.write_private_file(state, b"other")
    assert victim.read_text() == "keep" and state.read_bytes() == b"secret"
