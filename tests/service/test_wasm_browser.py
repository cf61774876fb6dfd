"""The WebAssembly client in a real browser: headless Chromium (Debian's, driven by Playwright)
against real `spiralpir serve` processes of generated/demo on loopback (index, batch and
keyword servers; a keyword server's values are checked against the key file the test wrote,
its hashing against hashlib and the Python client's).

Records are checked against an oracle independent of the code under test: the sample
database's record i is SHA-256 of i as 8 big-endian bytes, and a values database's records
are the values written by the test. Bounded: the session fixture builds the wasm client once
(~10-40 s cold, nothing when build.json matches), each test has a 300 s timeout and every
browser wait 60 s; the whole module takes ~30-60 s on a quiet 2-core machine.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import requests
from service_helpers import DEMO, ServerProcess
from spiralpir.optimizer.build import builder, wasm_client
from spiralpir.optimizer.models.bucket_layout import BucketLayout
from spiralpir.optimizer.models.cuckoo_layout import CuckooLayout, tag_bytes_for
from spiralpir.optimizer.models.placement_bound import min_buckets
from spiralpir.optimizer.service import sample_db as sampledb
from spiralpir.optimizer.service.binding import Build
from spiralpir.optimizer.service.keyword_table import TableShape, value_capacity

pytestmark = pytest.mark.timeout(300)

CHROMIUM = "/usr/bin/chromium"  # Debian's (.ci/install); Playwright downloads no browser here
WAIT_MS = 60_000
DONE = "body[data-state=done], body[data-state=error]"
# before any page script: count the bytes drawn from crypto.getRandomValues, forbid Math.random
ENTROPY_SPY = """
window.__entropy = {calls: 0, bytes: 0};
const drawRandom = crypto.getRandomValues.bind(crypto);
crypto.getRandomValues = (a) => {
  window.__entropy.calls += 1; window.__entropy.bytes += a.byteLength; return drawRandom(a);
};
Math.random = () => { throw new Error("Math.random was called"); };
"""
# the IndexedDB entries the client keeps: [key, clientId, state as hex]
STORED = """async () => {
  const db = await new Promise((ok, no) => {
    const r = indexedDB.open("spiralpir", 1); r.onsuccess = () => ok(r.result);
    r.onerror = () => no(r.error); });
  const all = await new Promise((ok, no) => {
    const r = db.transaction("clients").objectStore("clients").getAll();
    r.onsuccess = () => ok(r.result); r.onerror = () => no(r.error); });
  db.close();
  return all.map((e) => [e.key, e.clientId,
    Array.from(e.state, (b) => b.toString(16).padStart(2, "0")).join("")]);
}"""


def sample_record(i: int) -> bytes:
    return hashlib.sha256(i.to_bytes(8, "big")).digest()


@pytest.fixture(scope="session")
def wasm_demo(demo_inst: builder.Instance) -> wasm_client.WasmClient:
    """generated/demo's WebAssembly client, built once (kept across runs like the native
    build: build.json names its inputs)."""
    return wasm_client.build_wasm_client(DEMO, builder.build_root() / "wasm-objects")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield b
        b.close()


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("wasm") / "sample.db"
    sampledb.write_sample_db(path)
    return path


def page_server(db: Path, log: Path, port: int = 0, *extra: str) -> ServerProcess:
    return ServerProcess(["--build", str(DEMO), "--db", str(db), "--threads", "1", "--page",
                          *extra], log, port)


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser profile (empty IndexedDB) with the entropy spy; uncaught page errors
    fail; console errors (a CSP violation, a failed load) are kept in pg.console_errors."""
    ctx = browser.new_context()
    ctx.add_init_script(ENTROPY_SPY)
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.console_errors = []
    pg.on("console", lambda m: pg.console_errors.append(m.text) if m.type == "error" else None)
    yield pg
    ctx.close()
    assert not errors, f"errors in the page: {errors}"


def look_up(pg: Any, url: str) -> tuple[str, str, dict[str, str]]:
    """Open URL (the page with ?index=...) and wait for its lookup: (#record, #error, the
    figures table as {name: value})."""
    pg.goto(url)
    pg.wait_for_selector(DONE, state="attached", timeout=WAIT_MS)
    rows = pg.locator("#figures tr").all_inner_texts()
    figures = dict(r.split("\t", 1) for r in rows)
    return pg.inner_text("#record"), pg.inner_text("#error"), figures


def uploaded(figures: dict[str, str]) -> int:
    return int(figures["public parameters uploaded"].removesuffix(" B").replace(",", ""))


