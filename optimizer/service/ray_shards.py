"""The shards of a sharded database as Ray actors, and the coordinator's call to them.

Each shard of a set written by ``spiralpir shard`` (service/shards.py) is held by one actor
(``ShardWorker``): it opens the build, checks its shard's file against the manifest, maps
it and copies it into its own memory, and answers partial answers (runtime shard.hpp). The
actors are placed by a placement group with one bundle of ``cpus`` CPUs per shard and strategy
SPREAD (or STRICT_SPREAD: never two shards on one node), so Ray puts them on different
machines where it can.

Where a query is expanded and converted (``expand_at``, EXPAND_AT):
- "split": each shard prepares its share of it (``prepare_share``: 1/2^S of the expansion
  tree's subtrees and of the conversions, runtime shard_split.hpp), keeps it, and returns it
  into the object store for the others; its answer call (``answer_split``, submitted with the
  share call) gets only the other shards' share references, boxed in a list so that Ray starts
  it at once, waits for those shares itself, and reads them in place, as numpy views of the
  object store, never pickled or copied into the process. Each shard does 1/2^S of the fixed
  work and receives (1 − 2^−S) of the expanded query from the other shards. The partial
  answers come back in pieces below Ray's inline limit (``cut``), inside the calls' replies.
- "shards": every shard prepares the whole query itself (only the query travels).
- "coordinator": the coordinator prepares it once and every shard receives all of it
  (``answer_expanded``).

Clients' public parameters go to the object store once per client (``ray.put`` at setup);
a query passes that reference, boxed in a list so that Ray does not resolve it, and an actor
fetches and parses the parameters only the first time it sees the client (then keeps them,
least recently used dropped first).

Faults: an actor whose process dies is restarted by Ray (``max_restarts``) and loads its shard
again (checked again); its tasks are retried by Ray (``max_task_retries``: an answer is a pure
function of the query and the shard), and a query that still fails is tried again by
``RayShards.answer`` until ``deadline`` seconds have passed, then refused with
``Unavailable`` (HTTP 503, Retry-After); an answer call waits at most ``deadline`` for the
other shards' shares, and one whose process restarted after its share call finds its share
gone (``ShareLost``): both retried alike. A response is only ever the combination of one
partial answer from each shard file the manifest names, so it is right or absent.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import shards as shard_set
from spiralpir.optimizer.service.binding import (
    ClientKeys,
    PublicParams,
    combine_shards,
    prepare_for_shards,
)
from spiralpir.optimizer.service.builds import open_build
from spiralpir.optimizer.service.pir_server import Unavailable

# a shard's own shares awaiting their answer call: one, as a query's answer call follows its
# share call on every actor (RayShards.answer submits them together); a second only while a
# restarted actor's retried calls replace one whose answer call never ran
OWN_SHARES_KEPT = 2


# a return value below Ray's max_direct_call_object_size (100 KiB by default) travels inside
# the call's reply; a larger one through the object store, which cost 2.2 ms for the 294 KB
# partial answer that carries the GSW cts against 0.9 ms for it in 4 inline pieces
INLINE_BYTES = 96 << 10


def cut(data: bytes, pieces: int) -> list[bytes]:
    """``data`` in ``pieces`` consecutive parts (the last ones may be empty)."""
    step = -(-len(data) // max(1, pieces))
    return [data[k * step:(k + 1) * step] for k in range(max(1, pieces))]


class ShareLost(Exception):
    """A shard's own share is not in its process (it restarted after preparing it): the
    query is tried again."""


# where a query is expanded and converted (module docstring); "auto" is split_or_shards's rule
EXPAND_AT = ("split", "shards", "coordinator")


class ShardWorker:
    """One shard, inside a Ray actor (``RayShards`` makes it remote)."""

    def __init__(self, source_dir: str, build_dir: str | None, ci: bool, shard_dir: str,
                 index: int, threads: int, max_clients: int) -> None:
        self.build = open_build(Path(source_dir), Path(build_dir) if build_dir else None, ci=ci,
                                show_progress=False)
        manifest = shard_set.read_manifest(Path(shard_dir))
        self.index = index
        # held in the actor's own memory, not mapped: every answer streams the shard whole,
        # and from the page cache's 4 KiB pages the first dimension ran 2.3x slower at
        # 2^14 x 100 KB (1.1x at 2^20 x 256 B) than from anonymous huge pages
        self.db = shard_set.open_shard(self.build, manifest, index, threads, in_memory=True)
        self.max_clients = max(1, max_clients)
        self.clients: OrderedDict[str, PublicParams] = OrderedDict()
        self.own: OrderedDict[int, tuple[Any, dict[str, float]]] = OrderedDict()
        self.stamps: dict[str, float] = {}

    def pid(self) -> tuple[int, str]:
        """(this process's id, its Ray node's id)"""
        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id()

    def _client(self, client_id: str, pp_box: list[Any]) -> PublicParams:
        import ray

        pp = self.clients.get(client_id)
        if pp is None:
            pp = PublicParams(self.build.lib, ray.get(pp_box[0]))
            self.clients[client_id] = pp
            while len(self.clients) > self.max_clients:
                self.clients.popitem(last=False)[1].close()
        self.clients.move_to_end(client_id)
        return pp

    def answer(self, client_id: str, pp_box: list[Any], query: bytes,
               with_gsw: bool) -> tuple[bytes, dict[str, float]]:
        return self.db.answer(self._client(client_id, pp_box), query, with_gsw)

    def answer_expanded(self, shard_query: bytes) -> tuple[bytes, dict[str, float]]:
        return self.db.answer_expanded(shard_query)

    def prepare_share(self, key: int, client_id: str, pp_box: list[Any], query: bytes) -> Any:
        """This shard's share of the query's preparation, for the other shards; this shard
        keeps its own (``answer_split`` reads it here, not back through the object store)."""
        self.stamps["prepare_start"] = time.time()
        share, secs = self.db.prepare_share(self._client(client_id, pp_box), query)
        self.own[key] = (share, secs)
        while len(self.own) > OWN_SHARES_KEPT:  # calls whose answer never came (retried)
            self.own.popitem(last=False)
        self.stamps["prepare_end"] = time.time()
        return share

    def answer_split(self, key: int, with_gsw: bool, others_box: list[Any], timeout: float,
                     pieces: int) -> tuple[Any, ...]:
        """The partial answer from this shard's own share (``prepare_share`` of the same
        ``key``) and the other shards' (their references boxed in a list, so that Ray starts
        this call without waiting for them: it waits here, at most ``timeout`` seconds);
        seconds per stage, this shard's preparation included: ``pieces`` + 1 return values
        (``cut``)."""
        import ray

        self.stamps["answer_start"] = time.time()
        mine = self.own.pop(key, None)
        if mine is None:  # this process restarted between the two calls
            raise ShareLost(f"shard {self.index}: its share of query {key} is gone")
        others = ray.get(others_box, timeout=timeout)
        self.stamps["shares_in"] = time.time()
        part, secs = self.db.answer_shares([mine[0], *others], with_gsw)
        self.stamps["answer_end"] = time.time()
        return (*cut(part, pieces), {**mine[1], **secs})

    def last_stamps(self) -> dict[str, float]:
        """When (time.time()) this shard's last split calls began and ended: where a
        benchmark finds the time between Ray's calls (tests/service/bench_ray.py)."""
        return dict(self.stamps)


