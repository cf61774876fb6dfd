"""Property tests of the HTTP layer against a real server (the demo build's CI twin, served
from a thread of this process): random and mutated requests — bodies, client ids, headers,
methods, paths, block indices with Unicode digits, wrong or partial framing — never get a 5xx
or make the server log a traceback, every 4xx carries a JSON {"error": ...} body, and the
server keeps answering correctly afterwards. Hypothesis runs derandomized with a bounded number
of examples."""

from __future__ import annotations

import base64
import json
import random
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from live_server import LiveServer, body_of, start, status_of
from mutations import file_contents, mutated_bytes
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import http_api as api
from spiralpir.optimizer.service.binding import Build, ClientKeys
from spiralpir.optimizer.service.pir_client import PirClient

BOUNDED = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                   suppress_health_check=[HealthCheck.function_scoped_fixture,
                                          HealthCheck.too_slow, HealthCheck.data_too_large])
# the slower properties: fewer examples, stop at the first failing one, no shrinking
FEWER_EXAMPLES = settings(BOUNDED, max_examples=30, phases=[Phase.explicit, Phase.generate],
                          report_multiple_bugs=False)


@pytest.fixture(scope="module")
def build(demo_inst: builder.Instance) -> Build:
    return Build(demo_inst, ci=True)


@pytest.fixture(scope="module")
def live(build: Build) -> LiveServer:
    return start(build)


@pytest.fixture(scope="module")
def stream(build: Build) -> LiveServer:
    return start(build, blocks=2)


class Client:
    """Keys with a fixed seed, registered with a server."""

    def __init__(self, live: LiveServer) -> None:
        self.keys = ClientKeys.new(live.build.lib, bytes(range(32)))
        self.pp = self.keys.public_params()
        r = requests.post(live.url + api.SETUP, data=self.pp, timeout=60)
        assert r.status_code == 200, r.text
        self.cid: str = r.json()["client_id"]
        self.query = self.keys.query(3)


@pytest.fixture(scope="module")
def client(live: LiveServer) -> Client:
    return Client(live)


def request(method: bytes, path: bytes, headers: list[tuple[bytes, bytes]], body: bytes,
            length: bytes | None) -> bytes:
    """An HTTP/1.1 request; `length` is the Content-Length value sent (None: none)."""
    lines = [method + b" " + path + b" HTTP/1.1", b"Host: test", b"Connection: close"]
    lines += [k + b": " + v for k, v in headers]
    if length is not None:
        lines.append(b"Content-Length: " + length)
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def check_reply(live: LiveServer, reply: bytes, json_errors: bool = True,
                parser_logs: bool = False) -> int | None:
    """No 5xx, no logged traceback (parser_logs: except those of aiohttp's HTTP parser), and
    (json_errors) a JSON error body on every 4xx."""
    status = status_of(reply)
    handler, parser = live.errors.take()
    assert not handler, handler[-1]
    assert parser_logs or not parser, parser[-1]
    assert status is None or status < 500, reply[:2000]
    if json_errors and status is not None and 400 <= status < 500:
        doc = json.loads(body_of(reply))
        assert isinstance(doc, dict) and isinstance(doc.get("error"), str) and doc["error"], doc
    return status


def assert_serving(live: LiveServer, keys: ClientKeys, index: int) -> None:
    """The server answers a fresh query for `index` with the right record."""
    r = requests.post(live.url + api.SETUP, data=keys.public_params(), timeout=60)
    assert r.status_code == 200, r.text
    q = keys.query(index)
    a = requests.post(live.url + api.QUERY, data=q,
                      headers={api.CLIENT_HEADER: r.json()["client_id"]}, timeout=60)
    assert a.status_code == 200, a.text
    assert keys.decode(index, a.content, live.build.record_size) == live.records[index]


def field_value(b: bytes) -> bool:
    """A valid HTTP field value: no control characters but tab (bytes >= 0x80 are obs-text)."""
    return all(c == 9 or 32 <= c != 127 for c in b)


# client ids: the real one, ASCII and non-ASCII text (sent as raw UTF-8), bytes, empty
def client_ids(real: str) -> st.SearchStrategy[bytes | None]:
    own = st.just(real.encode())
    return st.one_of(own, own, own, st.none(), st.just(b""),
                     st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass")
                                              .strip(b" \t")).filter(field_value),
                     st.binary(max_size=40).map(lambda b: b.strip(b" \t")).filter(field_value))


@st.composite
def bodies(draw: st.DrawFn, client: Client, own: bytes) -> bytes:
    """Mostly `own` (the route's object) with one payload bit flipped; else mutated objects of
    either kind, random bytes, or an object with a nonzero aux field."""
    kind = draw(st.sampled_from(["flip", "flip", "query", "pp", "random", "aux"]))
    if kind == "flip":  # one payload bit: the length stays exact, the contents change
        obj = bytearray(own)
        obj[draw(st.integers(32, len(obj) - 1))] ^= 1 << draw(st.integers(0, 7))
        return bytes(obj)
    if kind == "query":
        return draw(mutated_bytes(client.query))
    if kind == "pp":
        return draw(mutated_bytes(client.pp))
    if kind == "aux":  # a real object whose header's aux field is not 0
        obj = bytearray(draw(st.sampled_from([client.query, client.pp])))
        obj[24 + draw(st.integers(0, 7))] ^= 1 << draw(st.integers(0, 7))
        return bytes(obj)
    return draw(st.binary(max_size=300))


