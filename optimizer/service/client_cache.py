"""A client for a server known only by its URL: built from the plan the server publishes
(``GET /v1/params``: ``plan``, the build's params.json), once per parameter set, cached.

Layout under the cache directory ($SPIRALPIR_CACHE_DIR, else $XDG_CACHE_HOME/spiralpir, else
~/.cache/spiralpir)::

    clients/NAME-H/generated/NAME/   the server's build regenerated here from its plan
    clients/NAME-H/lib/              libspiralpir_NAME.so (build/client_lib.py)
    objects/runtime-K/               runtime objects, per compiler and runtime sources

H hashes what the library depends on: the build name (the C ABI's prefix), the canonical
parameters, whether it is the CI twin, the generator and the package version. Nothing the
server sends picks code: the plan's parameters are validated like any plan document, must be
the parameters the server reports for its running library, and must reach MIN_CLIENT_BITS by
this client's own estimate (the server's security report is replaced, not believed).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from spiralpir.optimizer import codegen
from spiralpir.optimizer.build.builder import file_lock
from spiralpir.optimizer.build.client_lib import ClientInstance, build_client_library
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.params.ci_twin import ci_literal
from spiralpir.optimizer.service.binding import Build
from spiralpir.optimizer.service.client_wire import check_same_params

MIN_CLIENT_BITS = 128.0  # a server's parameters below this estimate are refused


def cache_root() -> Path:
    env = os.environ.get("SPIRALPIR_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "spiralpir"


def _package_version() -> str:
    try:
        return metadata.version("spiralpir")
    except metadata.PackageNotFoundError:
        return "source"


def params_key(name: str, params: Mapping[str, Any], ci: bool) -> str:
    """The cache key of a client library: what its compiled code depends on."""
    blob = json.dumps({"name": name, "params": params, "ci": ci,
                       "generator": codegen.GENERATOR_VERSION,
                       "version": _package_version()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def server_plan(info: Mapping[str, Any]) -> dict[str, Any]:
    """The plan document a server published, checked: a valid plan whose parameters (or its
    CI twin's) are the ones the server reports for its library."""
    doc = info.get("plan")
    if not isinstance(doc, dict):
        raise SpiralpirError("the server does not publish its plan (GET /v1/params has no "
                             "'plan'; a spiralpir server older than this client?): pass --build "
                             "with a local copy of the server's generated directory")
    try:
        params, estimate = codegen.parse_plan_document(doc)
    except SpiralpirError as exc:
        raise SpiralpirError(f"the server's plan: {exc}") from None
    ci = info.get("ci") is True
    check_same_params(info.get("params"), ci_literal(params) if ci else params,
                      "the plan it publishes")
    return {"params": params, "estimate": estimate}


def _say(text: str) -> None:
    print(f"spiralpir: {text}", file=sys.stderr, flush=True)


def client_build(name: str, info: Mapping[str, Any], root: Path | None = None,
                 log: Callable[[str], None] | None = _say) -> Build:
    """The loaded client library for the server whose /v1/params reply is `info`: from the
    cache, else generated from its plan and compiled (build/client_lib.py) into the cache."""
    doc = server_plan(info)
    ci = info.get("ci") is True
    key = params_key(name, doc["params"], ci)
    base = (Path(root) if root else cache_root()).resolve()
    entry = base / "clients" / f"{name}-{key}"
    lib = entry / "lib" / f"libspiralpir_{name}.so"
    source = entry / "generated" / name
    entry.mkdir(parents=True, exist_ok=True)
    with file_lock(entry / ".lock"):
        if not lib.is_file():
            if log:
                log(f"the server runs build '{name}'; building a matching client (parameters "
                    f"{key}, once: later queries reuse {entry})")
            codegen.generate_from_document(name, doc, entry / "generated", refresh_security=True)
            bits = json.loads((source / "params.json").read_text())["security"]["security_bits"]
            if bits is None or float(bits) < MIN_CLIENT_BITS:
                raise SpiralpirError(f"the server's parameters estimate at {bits} bits of "
                                     f"security, below {MIN_CLIENT_BITS:g}: refusing them")
            build_client_library(source, entry / "lib", base / "objects", ci, log)
    return Build(ClientInstance(name=name, source_dir=source, library=lib), ci=ci)