def test_random_records_in_the_page(wasm_demo: wasm_client.WasmClient, sample_db: Path,
                                    page: Any, rng: random.Random, tmp_path: Path) -> None:
    srv = page_server(sample_db, tmp_path / "server.log")
    try:
        indices = [0, 65535, *rng.sample(range(1, 65535), 4)]
        for n, i in enumerate(indices):
            record, error, figures = look_up(page, f"{srv.url}/?index={i}")
            assert error == "", f"record {i}: {error}"
            assert bytes.fromhex(record) == sample_record(i), f"record {i}"
            # keys made once, kept in IndexedDB: the parameters go up on the first lookup only
            assert (uploaded(figures) > 0) == (n == 0), (i, figures)
        spy = page.evaluate("window.__entropy")
        assert spy["calls"] >= 1 and spy["bytes"] >= 32, spy  # seeds from getRandomValues
        # a person's way: type an index, press the button
        page.fill("#index", "4242")
        page.click("#go")
        page.locator("#status").filter(has_text=re.compile("^Record 4242 of")).wait_for(
            timeout=WAIT_MS)
        assert bytes.fromhex(page.inner_text("#record")) == sample_record(4242)
        # the module's API, as a page script would use it
        got = page.evaluate("""async (i) => {
            const { Client } = await import("/wasm/client.mjs");
            const c = await Client.connect(location.origin);
            const r = await c.get(i);
            c.close();
            return Array.from(r);
        }""", 31337)
        assert bytes(got) == sample_record(31337)
        out_of_range = page.evaluate("""async () => {
            const { Client } = await import("/wasm/client.mjs");
            const c = await Client.connect();
            try { await c.get(65536); return "no error"; } catch (e) { return e.message; }
        }""")
        assert "index 65536 out of range" in out_of_range
        assert page.console_errors == []  # nothing blocked by the CSP, nothing failed to load
    finally:
        srv.stop()


def test_server_restart_keeps_the_keys(wasm_demo: wasm_client.WasmClient, sample_db: Path,
                                       page: Any, tmp_path: Path) -> None:
    srv = page_server(sample_db, tmp_path / "first.log")
    port = int(srv.url.rsplit(":", 1)[1])
    try:
        record, error, first = look_up(page, f"{srv.url}/?index=11")
        assert error == "" and bytes.fromhex(record) == sample_record(11)
        assert uploaded(first) > 0
        before = page.evaluate(STORED)
    finally:
        srv.stop()
    srv = page_server(sample_db, tmp_path / "second.log", port)  # same URL, empty memory
    try:
        record, error, again = look_up(page, f"{srv.url}/?index=12")
        assert error == "" and bytes.fromhex(record) == sample_record(12)
        # the restarted server did not know the client: the same keys' parameters went up again
        assert uploaded(again) == uploaded(first)
        after = page.evaluate(STORED)
        assert len(before) == 1 and after == before, (before, after)
    finally:
        srv.stop()


def test_damaged_stored_keys_are_replaced(wasm_demo: wasm_client.WasmClient, sample_db: Path,
                                          page: Any, tmp_path: Path) -> None:
    srv = page_server(sample_db, tmp_path / "server.log")
    try:
        look_up(page, f"{srv.url}/?index=1")
        [(key, _, state)] = page.evaluate(STORED)
        page.evaluate("""async (key) => {
          const db = await new Promise((ok) => {
            const r = indexedDB.open("spiralpir", 1); r.onsuccess = () => ok(r.result); });
          await new Promise((ok, no) => {
            const r = db.transaction("clients", "readwrite").objectStore("clients")
              .put({ key, state: new Uint8Array([1, 2, 3]), clientId: null });
            r.onsuccess = ok; r.onerror = () => no(r.error); });
          db.close();
        }""", key)
        record, error, figures = look_up(page, f"{srv.url}/?index=2")
        assert error == "" and bytes.fromhex(record) == sample_record(2), error
        assert uploaded(figures) > 0  # new keys, new public parameters
        [(key2, client_id, state2)] = page.evaluate(STORED)
        assert key2 == key and client_id and state2 not in (state, "010203")
    finally:
        srv.stop()