@BOUNDED
@given(data=st.data())
def test_posted_bodies_and_headers(live: LiveServer, client: Client, data: st.DataObject) -> None:
    path = data.draw(st.sampled_from([api.SETUP, api.QUERY]))
    body = data.draw(bodies(client, client.pp if path == api.SETUP else client.query))
    headers = []
    cid = data.draw(client_ids(client.cid))
    if cid is not None:
        headers.append((api.CLIENT_HEADER.encode(), cid))
    ctype = data.draw(st.sampled_from([None, b"application/octet-stream", b"application/json",
                                       b"text/plain; charset=\xff", b"multipart/form-data"]))
    if ctype is not None:
        headers.append((b"Content-Type", ctype))
    reply = live.raw(request(b"POST", path.encode(), headers, body, str(len(body)).encode()))
    status = check_reply(live, reply)
    assert status is not None, "no reply to a well-formed request"
    if status == 200 and path == api.SETUP:
        assert body[24:32] == bytes(8), "public parameters with a nonzero aux were accepted"


def test_aux_flipped_public_params_get_400(live: LiveServer, client: Client) -> None:
    """The header's aux field must be 0: a flipped one is refused, not a second client id."""
    pp = bytearray(client.pp)
    pp[24] ^= 1
    r = requests.post(live.url + api.SETUP, data=bytes(pp), timeout=60)
    assert r.status_code == 400, r.text
    assert "aux" in r.json()["error"]


def test_serving_after_hostile_bodies(live: LiveServer, client: Client) -> None:
    for index in random.Random(1).sample(range(len(live.records)), 3):
        assert_serving(live, client.keys, index)


# -- framing: Content-Length wrong, missing, non-numeric or of Unicode digits; bodies cut ----

BAD_LENGTHS = st.sampled_from([b"-1", b"+5", b" 5", b"0x10", b"1e3", b"", b"99999999999999999999",
                               "١٢".encode(), "²".encode(), b"5, 5", b"5 5"])
TRANSFER = st.sampled_from([None, b"chunked", b"gzip", b"identity", b"chunked, chunked"])


@BOUNDED
@given(data=st.data())
def test_framing(live: LiveServer, client: Client, data: st.DataObject) -> None:
    """Every body byte is sent; the declared length is malformed, absent, or at most the bytes
    sent (the rest is then the start of a next, garbage request)."""
    path = data.draw(st.sampled_from([api.SETUP, api.QUERY]))
    body = data.draw(st.sampled_from([client.query, b"", b"x" * 10, b"0\r\n\r\n"]))
    length = data.draw(st.one_of(st.none(), BAD_LENGTHS,
                                 st.integers(0, len(body)).map(lambda n: str(n).encode())))
    headers = [(api.CLIENT_HEADER.encode(), client.cid.encode())]
    te = data.draw(TRANSFER)
    if te is not None:
        headers.append((b"Transfer-Encoding", te))
    if te is not None and b"chunked" in te and length is None:
        body = b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"  # a complete chunked body
    reply = live.raw(request(b"POST", path.encode(), headers, body, length))
    # malformed framing is refused by the HTTP parser before any route runs: its 400s are
    # aiohttp's, plain text, and logged by aiohttp (test_parser_errors_log_no_traceback)
    check_reply(live, reply, json_errors=False, parser_logs=True)


@FEWER_EXAMPLES
@given(data=st.data())
def test_body_ends_early(live: LiveServer, client: Client, data: st.DataObject) -> None:
    path = data.draw(st.sampled_from([api.SETUP, api.QUERY]))
    body = client.query if path == api.QUERY else client.pp
    cut = data.draw(st.integers(0, len(body) - 1))
    headers = [(api.CLIENT_HEADER.encode(), client.cid.encode())]
    if data.draw(st.booleans()):
        headers.append((b"Transfer-Encoding", b"chunked"))
        raw = request(b"POST", path.encode(), headers, (b"%x\r\n" % len(body) + body)[:cut], None)
    else:
        raw = request(b"POST", path.encode(), headers, body[:cut], str(len(body)).encode())
    check_reply(live, live.raw(raw, half_close=True), json_errors=False)


def test_parser_errors_log_no_traceback(live: LiveServer, client: Client) -> None:
    raw = request(b"POST", api.QUERY.encode(), [], client.query, "١٢".encode())
    check_reply(live, live.raw(raw), json_errors=False)


def test_serving_after_bad_framing(live: LiveServer, client: Client) -> None:
    assert_serving(live, client.keys, 11)