class RayShards:
    """The actors of one shard set on a Ray cluster, as the coordinator sees them."""

    def __init__(self, source_dir: Path, build_dir: Path | None, ci: bool,
                 manifest: shard_set.Manifest, cpus: float = 1.0, threads: int = 1,
                 max_clients: int = 64, strict_spread: bool = False,
                 max_restarts: int = 5, deadline: float = 30.0, start_timeout: float = 120.0,
                 combine_threads: int = 1, expand_at: str = "split",
                 network_gbps: float = 0.0) -> None:
        import ray
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        if not ray.is_initialized():
            raise SpiralpirError("Ray is not initialised: connect first (connect_ray)")
        if expand_at not in (*EXPAND_AT, "auto"):
            raise SpiralpirError(f"expand_at '{expand_at}': expected auto or one of "
                                 f"{', '.join(EXPAND_AT)}")
        self.expand_at = expand_at
        self.manifest = manifest
        self.deadline = deadline
        self.combine_threads = combine_threads
        self._refs: weakref.WeakKeyDictionary[PublicParams, Any] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._submit = threading.Lock()
        self._key = 0  # the split calls' query number
        self._part_bytes: dict[bool, int] = {}  # a partial answer's bytes, with/without GSW cts
        strategy = "STRICT_SPREAD" if strict_spread else "SPREAD"
        self.group = placement_group([{"CPU": cpus}] * manifest.shards, strategy=strategy)
        try:
            ray.get(self.group.ready(), timeout=start_timeout)
        except ray.exceptions.GetTimeoutError:
            raise SpiralpirError(
                f"the Ray cluster cannot place {manifest.shards} shards of {cpus:g} CPU each "
                f"(strategy {strategy}) within {start_timeout:g} s: "
                f"{ray.cluster_resources().get('CPU', 0):g} CPUs on "
                f"{len(ray.nodes())} node(s)") from None
        remote = ray.remote(ShardWorker)
        self.actors = [
            remote.options(
                num_cpus=cpus, max_restarts=max_restarts, max_task_retries=2,
                scheduling_strategy=PlacementGroupSchedulingStrategy(
                    self.group, placement_group_bundle_index=s),
            ).remote(str(source_dir), str(build_dir) if build_dir else None, ci,
                     str(manifest.directory), s, threads, max_clients)
            for s in range(manifest.shards)
        ]
        try:
            where = ray.get([a.pid.remote() for a in self.actors], timeout=start_timeout)
            self.pids = [w[0] for w in where]
            self.nodes = {w[1] for w in where}
        except ray.exceptions.RayError as exc:
            self.close()
            raise SpiralpirError(f"a shard actor failed to start: {_cause(exc)}") from None
        if expand_at == "auto":
            one_node = len(self.nodes) == 1
            size, secs = (0, 0.0) if one_node or network_gbps <= 0 else \
                _time_preparation(open_build(source_dir, build_dir, ci=ci, show_progress=False))
            self.expand_at = "split" if split_pays(one_node, size, secs, network_gbps) else "shards"

    def register(self, pp: PublicParams, data: bytes) -> None:
        """Put a client's public parameters in the object store, for the actors to fetch."""
        import ray

        with self._lock:
            if pp not in self._refs:
                self._refs[pp] = ray.put(data)

    def answer(self, client_id: str, pp: PublicParams, query: bytes,
               expand_at: str | None = None) -> tuple[bytes, dict[str, float]]:
        """The response to ``query``: every shard's partial answer, combined; seconds per
        stage (the slowest shard's, then "combine"). ``expand_at`` overrides the cluster's."""
        import ray

        with self._lock:
            ref = self._refs.get(pp)
        if ref is None:
            raise SpiralpirError("public parameters not registered with the shards")
        start = time.monotonic()
        stages: dict[str, float] = {}
        shard_query = None
        where = expand_at or self.expand_at
        if where == "coordinator":
            shard_query = prepare_for_shards(pp, query, self.combine_threads)
            stages["prepare"] = time.monotonic() - start
            sq_ref = ray.put(shard_query)
        attempt = 0
        while True:
            attempt += 1
            if where == "split":
                # one query's calls reach every actor before the next query's (an actor answers
                # in order, and its answer call waits for the other shards' shares)
                with self._submit:
                    self._key += 1
                    made = [a.prepare_share.remote(self._key, client_id, [ref], query)
                            for a in self.actors]
                    pieces = [self._pieces(s == 0) for s in range(len(self.actors))]
                    calls = [a.answer_split.options(num_returns=pieces[s] + 1).remote(
                        self._key, s == 0, [m for t, m in enumerate(made) if t != s],
                        self.deadline, pieces[s]) for s, a in enumerate(self.actors)]
            elif shard_query is None:
                calls = [a.answer.remote(client_id, [ref], query, s == 0)
                         for s, a in enumerate(self.actors)]
            else:
                calls = [a.answer_expanded.remote(sq_ref) for a in self.actors]
            left = self.deadline - (time.monotonic() - start)
            try:
                got = ray.get([r for c in calls for r in _refs(c)], timeout=max(left, 0.1))
                outs, at = [], 0
                for c in calls:  # (partial answer, seconds), or (piece, …, piece, seconds)
                    k = len(_refs(c))
                    outs.append(got[at] if k == 1 else
                                (b"".join(got[at:at + k - 1]), got[at + k - 1]))
                    at += k
                break
            except ray.exceptions.RayError as exc:
                if not _retryable(exc):
                    cause = _cause(exc)  # the shard refused: the query's fault
                    if isinstance(cause, SpiralpirError):
                        raise cause from None
                    raise SpiralpirError(f"a shard failed: {cause}") from None
                # the other shards' answers to this attempt are dropped (answers are pure)
                if time.monotonic() - start + 0.5 >= self.deadline:
                    raise Unavailable(f"a shard is unavailable ({type(exc).__name__}, "
                                      f"{attempt} attempt(s) in {self.deadline:g} s); retry "
                                      "shortly", retry_after=2) from None
                time.sleep(min(0.5, 0.05 * 2 ** attempt))
        t = time.perf_counter()
        secs = [o[1] for o in outs]
        if where == "split":
            for s, o in enumerate(outs):
                self._part_bytes[s == 0] = len(o[0])
        resp = combine_shards(pp, [o[0] for o in outs], self.combine_threads, shard_query)
        for k in {k for s in secs for k in s}:
            stages[k] = max(s[k] for s in secs if k in s)
        stages["combine"] = time.perf_counter() - t
        return resp, stages

    def _pieces(self, with_gsw: bool) -> int:
        """How many inline-sized pieces a partial answer comes back in (one until one such
        answer was seen: its size is the build's)."""
        return max(1, -(-self._part_bytes.get(with_gsw, 0) // INLINE_BYTES))

    def close(self) -> None:
        import ray
        from ray.util.placement_group import remove_placement_group

        for a in self.actors if hasattr(self, "actors") else []:
            ray.kill(a, no_restart=True)
        remove_placement_group(self.group)


def split_pays(one_node: bool, expanded_bytes: int, prepare_seconds: float,
               network_gbps: float) -> bool:
    """``expand_at="auto"``'s rule: split the preparation between the shards when each shard
    receives the others' shares, (1 − 2^−S) of the expanded query (``expanded_bytes``), faster
    than it would prepare that part itself, (1 − 2^−S) of ``prepare_seconds`` (one core's
    expansion and conversion): always when every shard runs on one node (the shares pass
    through that node's shared-memory object store), else iff expanded_bytes · 8 /
    (network_gbps · 10^9) < prepare_seconds (0 Gb/s: unknown, never)."""
    if one_node:
        return True
    return network_gbps > 0 and expanded_bytes * 8 / (network_gbps * 1e9) < prepare_seconds


def _time_preparation(build: Any) -> tuple[int, float]:
    """(bytes of the expanded query, one core's seconds to prepare it), on a throwaway key's
    query: what split_pays weighs."""
    keys = ClientKeys.new(build.lib)
    pp = PublicParams(build.lib, keys.public_params())
    try:
        query = keys.query(0)
        start = time.perf_counter()
        expanded = prepare_for_shards(pp, query, 1)
        return len(expanded), time.perf_counter() - start
    finally:  # the throwaway secret and parameters go now, not at garbage collection
        pp.close()
        keys.close()


def _refs(call: Any) -> list[Any]:
    """A call's return references: a list of several, or one."""
    return call if isinstance(call, list) else [call]


def _cause(exc: Exception) -> Any:
    return getattr(exc, "cause", None) or exc


def _retryable(exc: Exception) -> bool:
    """A failure of the cluster, not of the query: an actor died (also when a share it was
    making was lost on its way to another shard's call), an object was lost, or the deadline
    passed."""
    import ray

    lost = (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError,
            ray.exceptions.GetTimeoutError)
    return isinstance(exc, lost) or isinstance(_cause(exc), (*lost, ShareLost))


def connect_ray(address: str, cpus: int, object_store_bytes: int = 0) -> None:
    """Join the cluster at ``address``, or with "local" start one in this process with
    ``cpus`` CPUs (its workers on this machine) and, if ``object_store_bytes``, an object
    store of that size whose memory is touched once at start: a share written into memory
    never touched faults in every page (a 9.4 MB share took 6.5 ms, 4.0 ms preallocated,
    0.15 ms for the copy itself)."""
    import ray

    if ray.is_initialized():
        return
    try:
        if address == "local":
            store: dict[str, Any] = {} if object_store_bytes <= 0 else {
                "object_store_memory": object_store_bytes,
                "_system_config": {"preallocate_plasma_memory": True}}
            ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False,
                     configure_logging=False, **store)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise SpiralpirError(f"--ray {address}: cannot connect: {exc}") from None