def test_errors_are_readable_in_the_page(wasm_demo: wasm_client.WasmClient, sample_db: Path,
                                         page: Any, tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    srv = page_server(sample_db, tmp_path / "server.log")
    try:
        for query, expect in [
            (f"server=http://127.0.0.1:{dead}", f"cannot reach the server at "
                                                f"http://127.0.0.1:{dead}"),
            ("server=/nowhere", "the server answered 404"),
            ("", "index 70000 out of range: the server holds 65536 records"),
            ("key=alice", "?key=alice: this server holds no keyword table"),
        ]:
            record, error, _ = look_up(page, f"{srv.url}/?index=70000&{query}")
            assert expect in error and record == "", (query, error)
            assert page.get_attribute("body", "data-state") == "error"
    finally:
        srv.stop()


def test_values_come_back_exact(wasm_demo: wasm_client.WasmClient, page: Any,
                                tmp_path: Path, rng: random.Random) -> None:
    """A database of values: the page shows each value's own bytes, not its 32-byte record."""
    values = [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 32))) for _ in range(40)]
    values[3] = b"hello, browser"
    db = tmp_path / "values.jsonl"
    db.write_text("".join(json.dumps({"hex": v.hex()}) + "\n" for v in values))
    srv = page_server(db, tmp_path / "server.log", 0, "--no-cache")
    try:
        for i in (3, 0, 39, rng.randrange(40)):
            record, error, figures = look_up(page, f"{srv.url}/?index={i}")
            assert error == "" and bytes.fromhex(record) == values[i], i
            assert figures["record"] == f"{len(values[i])} B"
        look_up(page, f"{srv.url}/?index=3")
        assert page.inner_text("#text") == "hello, browser"
    finally:
        srv.stop()


