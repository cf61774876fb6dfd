"""The PIR server of a sharded deployment: the same HTTP API (service/http_server.py) over a
coordinator that holds the clients' public parameters and asks the shards (Ray actors,
service/ray_shards.py) for partial answers, which it combines into the response — byte for
byte the one-process server's response to the same query (runtime shard.hpp)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from spiralpir.optimizer.service.binding import Build, PublicParams
from spiralpir.optimizer.service.pir_server import (
    DEFAULT_CLIENT_MEMORY,
    BadBlock,
    PirServer,
    StaleVersion,
)
from spiralpir.optimizer.service.ray_shards import RayShards
from spiralpir.optimizer.service.sessions import StreamSessions
from spiralpir.optimizer.service.value_frame import VALUES_FIXED, VALUES_FRAMED


class ShardedPirServer(PirServer):
    """PirServer's protocol over the shards of ``cluster``: POST /v1/query only (no streams,
    no updates)."""

    def __init__(self, build: Build, cluster: RayShards, threads: int = 1,
                 max_clients: int | None = None, client_memory: int = DEFAULT_CLIENT_MEMORY,
                 log: Callable[[str], None] | None = None) -> None:
        self._init_clients(build, threads, log)
        manifest = cluster.manifest
        manifest.check_build(build)
        self.cluster = cluster
        self.streaming = False
        self.blocks = []
        self.live = None
        self.values = VALUES_FRAMED if manifest.framed else VALUES_FIXED
        self.record_size = build.record_size
        self.num_records = manifest.num_records
        self.sessions = StreamSessions(1, 1.0)
        self._size_clients(max_clients, client_memory)

    def setup(self, data: bytes) -> str:
        client_id = super().setup(data)
        with self._lock:  # not pin(): that would end the client's setup grace
            pp = self._clients.get(client_id)
        if pp is not None:
            self.cluster.register(pp, data)
        return client_id

    def answer_versioned(self, client_id: str, query: bytes, pinned: PublicParams | None = None,
                         min_version: int = 0) -> tuple[bytes, dict[str, float], float, int]:
        if min_version > 0:
            raise StaleVersion(f"the server holds database version 0, the request asks for at "
                               f"least {min_version}")
        pp = pinned if pinned is not None else self.pin(client_id)
        start = time.perf_counter()
        resp, stages = self.cluster.answer(client_id, pp, query)
        return resp, stages, time.perf_counter() - start, 0

    def open_stream(self, client_id: str, query: bytes, pinned: PublicParams | None = None
                    ) -> tuple[str, dict[str, float]]:
        raise BadBlock("a sharded server answers POST /v1/query, not streams")

    def info(self) -> dict[str, Any]:
        out = super().info()
        m = self.cluster.manifest
        out["shards"] = {"count": m.shards, "shard_bits": m.bits,
                         "shard_params_hash": m.shard_params_hash}
        return out
