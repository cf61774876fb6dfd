"""The shards of a sharded database as Ray actors, and the coordinator's call to them.

Each shard of a set written by ``spiralpir shard`` (service/shards.py) is held by one actor
(``ShardWorker``): it opens the build, checks its shard's file against the manifest and maps
it, and answers partial answers (runtime shard.hpp). The actors are placed by a placement
group with one bundle of ``cpus`` CPUs per shard and strategy SPREAD (or STRICT_SPREAD: never
two shards on one node), so Ray puts them on different machines where it can.

With ``expand_at="coordinator"`` the coordinator expands and converts the query once and
puts the result in the object store for every shard (``answer_expanded``) instead.

Clients' public parameters go to the object store once per client (``ray.put`` at setup);
a query passes that reference, boxed in a list so that Ray does not resolve it, and an actor
fetches and parses the parameters only the first time it sees the client (then keeps them,
least recently used dropped first).

Faults: an actor whose process dies is restarted by Ray (``max_restarts``) and maps its shard
again (checked again); its tasks are retried by Ray (``max_task_retries``: an answer is a pure
function of the query and the shard), and a query that still fails is tried again by
``RayShards.answer`` until ``deadline`` seconds have passed, then refused with
``Unavailable`` (HTTP 503, Retry-After). A response is only ever the combination of one
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
from spiralpir.optimizer.service.binding import PublicParams, combine_shards, prepare_for_shards
from spiralpir.optimizer.service.builds import open_build
from spiralpir.optimizer.service.pir_server import Unavailable

# where a query is expanded and converted: on every shard (the query goes to each; the
# default: the expanded query is far larger than the query) or once on the coordinator (its
# expanded form goes to each shard: less CPU in all, more bytes)
EXPAND_AT = ("shards", "coordinator")


class ShardWorker:
    """One shard, inside a Ray actor (``RayShards`` makes it remote)."""

    def __init__(self, source_dir: str, build_dir: str | None, ci: bool, shard_dir: str,
                 index: int, threads: int, max_clients: int) -> None:
        self.build = open_build(Path(source_dir), Path(build_dir) if build_dir else None, ci=ci,
                                show_progress=False)
        manifest = shard_set.read_manifest(Path(shard_dir))
        self.index = index
        self.db = shard_set.open_shard(self.build, manifest, index, threads)
        self.max_clients = max(1, max_clients)
        self.clients: OrderedDict[str, PublicParams] = OrderedDict()

    def pid(self) -> int:
        return os.getpid()

    def answer(self, client_id: str, pp_box: list[Any], query: bytes,
               with_gsw: bool) -> tuple[bytes, dict[str, float]]:
        import ray

        pp = self.clients.get(client_id)
        if pp is None:
            pp = PublicParams(self.build.lib, ray.get(pp_box[0]))
            self.clients[client_id] = pp
            while len(self.clients) > self.max_clients:
                self.clients.popitem(last=False)[1].close()
        self.clients.move_to_end(client_id)
        return self.db.answer(pp, query, with_gsw)

    def answer_expanded(self, shard_query: bytes) -> tuple[bytes, dict[str, float]]:
        return self.db.answer_expanded(shard_query)


class RayShards:
    """The actors of one shard set on a Ray cluster, as the coordinator sees them."""

    def __init__(self, source_dir: Path, build_dir: Path | None, ci: bool,
                 manifest: shard_set.Manifest, cpus: float = 1.0, threads: int = 1,
                 max_clients: int = 64, strict_spread: bool = False,
                 max_restarts: int = 5, deadline: float = 30.0, start_timeout: float = 120.0,
                 combine_threads: int = 1, expand_at: str = "shards") -> None:
        import ray
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        if not ray.is_initialized():
            raise SpiralpirError("Ray is not initialised: connect first (connect_ray)")
        if expand_at not in EXPAND_AT:
            raise SpiralpirError(f"expand_at '{expand_at}': expected one of {', '.join(EXPAND_AT)}")
        self.expand_at = expand_at
        self.manifest = manifest
        self.deadline = deadline
        self.combine_threads = combine_threads
        self._refs: weakref.WeakKeyDictionary[PublicParams, Any] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
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
            self.pids = ray.get([a.pid.remote() for a in self.actors], timeout=start_timeout)
        except ray.exceptions.RayError as exc:
            self.close()
            raise SpiralpirError(f"a shard actor failed to start: {_cause(exc)}") from None

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
        if (expand_at or self.expand_at) == "coordinator":
            shard_query = prepare_for_shards(pp, query, self.combine_threads)
            stages["prepare"] = time.monotonic() - start
            sq_ref = ray.put(shard_query)
        attempt = 0
        while True:
            attempt += 1
            if shard_query is None:
                calls = [a.answer.remote(client_id, [ref], query, s == 0)
                         for s, a in enumerate(self.actors)]
            else:
                calls = [a.answer_expanded.remote(sq_ref) for a in self.actors]
            left = self.deadline - (time.monotonic() - start)
            try:
                outs = ray.get(calls, timeout=max(left, 0.1))
                break
            except ray.exceptions.RayTaskError as exc:  # the shard refused: the query's fault
                cause = _cause(exc)
                if isinstance(cause, SpiralpirError):
                    raise cause from None
                raise SpiralpirError(f"a shard failed: {cause}") from None
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError) as exc:
                # the other shards' answers to this attempt are dropped (answers are pure)
                if time.monotonic() - start + 0.5 >= self.deadline:
                    raise Unavailable(f"a shard is unavailable ({type(exc).__name__}, "
                                      f"{attempt} attempt(s) in {self.deadline:g} s); retry "
                                      "shortly", retry_after=2) from None
                time.sleep(min(0.5, 0.05 * 2 ** attempt))
        t = time.perf_counter()
        resp = combine_shards(pp, [o[0] for o in outs], self.combine_threads, shard_query)
        stages.update({k: max(o[1][k] for o in outs) for k in outs[0][1]})
        stages["combine"] = time.perf_counter() - t
        return resp, stages

    def close(self) -> None:
        import ray
        from ray.util.placement_group import remove_placement_group

        for a in self.actors if hasattr(self, "actors") else []:
            ray.kill(a, no_restart=True)
        remove_placement_group(self.group)


def _cause(exc: Exception) -> Any:
    return getattr(exc, "cause", None) or exc


def connect_ray(address: str, cpus: int) -> None:
    """Join the cluster at ``address``, or with "local" start one in this process with
    ``cpus`` CPUs (its workers on this machine)."""
    import ray

    if ray.is_initialized():
        return
    try:
        if address == "local":
            ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False,
                     configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise SpiralpirError(f"--ray {address}: cannot connect: {exc}") from None
