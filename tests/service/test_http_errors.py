"""Every 4xx of the server is JSON {"error": ...}: unknown routes, wrong methods (405 with
Allow), bodies where a route takes none, requests that do not even parse; numbers and ids in
paths and headers are ASCII only ('²' and '١' are not digits here). The server keeps
answering correctly afterwards."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
import requests
from raw_http import Reply, head, health, send
from service_helpers import DEMO, ServerProcess
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.cli.cmd_serve import parse_size
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import http_api as api
from spiralpir.optimizer.service import sample_db as sampledb
from spiralpir.optimizer.service.binding import Build, ClientKeys
from spiralpir.optimizer.service.client_wire import (
    BACKOFF_CAP,
    MAX_RETRY_AFTER,
    backoff_seconds,
)


def json_error(reply: Reply | requests.Response, status: int, needle: str) -> None:
    got = reply.status if isinstance(reply, Reply) else reply.status_code
    body = reply.json()
    assert got == status, (got, body)
    assert isinstance(body, dict) and set(body) == {"error"}, body
    assert needle in body["error"], body


def test_unknown_routes_and_methods_get_json(sample_server: ServerProcess) -> None:
    url = sample_server.url
    json_error(requests.get(url + "/v1/nope", timeout=30), 404, "no such route: GET /v1/nope")
    json_error(requests.get(url + "/", timeout=30), 404, "no such route")
    r = requests.put(url + api.HEALTH, timeout=30)
    json_error(r, 405, "method not allowed: PUT /v1/health")
    assert "GET" in r.headers["Allow"]
    r = requests.get(url + api.SETUP, timeout=30)
    json_error(r, 405, "allowed: POST")
    assert r.headers["Allow"] == "POST"
    r = requests.delete(url + api.QUERY, timeout=30)
    json_error(r, 405, "allowed: POST")


@pytest.mark.parametrize("text", ["%C2%B2", "%D9%A1", "%EF%BC%91", "1%20", "+1", "-0", "0x1",
                                  "1_0", "9" * 19, "1.0"])
def test_block_indices_are_ascii_decimals(sample_server: ServerProcess, text: str) -> None:
    r = requests.get(f"{sample_server.url}/v1/stream/{'a' * 32}/blocks/{text}", timeout=30)
    json_error(r, 400, "not a non-negative integer (ASCII digits)")


def test_ids_and_lengths_are_checked(sample_server: ServerProcess) -> None:
    url = sample_server.url
    for bad in ["٣" * 32, "A" * 32, "a" * 31, "a" * 33, "g" * 32]:
        r = send(url, head("POST", api.QUERY, {api.CLIENT_HEADER: bad}, 4) + b"abcd")
        json_error(r, 400, f"malformed {api.CLIENT_HEADER}")
    # Content-Length in digits other than ASCII, or not a number: the parser's 400, as JSON
    for length in ["²", "١", "1 1", "-1", "0x10"]:
        raw = head("POST", api.SETUP).replace(b"\r\n\r\n",
                                              f"\r\nContent-Length: {length}\r\n\r\n".encode())
        json_error(send(url, raw), 400, "malformed HTTP request")


def test_malformed_requests_get_json(sample_server: ServerProcess) -> None:
    url = sample_server.url
    json_error(send(url, b"HELLO\r\n\r\n"), 400, "malformed HTTP request")
    json_error(send(url, b"GET /v1/health HTTP/9.9\r\n\r\n"), 400, "malformed HTTP request")
    long_head = head("GET", api.HEALTH, {"X-Big": "a" * 20_000})
    reply = send(url, long_head)
    assert 400 <= reply.status < 500 and reply.json()["error"], reply.body[:200]
    # a body where the route takes none
    json_error(send(url, head("GET", api.HEALTH, body_bytes=3) + b"abc"), 413, "takes no body")
    json_error(send(url, head("DELETE", api.stream_path("a" * 32), body_bytes=1) + b"x"), 413,
               "takes no body")
    # a batch or keyword request to a one-database build names what the build holds
    json_error(send(url, head("POST", api.BATCH, {api.CLIENT_HEADER: "a" * 32}, 4) + b"abcd"),
               400, "holds one database, not buckets")
    json_error(send(url, head("POST", api.KEYWORD, {api.CLIENT_HEADER: "a" * 32}, 4) + b"abcd"),
               400, "holds no keyword table")


def test_the_server_still_answers(sample_server: ServerProcess, demo_inst: builder.Instance,
                                  rng: random.Random) -> None:
    build = Build(demo_inst)
    keys = ClientKeys.new(build.lib)
    r = requests.post(sample_server.url + api.SETUP, data=keys.public_params(), timeout=120)
    assert r.status_code == 200 and r.json()["client_id"] == api.client_id_of(
        keys.public_params())
    index = rng.randrange(sampledb.SAMPLE_RECORDS)
    r = requests.post(sample_server.url + api.QUERY, data=keys.query(index), timeout=120,
                      headers={api.CLIENT_HEADER: r.json()["client_id"]})
    assert r.status_code == 200, r.text
    assert keys.decode(index, r.content, build.record_size) == sampledb.sample_record(index)
    h = health(sample_server.url)
    assert h["status"] == "ok" and h["errors"] > 0 and h["max_clients"] >= 1
    log = Path(sample_server.log).read_text()
    assert "Traceback" not in log and "internal server error" not in log, log[-2000:]


def test_parsers_of_numbers() -> None:
    assert api.parse_decimal("0") == 0 and api.parse_decimal("123") == 123
    for bad in ["", "²", "١", " 1", "1 ", "+1", "-1", "1e3", "9" * 19]:
        assert api.parse_decimal(bad) is None, bad
    assert parse_size("2GiB", "--x") == 2 << 30 and parse_size("512 MB", "--x") == 512 * 10**6
    assert parse_size("1000", "--x") == 1000 and parse_size("1.5KiB", "--x") == 1536
    for bad in ["", "GiB", "2 GiBs", "²GiB", "-1", "0"]:
        with pytest.raises(SpiralpirError, match="--x"):
            parse_size(bad, "--x")


def test_backoff_is_bounded_and_jittered() -> None:
    rng = random.Random(7)
    for attempt in range(12):
        delays = {backoff_seconds(attempt, None, rng) for _ in range(50)}
        assert len(delays) > 1, "jittered"
        assert max(delays) <= BACKOFF_CAP and min(delays) > 0
    assert backoff_seconds(0, "3", rng) >= 3.0  # the server's Retry-After is respected
    assert backoff_seconds(0, "100000", rng) <= MAX_RETRY_AFTER * 1.25  # within reason
    assert backoff_seconds(0, "٣", rng) <= 0.1  # not an ASCII number: ignored


def test_a_store_truncated_while_served_gets_503(demo_inst: builder.Instance,
                                                  tmp_path: Path) -> None:
    """The server's own storage failing is not the client's fault: 503 JSON, said on its log."""
    sampledb.write_sample_db(tmp_path / "sample.db")
    pre = tmp_path / "sample.pre"
    args = ["--build", str(DEMO), "--db", str(tmp_path / "sample.db"), "--preprocessed",
            str(pre), "--threads", "1"]
    ServerProcess(args, tmp_path / "first.log").stop()  # writes the store
    srv = ServerProcess(args, tmp_path / "sample_server.log")  # maps it
    try:
        build = Build(demo_inst)
        keys = ClientKeys.new(build.lib)
        r = requests.post(srv.url + api.SETUP, data=keys.public_params(), timeout=120)
        assert r.status_code == 200, r.text
        os.truncate(pre, 4096)  # from outside, while mapped
        r = requests.post(srv.url + api.QUERY, data=keys.query(7), timeout=120,
                          headers={api.CLIENT_HEADER: r.json()["client_id"]})
        json_error(r, 503, "shrank while mapped")
    finally:
        srv.stop()
    log = (tmp_path / "sample_server.log").read_text()
    assert "refusing to answer" in log and "Traceback" not in log, log[-2000:]
