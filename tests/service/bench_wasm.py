"""The WebAssembly client against the native one (printed figures, not a test): key generation
(new keys and their public parameters), query generation and decoding, in headless Chromium
and through the native library, for each build given; then whole lookups in the page of a
real `spiralpir serve` of generated/demo once its keys exist, by index and, on a keyword table
of generated/demo's database, by key (present and absent in turn). Min and median after warm-up.

    python3 tests/service/bench_wasm.py [generated/demo generated/spiral_2e20x256b] \\
        [--trials 20] [--simd] [--json]

Decoding runs on a response of the build's exact size whose values are all zero (a valid
object: every value is below its modulus): the client's decoding is constant-time, so its cost
does not depend on the values. --simd also builds a SIMD128 client (in a copy of the build)
and measures it beside the plain one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from spiralpir.optimizer.build import builder, wasm_client
from spiralpir.optimizer.models.cuckoo_layout import tag_bytes_for
from spiralpir.optimizer.service import sample_db as sampledb
from spiralpir.optimizer.service.binding import Build, ClientKeys

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "generated" / "demo"
CHROMIUM = "/usr/bin/chromium"
ORIGIN = "http://bench.invalid"  # served by Playwright's router, no network
CONTENT_TYPES = {".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm",
                 ".html": "text/html"}
WARMUP = 3

# in the page: per-operation seconds, `trials` samples of `reps` operations each
WASM_BENCH = """async ([trials, reps, warmup, response]) => {
  const { loadCore } = await import("/wasm/client.mjs");
  const core = await loadCore();
  const resp = new Uint8Array(response);
  const size = core.params.record_size;
  const n = core.params.num_records;
  const out = { keygen: [], query_gen: [], decode: [] };
  const time = (name, reps, f) => {
    const t0 = performance.now();
    for (let r = 0; r < reps; r++) f(r);
    out[name].push((performance.now() - t0) / 1e3 / reps);
  };
  for (let t = 0; t < trials + warmup; t++) {
    time("keygen", 1, () => { const k = core.newKeys(); k.publicParams(); k.close(); });
  }
  const keys = core.newKeys();
  for (let t = 0; t < trials + warmup; t++) {
    time("query_gen", reps, (r) => keys.query((t * reps + r) % n));
    time("decode", reps, (r) => keys.decode(r % n, resp, size));
  }
  keys.close();
  for (const k in out) out[k] = out[k].slice(warmup);
  return out;
}"""


def zero_response(params: dict[str, Any]) -> bytes:
    """A response object (FORMATS.md §2) of the build's exact size, all values zero."""
    payload = int(params["response_bytes"]) - 32
    digest = bytes.fromhex(params["params_hash"])[:8]
    return b"SPRL" + struct.pack("<HH", 1, 4) + digest + struct.pack("<QQ", payload, 0) + \
        bytes(payload)


def native(build: Build, trials: int, reps: int, response: bytes) -> dict[str, list[float]]:
    lib = build.lib
    n, size = build.num_records, build.record_size
    out: dict[str, list[float]] = {"keygen": [], "query_gen": [], "decode": []}

    def time_it(name: str, k: int, f: Callable[[int], object]) -> None:
        t0 = time.perf_counter()
        for r in range(k):
            f(r)
        out[name].append((time.perf_counter() - t0) / k)

    for _ in range(trials + WARMUP):
        def keygen(_r: int) -> None:
            k = ClientKeys.new(lib)
            k.public_params()
            k.close()
        time_it("keygen", 1, keygen)
    keys = ClientKeys.new(lib)
    for t in range(trials + WARMUP):
        time_it("query_gen", reps, lambda r, t=t: keys.query((t * reps + r) % n))
        time_it("decode", reps, lambda r: keys.decode(r % n, response, size))
    keys.close()
    return {k: v[WARMUP:] for k, v in out.items()}


def serve_files(page: Any, files: dict[str, Path]) -> None:
    """Answer ORIGIN/... from files (name under /wasm/ -> path) inside the browser."""
    def handle(route: Any) -> None:
        name = route.request.url.removeprefix(ORIGIN + "/wasm/")
        path = files.get(name)
        if path is None:
            route.fulfill(status=200, body="<!doctype html><title>bench</title>",
                          content_type="text/html")
        else:
            route.fulfill(status=200, body=path.read_bytes(),
                          content_type=CONTENT_TYPES[path.suffix])
    page.route(ORIGIN + "/**", handle)


def in_browser(browser: Any, client: wasm_client.WasmClient, trials: int, reps: int,
               response: bytes) -> dict[str, list[float]]:
    ctx = browser.new_context()
    page = ctx.new_page()
    serve_files(page, client.files())
    page.goto(ORIGIN + "/")
    out: dict[str, list[float]] = page.evaluate(WASM_BENCH, [trials, reps, WARMUP,
                                                                   list(response)])
    ctx.close()
    return out


