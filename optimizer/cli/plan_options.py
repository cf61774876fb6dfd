"""Plan options shared by `plan` and `generate`: help texts and parsing of counts and caps."""

from __future__ import annotations

import math

from spiralpir.optimizer.cli.counts import parse_count
from spiralpir.optimizer.models.host_memory import DATABASE_MEMORY_SHARE, database_budget_bytes

OBJECTIVE_HELP = (
    "What to minimize: dollars (CPU + egress per query, SPIRAL's prices), time (server "
    "seconds per answer), response (bytes), traffic (query + response bytes), or stream (the "
    "streaming setting: a query prepared once and answered against a sequence of databases; "
    "the per-database server seconds - first dimension, folding, packing, modulus switching - "
    "with the one-time parse/expansion/conversion excluded, or amortised with --blocks). "
    "stream applies to every variant (the runtime prepares a query of any variant once); the "
    "stream variants are the ones built for it. Ties: among plans within a band of the "
    "optimum (response/traffic: max(1%, 256 B) more bytes; the others: exact ties) the plan "
    "with the least server seconds, then query + response bytes, then public params wins "
    "(time: traffic first).")
DB_RATIO_HELP = (
    "Cap on the preprocessed database's bytes per record byte (its density: 8 when 64-bit "
    "words hold 8-bit plaintexts; the file's 32-byte header aside).")
DB_BYTES_HELP = (
    "Cap on the preprocessed database's bytes (a batch build: all its buckets'), e.g. 16GiB, or "
    f"none. Default: {DATABASE_MEMORY_SHARE:.0%} of this machine's memory (or of its cgroup's "
    "limit): the server memory-maps the database and reads all of it for every query, so a "
    "larger one is read from disk again on every query. Plan on the server, or give its memory.")
MAX_COPIES_HELP = ("With --batch: store every record in at most W buckets (the server's memory "
                   "grows with W; default: the cheapest W in 2..6).")
QUERY_BUCKETS_HELP = ("With --batch: pack the indices of G buckets in each query ciphertext (a "
                      "power of two; default: the most G whose batch CPU stays within 5% of "
                      "G = 1's). 1 = one query per bucket.")
BLOCKS_HELP = (
    "With --objective stream: the databases answered per prepared query; the one-time part "
    "counts 1/K per database. Default: unbounded (the one-time part only breaks ties).")


def db_bytes_cap(text: str | None) -> float:
    """--max-db-bytes SIZE|none -> bytes (inf for none); not given: this machine's budget."""
    if text is None:
        return float(database_budget_bytes())
    if text.strip().lower() == "none":
        return math.inf
    return float(parse_count(text, "--max-db-bytes"))


def parse_blocks(text: str | None) -> float | None:
    """--blocks K (a count, e.g. 64 or 1K) -> float, None when not given."""
    return None if text is None else float(parse_count(text, "--blocks"))


def caps(max_query_bytes: str | None, max_params_bytes: str | None,
         max_response_bytes: str | None) -> dict[str, int]:
    """The size caps given on the command line, parsed (plan option name -> bytes)."""
    out: dict[str, int] = {}
    for key, val in (("max_query_bytes", max_query_bytes), ("max_params_bytes", max_params_bytes),
                     ("max_response_bytes", max_response_bytes)):
        if val is not None:
            out[key] = parse_count(val, "--" + key.replace("_", "-"))
    return out
