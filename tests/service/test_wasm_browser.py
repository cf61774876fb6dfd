"""The WebAssembly client in a real browser: headless Chromium (Debian's, driven by Playwright)
against real `spiralpir serve` processes of generated/demo on loopback.

Records are checked against an oracle independent of the code under test: the sample
database's record i is SHA-256 of i as 8 big-endian bytes, and a values database's records
are the values written by the test. Bounded: the session fixture builds the wasm client once
(~10-40 s cold, nothing when build.json matches), each test has a 300 s timeout and every
browser wait 60 s; the whole module takes ~30-60 s on a quiet 2-core machine.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from service_helpers import DEMO, ServerProcess
from spiralpir.optimizer.build import builder, wasm_client
from spiralpir.optimizer.models.bucket_layout import BucketLayout
from spiralpir.optimizer.models.placement_bound import min_buckets
from spiralpir.optimizer.service import sample_db as sampledb

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
    """`serve --record-size 20` of a file of 20-byte records: each record's 20 bytes, padded
    with zeros to the build's 32 (the server stores and reports records of its build's size;
    the native client returns the same)."""
    rs, n = 20, 500
    data = rng.randbytes(rs * n)
    (tmp_path / "short.bin").write_bytes(data)
    srv = page_server(tmp_path / "short.bin", tmp_path / "server.log", 0, "--record-size",
                      str(rs), "--no-cache")
    try:
        for i in (0, n - 1, rng.randrange(n)):
            record, error, figures = look_up(page, f"{srv.url}/?index={i}")
            want = data[i * rs:(i + 1) * rs] + bytes(32 - rs)
            assert error == "" and bytes.fromhex(record) == want, error
            assert figures["record"] == "32 B"
    finally:
        srv.stop()