# -- routes and methods --------------------------------------------------------------------

_SEGMENTS = st.text(st.characters(categories=["Nd", "No", "L", "P"], max_codepoint=0x3000),
                    max_size=6)


@st.composite
def paths(draw: st.DrawFn) -> bytes:
    base = draw(st.sampled_from(["/", "/v1", api.SETUP, api.QUERY, api.STREAM, api.PARAMS,
                                 api.HEALTH, "/v2/query", "/v1/stream/x/blocks"]))
    extra = draw(st.lists(_SEGMENTS, max_size=2))
    path = "/".join([base.rstrip("/"), *extra]) or "/"
    quoted = draw(st.booleans())
    return (urllib.parse.quote(path) if quoted else path).encode("utf-8", "surrogatepass")


METHODS = st.one_of(st.sampled_from([b"GET", b"POST", b"PUT", b"DELETE", b"PATCH", b"HEAD",
                                     b"OPTIONS", b"TRACE"]),
                    st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=8).map(str.encode))


@FEWER_EXAMPLES
@given(method=METHODS, path=paths())
def test_routes_and_methods(live: LiveServer, method: bytes, path: bytes) -> None:
    reply = live.raw(request(method, path, [], b"", b"0"))
    # raw non-ASCII in a request target is malformed HTTP, refused by aiohttp's parser;
    # a HEAD reply has no body
    check_reply(live, reply, json_errors=method != b"HEAD", parser_logs=True)


def test_serving_after_routes(live: LiveServer, client: Client) -> None:
    assert_serving(live, client.keys, 17)


# -- stream block indices ------------------------------------------------------------------

BLOCK_TEXT = st.one_of(st.integers(-3, 5).map(str), st.text(st.characters(
    categories=["Nd", "No"], max_codepoint=0x3000), min_size=1, max_size=3), _SEGMENTS)


@pytest.fixture(scope="module")
def stream_id(stream: LiveServer) -> Iterator[tuple[ClientKeys, str]]:
    c = Client(stream)
    r = requests.post(stream.url + api.STREAM, data=c.query, headers={api.CLIENT_HEADER: c.cid},
                      timeout=60)
    assert r.status_code == 201, r.text
    yield c.keys, r.json()["stream_id"]


@FEWER_EXAMPLES
@given(text=BLOCK_TEXT, quoted=st.booleans())
def test_stream_block_indices(stream: LiveServer, stream_id: tuple[ClientKeys, str], text: str,
                              quoted: bool) -> None:
    _, sid = stream_id
    segment = urllib.parse.quote(text, safe="") if quoted else text
    target = api.block_path(sid, segment).encode("utf-8", "surrogatepass")
    reply = stream.raw(request(b"GET", target, [], b"", None))
    status = check_reply(stream, reply)
    # only an ASCII decimal index of an existing block is a block
    if status == 200:
        assert text.isascii() and text.isdigit() and int(text) < 2, text


def test_stream_serving_after_block_indices(stream: LiveServer,
                                            stream_id: tuple[ClientKeys, str]) -> None:
    keys, sid = stream_id
    n = len(stream.records) // 2
    for block in (0, 1):
        r = requests.get(stream.url + api.block_path(sid, block), timeout=60)
        assert r.status_code == 200, r.text
        assert keys.decode(3, r.content, stream.build.record_size) == stream.records[block * n + 3]


# -- client state files --------------------------------------------------------------------


@pytest.fixture(scope="module")
def state_doc(live: LiveServer, build: Build, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A genuine state file, written by the client after a query."""
    path = tmp_path_factory.mktemp("state") / "state.json"
    c = PirClient(live.url, build=build, state_path=path)
    assert c.query(5).record == live.records[5]
    c.close()
    return json.loads(path.read_text())


def test_client_state_seed_is_accepted(live: LiveServer, build: Build, state_doc: dict,
                                       tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state_doc))
    c = PirClient(live.url, build=build, state_path=path)
    assert c.query(6).record == live.records[6]
    c.close()


@FEWER_EXAMPLES
@given(data=st.data())
def test_client_state_files(live: LiveServer, build: Build, state_doc: dict, tmp_path: Path,
                            data: st.DataObject) -> None:
    path = tmp_path / "state.json"
    if data.draw(st.booleans()):
        raw = bytearray(base64.b64decode(state_doc["client_state"]))
        raw[data.draw(st.integers(0, len(raw) - 1))] ^= 1 << data.draw(st.integers(0, 7))
        path.write_bytes(json.dumps({**state_doc, "client_state":
                                     base64.b64encode(bytes(raw)).decode()}).encode())
    else:
        path.write_bytes(data.draw(file_contents(state_doc)))
    try:
        c = PirClient(live.url, build=build, state_path=path)
        index = data.draw(st.integers(0, len(live.records) - 1))
        assert c.query(index).record == live.records[index], "a wrong record from a state file"
        c.close()
    except SpiralpirError as exc:
        assert "\n" not in str(exc) and path.name in str(exc), str(exc)