@contextlib.contextmanager
def serving(args: list[str]) -> Iterator[str]:
    """A `spiralpir serve` process of ``args`` on a free port: its URL."""
    proc = subprocess.Popen([sys.executable, "-m", "spiralpir.optimizer.cli", "serve", *args,
                             "--port", "0", "--threads", "1", "--quiet"], stdout=subprocess.PIPE,
                            text=True, stderr=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        url = ""
        for line in proc.stdout:
            if line.startswith("listening on "):
                url = line.split()[-1]
                break
        assert url, "the server did not start"
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def page_runs(browser: Any, trials: int, url_of: Callable[[int], str]
              ) -> dict[str, list[float]]:
    """Whole lookups in the page at url_of(t), keys already made: the lookup as the page
    times it, and the page's load to the record shown."""
    ctx = browser.new_context()
    page = ctx.new_page()
    out: dict[str, list[float]] = {"lookup": [], "page_load_to_record": [],
                                   "client_work": [], "server": []}
    for t in range(trials + WARMUP + 1):  # the first makes the keys and uploads
        t0 = time.perf_counter()
        page.goto(url_of(t))
        page.wait_for_selector("body[data-state=done], body[data-state=error]",
                               state="attached", timeout=60_000)
        wall = time.perf_counter() - t0
        err = page.inner_text("#error")
        assert not err, err
        rows = dict(r.split("\t", 1) for r in page.locator("#figures tr").all_inner_texts())
        if t <= WARMUP:
            continue
        sec = {k: float(rows[k].removesuffix(" ms")) / 1e3 for k in
               ("whole lookup", "query generation", "decoding", "of which the server")}
        out["lookup"].append(sec["whole lookup"])
        out["page_load_to_record"].append(wall)
        out["client_work"].append(sec["query generation"] + sec["decoding"])
        out["server"].append(sec["of which the server"])
    ctx.close()
    return out


def page_lookups(browser: Any, trials: int) -> dict[str, list[float]]:
    """Index lookups in the page of a real server of generated/demo."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "sample.db"
        sampledb.write_sample_db(db)
        with serving(["--build", str(DEMO), "--db", str(db)]) as url:
            return page_runs(browser, trials, lambda t: f"{url}/?index={(t * 7919) % 65536}")


def page_key_lookups(browser: Any, trials: int, keys: int) -> dict[str, list[float]]:
    """Key lookups (present and absent keys in turn) in the page of a real keyword server:
    generated/demo's database as a table of ``keys`` keys (h = 2) with 8-byte values."""
    params = Build(builder.build(DEMO, show_progress=False, targets=["library"])).lib.params
    m = int(params["items_per_plaintext"])
    shape = {"h": 2, "rows": 1 << int(params["nu_1"]), "columns": 1 << int(params["nu_2"]),
             "slots": m, "tag_bytes": tag_bytes_for(2, m), "slot_size": int(params["record_size"])}
    with tempfile.TemporaryDirectory() as tmp:
        kv, table = Path(tmp) / "kv.jsonl", Path(tmp) / "keyword.json"
        kv.write_text("".join(json.dumps({"key": f"user-{i}", "value": f"{i:08d}"}) + "\n"
                              for i in range(keys)))
        table.write_text(json.dumps({"keyword": shape}))
        with serving(["--build", str(DEMO), "--db", str(kv), "--keyword-table", str(table),
                      "--no-cache"]) as url:
            return page_runs(browser, trials, lambda t: f"{url}/?key=user-"
                             f"{(t * 7919) % keys if t % 2 else keys + t}")


def summary(samples: list[float]) -> dict[str, float]:
    return {"min": min(samples), "median": statistics.median(samples)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("builds", nargs="*", type=Path,
                    default=[REPO / "generated" / "demo", REPO / "generated" / "spiral_2e20x256b"])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--reps", type=int, default=5, help="operations per timed sample")
    ap.add_argument("--simd", action="store_true", help="also a SIMD128 build of each client")
    ap.add_argument("--keys", type=int, default=20_000,
                    help="keys of the keyword table the page looks keys up in")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    report: dict[str, Any] = {}
    objects = builder.build_root() / "wasm-objects"
    with sync_playwright() as pw, tempfile.TemporaryDirectory() as tmp:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True)
        for src in args.builds:
            build = Build(builder.build(src, show_progress=False, targets=["library"]))
            response = zero_response(build.lib.params)
            clients = {"wasm": wasm_client.build_wasm_client(src, objects)}
            if args.simd:
                copy = Path(tmp) / src.name
                shutil.copytree(src, copy, ignore=shutil.ignore_patterns("wasm", "build"))
                clients["wasm_simd128"] = wasm_client.build_wasm_client(copy, objects, simd=True)
            rows = {"native": native(build, args.trials, args.reps, response)}
            for label, client in clients.items():
                rows[label] = in_browser(browser, client, args.trials, args.reps, response)
            report[src.name] = {label: {op: summary(v) for op, v in ops.items()}
                                for label, ops in rows.items()}
        report["page_demo"] = {k: summary(v) for k, v in page_lookups(browser,
                                                                      args.trials).items()}
        report["page_demo_keyword"] = {
            k: summary(v) for k, v in page_key_lookups(browser, args.trials, args.keys).items()}
        browser.close()
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for name, rows in report.items():
        print(f"== {name}")
        for label, ops in rows.items():
            if "min" in ops:
                print(f"  {label:<22} min {ops['min'] * 1e3:9.2f} ms   median "
                      f"{ops['median'] * 1e3:9.2f} ms")
                continue
            print(f"  {label}:")
            for op, s in ops.items():
                print(f"    {op:<12} min {s['min'] * 1e3:9.3f} ms   median "
                      f"{s['median'] * 1e3:9.3f} ms")


if __name__ == "__main__":
    main()