def test_security_headers(wasm_demo: wasm_client.WasmClient, sample_db: Path,
                          tmp_path: Path) -> None:
    srv = page_server(sample_db, tmp_path / "server.log")
    cors = ServerProcess(["--build", str(DEMO), "--db", str(sample_db), "--threads", "1",
                          "--cors-origin", "https://pages.example"], tmp_path / "cors.log")
    try:
        types = {"/": "text/html", "/page.mjs": "text/javascript", "/page.css": "text/css",
                 "/wasm/client.mjs": "text/javascript", "/wasm/batch.mjs": "text/javascript",
                 f"/wasm/{wasm_demo.loader.name}": "text/javascript",
                 f"/wasm/{wasm_demo.wasm.name}": "application/wasm",
                 "/v1/params": "application/json", "/v1/nothing": "application/json"}
        for path, ctype in types.items():
            r = requests.get(srv.url + path, headers={"Origin": "https://elsewhere.example"},
                             timeout=30)
            assert r.headers["Content-Type"].split(";")[0] == ctype, path
            csp = r.headers["Content-Security-Policy"]
            directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
            assert directives["script-src"] == "'self' 'wasm-unsafe-eval'", csp
            assert directives["connect-src"] == "'self'" and directives["default-src"] == "'none'"
            assert "unsafe-inline" not in csp and "'unsafe-eval'" not in csp
            assert r.headers["X-Content-Type-Options"] == "nosniff", path
            assert "Access-Control-Allow-Origin" not in r.headers, path  # same origin only
        assert requests.get(srv.url + "/wasm/" + wasm_demo.wasm.name, timeout=30).content == \
            wasm_demo.wasm.read_bytes()
        pre = requests.options(srv.url + "/v1/query", timeout=30, headers={
            "Origin": "https://pages.example", "Access-Control-Request-Method": "POST"})
        assert pre.status_code == 405 and "Access-Control-Allow-Origin" not in pre.headers
        # --cors-origin: that origin may call the API (preflight included), no other
        r = requests.get(cors.url + "/v1/params", headers={"Origin": "https://pages.example"},
                         timeout=30)
        assert r.headers["Access-Control-Allow-Origin"] == "https://pages.example"
        assert "Origin" in r.headers["Vary"]
        other = requests.get(cors.url + "/v1/params", timeout=30,
                             headers={"Origin": "https://elsewhere.example"})
        assert "Access-Control-Allow-Origin" not in other.headers
        pre = requests.options(cors.url + "/v1/query", timeout=30, headers={
            "Origin": "https://pages.example", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,x-spiralpir-client-id"})
        assert pre.status_code == 204
        assert pre.headers["Access-Control-Allow-Origin"] == "https://pages.example"
        assert "X-Spiralpir-Client-Id" in pre.headers["Access-Control-Allow-Headers"]
        assert pre.headers["X-Content-Type-Options"] == "nosniff"
        pre = requests.options(cors.url + "/v1/query", timeout=30, headers={
            "Origin": "https://elsewhere.example", "Access-Control-Request-Method": "POST"})
        assert "Access-Control-Allow-Origin" not in pre.headers
        assert "Access-Control-Allow-Methods" not in pre.headers
        # --no-page (the helper's default for API servers): no page
        assert requests.get(cors.url + "/", timeout=30).status_code == 404
    finally:
        srv.stop()
        cors.stop()


def test_no_keys_without_web_crypto(wasm_demo: wasm_client.WasmClient, sample_db: Path,
                                    browser: Any, tmp_path: Path) -> None:
    """Without crypto.getRandomValues the client makes no keys (no weaker randomness)."""
    srv = page_server(sample_db, tmp_path / "server.log")
    ctx = browser.new_context()
    ctx.add_init_script("Object.defineProperty(Crypto.prototype, 'getRandomValues', "
                        "{value: undefined});")
    try:
        record, error, _ = look_up(ctx.new_page(), f"{srv.url}/?index=5")
        assert record == "" and "no crypto.getRandomValues" in error, error
    finally:
        ctx.close()
        srv.stop()


def test_wasm_build_is_kept(wasm_demo: wasm_client.WasmClient) -> None:
    """A second build with the same inputs compiles nothing (build.json)."""
    before = {p: p.stat().st_mtime_ns for p in wasm_demo.files().values()}
    again = wasm_client.build_wasm_client(DEMO, builder.build_root() / "wasm-objects")
    assert again == wasm_demo
    assert {p: p.stat().st_mtime_ns for p in again.files().values()} == before


def test_get_many_from_a_batch_server(demo_inst: builder.Instance, page: Any, tmp_path: Path,
                                      rng: random.Random) -> None:
    """getMany (and the page, a batch of one) against `serve --ci --batch-layout`: the demo
    CI twin's databases as the buckets of N random records, each in W of them."""
    n, w, k, rs = 3000, 4, 16, 32
    layout = BucketLayout(n, w, min_buckets(k, w), rng.randbytes(16).hex(), 0).sized()
    (tmp_path / "layout.json").write_text(json.dumps({"batch": layout.to_json()}))
    data = rng.randbytes(n * rs)
    (tmp_path / "records.bin").write_bytes(data)
    srv = ServerProcess(["--build", str(DEMO), "--ci", "--db", str(tmp_path / "records.bin"),
                         "--batch-layout", str(tmp_path / "layout.json"), "--threads", "1",
                         "--no-cache", "--page"], tmp_path / "server.log")
    try:
        wanted = [*rng.sample(range(n), k - 2), 0, n - 1]
        wanted += wanted[:3]  # duplicates come back in their places
        page.goto(srv.url + "/")  # the module runs in the page's origin
        out = page.evaluate("""async ([url, wanted]) => {
            const { Client } = await import("/wasm/client.mjs");
            const c = await Client.connect(url);
            const records = await c.getMany(wanted);
            let single;
            try { await c.get(1); } catch (e) { single = e.message; }
            return { records: records.map((r) => Array.from(r)), single,
                     buckets: c.lastLookup.buckets };
        }""", [srv.url, wanted])
        for i, got in zip(wanted, out["records"], strict=True):
            assert bytes(got) == data[i * rs:(i + 1) * rs], i
        assert out["buckets"] == layout.buckets
        assert "getMany" in out["single"]
        i = rng.randrange(n)
        record, error, _ = look_up(page, f"{srv.url}/?index={i}")
        assert error == "" and bytes.fromhex(record) == data[i * rs:(i + 1) * rs], error
    finally:
        srv.stop()


def test_shorter_records_of_a_binary_file(wasm_demo: wasm_client.WasmClient, page: Any,
                                          tmp_path: Path, rng: random.Random) -> None:
    """`serve --record-size 20` of a file of 20-byte records: each record's 20 bytes (the
    server stores them padded to the build's 32 and reports the file's size)."""
    rs, n = 20, 500
    data = rng.randbytes(rs * n)
    (tmp_path / "short.bin").write_bytes(data)
    srv = page_server(tmp_path / "short.bin", tmp_path / "server.log", 0, "--record-size",
                      str(rs), "--no-cache")
    try:
        for i in (0, n - 1, rng.randrange(n)):
            record, error, figures = look_up(page, f"{srv.url}/?index={i}")
            want = data[i * rs:(i + 1) * rs]
            assert error == "" and bytes.fromhex(record) == want, error
            assert figures["record"] == f"{rs} B"
    finally:
        srv.stop()


# -- keyword servers: getKey and the page's ?key= ----------------------------------------------
def keyword_shape(demo_inst: builder.Instance, h: int) -> TableShape:
    """The table the demo CI twin's database is, in h row blocks."""
    p = Build(demo_inst, ci=True).lib.params
    m = int(p["items_per_plaintext"])
    return TableShape(h, 1 << int(p["nu_1"]), 1 << int(p["nu_2"]), m, tag_bytes_for(h, m), 32)


@pytest.fixture(scope="module")
def keyword_server(demo_inst: builder.Instance, tmp_path_factory: pytest.TempPathFactory,
                   seeded: Any) -> Iterator[tuple[ServerProcess, dict[str, bytes]]]:
    """`spiralpir serve --page` of a .jsonl keyword file (random binary values, empty and
    longest ones included) with the demo CI twin as its table, h = 2."""
    rng = seeded("wasm-keyword")
    tmp = tmp_path_factory.mktemp("wasm-keyword")
    shape = keyword_shape(demo_inst, 2)
    cap = value_capacity(shape.slot_size, shape.tag_bytes)
    keys = list(dict.fromkeys(f"user-{rng.randrange(10**9)}" for _ in range(150)))
    keys[0] = "ключ ✓"  # a key is its UTF-8 bytes
    pairs = {k: rng.randbytes(rng.choice([0, 1, cap, rng.randrange(cap + 1)])) for k in keys}
    pairs["text"] = b"hello, keyword"
    (tmp / "kv.jsonl").write_text("".join(
        json.dumps({"key": k, "value": base64.b64encode(v).decode()}) + "\n"
        for k, v in pairs.items()), encoding="utf-8")
    (tmp / "keyword.json").write_text(json.dumps({"keyword": shape.__dict__}))
    srv = ServerProcess(["--build", str(DEMO), "--ci", "--db", str(tmp / "kv.jsonl"),
                         "--keyword-table", str(tmp / "keyword.json"), "--base64-values",
                         "--threads", "1", "--no-cache", "--page"], tmp / "server.log")
    try:
        yield srv, pairs
    finally:
        srv.stop()


def test_blake2b_matches_hashlib(keyword_server: tuple[ServerProcess, dict[str, bytes]],
                                 page: Any, rng: random.Random) -> None:
    """The module's BLAKE2b (RFC 7693, compiled into the wasm) against Python's hashlib on
    random data, keys, persons and digest sizes, block boundaries included."""
    cases = []
    for _ in range(300):
        data = rng.randbytes(rng.choice([0, 1, 127, 128, 129, 256, 257, rng.randrange(700)]))
        key = rng.randbytes(rng.choice([0, 1, 16, 64, rng.randrange(65)]))
        person = rng.randbytes(rng.choice([0, 15, 16, rng.randrange(17)]))
        cases.append((data.hex(), key.hex(), person.hex(), rng.randrange(1, 65)))
    page.goto(keyword_server[0].url + "/")
    got = page.evaluate("""async (cases) => {
        const { loadCore } = await import("/wasm/client.mjs");
        const core = await loadCore();
        const bytes = (h) => Uint8Array.from(h.match(/../g) ?? [], (b) => parseInt(b, 16));
        const hex = (a) => Array.from(a, (b) => b.toString(16).padStart(2, "0")).join("");
        const out = cases.map(([d, k, p, n]) => hex(core.blake2b(bytes(d), bytes(k), bytes(p), n)));
        let refused;
        try { core.blake2b(new Uint8Array(1), new Uint8Array(65), new Uint8Array(0), 8); }
        catch (e) { refused = e.message; }
        return { out, refused };
    }""", cases)
    for (d, k, p, n), digest in zip(cases, got["out"], strict=True):
        want = hashlib.blake2b(bytes.fromhex(d), key=bytes.fromhex(k), person=bytes.fromhex(p),
                               digest_size=n).hexdigest()
        assert digest == want, (d, k, p, n)
    assert "key longer than 64 bytes" in got["refused"]


@pytest.mark.parametrize("h", [2, 4])
def test_key_locations_match_the_python_client(
        keyword_server: tuple[ServerProcess, dict[str, bytes]], page: Any,
        demo_inst: builder.Instance, rng: random.Random, h: int) -> None:
    """(column, rows, tag) of many random keys (text, binary, long, empty) as the browser
    derives them, against models/cuckoo_layout.py's for the same table."""
    shape = keyword_shape(demo_inst, h)
    layout = CuckooLayout(h, shape.rows, shape.columns, shape.slots, rng.randbytes(16).hex(),
                          shape.tag_bytes)
    keys = [rng.randbytes(rng.choice([0, 1, 8, 127, 128, 129, rng.randrange(300)]))
            for _ in range(400)]
    page.goto(keyword_server[0].url + "/")
    got = page.evaluate("""async ([doc, keys]) => {
        const { loadCore } = await import("/wasm/client.mjs");
        const { locate, tableOf } = await import("/wasm/keyword.mjs");
        const core = await loadCore();
        const table = tableOf(doc, core.params);
        const bytes = (h) => Uint8Array.from(h.match(/../g) ?? [], (b) => parseInt(b, 16));
        const hex = (a) => Array.from(a, (b) => b.toString(16).padStart(2, "0")).join("");
        return keys.map((k) => {
            const { column, rows, tag } = locate(table, bytes(k), (...a) => core.blake2b(...a));
            return [column, rows, hex(tag)];
        });
    }""", [layout.to_json() | {"slot_size": shape.slot_size}, [k.hex() for k in keys]])
    for key, (column, rows, tag) in zip(keys, got, strict=True):
        c, r, t = layout.locate(key)
        assert (column, rows, tag) == (c, r, t.hex()), key.hex()


def test_get_key_from_a_keyword_server(keyword_server: tuple[ServerProcess, dict[str, bytes]],
                                       page: Any, rng: random.Random) -> None:
    """getKey: random present keys give exactly their values (empty and longest too), absent
    keys null, with requests and responses of the same sizes."""
    srv, pairs = keyword_server
    present = [*rng.sample(sorted(pairs), 12), "ключ ✓", "text",
               next(k for k, v in pairs.items() if v == b""),
               max(pairs, key=lambda k: len(pairs[k]))]
    absent = [f"nobody-{rng.randrange(10**9)}" for _ in range(5)] + ["", "user-"]
    assert not set(absent) & set(pairs)
    page.goto(srv.url + "/")
    out = page.evaluate("""async (keys) => {
        const { Client } = await import("/wasm/client.mjs");
        const c = await Client.connect();
        const got = [];
        for (const k of keys) {
            const v = await c.getKey(k);
            got.push([v === null ? null : Array.from(v), c.lastLookup.queryBytes,
                      c.lastLookup.responseBytes, c.lastLookup.bins]);
        }
        let byIndex;
        try { await c.get(0); } catch (e) { byIndex = e.message; }
        const asBytes = Array.from(await c.getKey(new TextEncoder().encode("text")));
        c.close();
        return { got, byIndex, asBytes };
    }""", present + absent)
    sizes = set()
    for key, (value, q, r, bins) in zip(present + absent, out["got"], strict=True):
        want = pairs.get(key)
        assert (None if value is None else bytes(value)) == want, key
        sizes.add((q, r, bins))
    assert len(sizes) == 1 and next(iter(sizes))[2] == 2, sizes
    assert "getKey" in out["byIndex"]
    assert bytes(out["asBytes"]) == pairs["text"]  # a Uint8Array key is those bytes


def test_page_looks_up_a_key(keyword_server: tuple[ServerProcess, dict[str, bytes]],
                             page: Any, rng: random.Random) -> None:
    """/?key=K: the value's hex in #record; an absent key says "not found"; a person types."""
    srv, pairs = keyword_server
    for key in [*rng.sample(sorted(pairs), 3), "text", "ключ ✓"]:
        record, error, figures = look_up(page, f"{srv.url}/?key={quote(key)}")
        assert error == "" and bytes.fromhex(record) == pairs[key], (key, error)
        assert page.get_attribute("body", "data-found") == "true"
        assert figures["record"] == f"{len(pairs[key])} B"
    look_up(page, f"{srv.url}/?key=text")
    assert page.inner_text("#text") == "hello, keyword"
    record, error, _ = look_up(page, f"{srv.url}/?key=nobody-here")
    assert error == "" and record == ""
    assert page.get_attribute("body", "data-found") == "false"
    assert "not found" in page.inner_text("#status") and page.inner_text("#text") == "(not found)"
    assert page.is_visible("#key") and not page.is_visible("#index")
    page.fill("#key", "text")
    page.click("#go")
    page.locator("body[data-found=true]").wait_for(timeout=WAIT_MS)
    assert bytes.fromhex(page.inner_text("#record")) == b"hello, keyword"
    # ?index= on a keyword server, ?key= on an index server: readable errors
    record, error, _ = look_up(page, f"{srv.url}/?index=3")
    assert record == "" and "getKey" in error, error
    assert page.console_errors == []
