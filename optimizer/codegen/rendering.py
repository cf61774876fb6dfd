"""Rendering: a plan document -> the files of a specialized C++ build in ``generated/<name>/``.

The inputs are validated by codegen/document.py, the derived constants computed by
codegen/derive.py; this module renders the Jinja2 templates (package data
spiralpir.templates) with ``StrictUndefined``. Templates hold constants and thin glue only.

Every generated file starts with a banner: generated, do not edit; the exact command that
reproduces it; the generator version; a hash of the inputs. No dates. Output is
deterministic, and every file is written atomically (temporary file, then rename), so CI can
regenerate the checked-in builds and diff them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2
from spiralpir.optimizer.codegen.derive import derive
from spiralpir.optimizer.codegen.document import (
    canonical_json,
    max_shard_bits,
    normalize_params,
    parse_plan_document,
    shard_bits_of,
    struct_fields,
)
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.security import security_report
from spiralpir.optimizer.resources import GENERATED_DIR, templates_dir

GENERATOR_VERSION = "spiralpir-codegen 1"

DEFAULT_OUT = GENERATED_DIR  # relative: the working directory's generated/

NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,47}$")

# Files rendered from templates: output name -> template name.
TEMPLATE_FILES = {
    "params.hpp": "params.hpp.j2",
    "instance.cpp": "instance.cpp.j2",
    "instance_ci.cpp": "instance_ci.cpp.j2",
    "bench.cpp": "bench.cpp.j2",
    "bench_ci.cpp": "bench_ci.cpp.j2",
    "CMakeLists.txt": "CMakeLists.txt.j2",
}


def reproduce_command(name: str) -> str:
    return f"spiralpir generate --params generated/{name}/params.json --name {name}"


def _templates_hash() -> str:
    h = hashlib.sha256()
    templates = templates_dir()
    for tpl in sorted(set(TEMPLATE_FILES.values())):
        h.update(tpl.encode())
        h.update(b"\0")
        h.update((templates / tpl).read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def _cpp_u128(x: int) -> str:
    hi, lo = x >> 64, x & ((1 << 64) - 1)
    if hi == 0:
        return f"static_cast<unsigned __int128>({lo}ULL)"
    return f"((static_cast<unsigned __int128>({hi}ULL) << 64) | {lo}ULL)"


def _context(name: str, lit: dict[str, Any], doc: Mapping[str, Any],
             doc_json: str) -> dict[str, Any]:
    params = struct_fields(lit)
    der = derive(params)
    inputs_hash = hashlib.sha256(
        (GENERATOR_VERSION + "\0" + _templates_hash() + "\0" + doc_json).encode()
    ).hexdigest()
    return {
        "name": name,
        "p": params,
        "d": der,
        "variant": params["variant"],
        "q_cpp": _cpp_u128(der.q),
        "delta_cpp": _cpp_u128(der.delta),
        "noise_width_cpp": repr(float(params["noise_width"])),
        "generator_version": GENERATOR_VERSION,
        "inputs_hash": inputs_hash,
        "command": reproduce_command(name),
        "max_u64": (1 << 64) - 1,
        "max_shard_bits": max_shard_bits(doc, int(lit["nu_2"])),
    }


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def render(name: str, doc: Mapping[str, Any]) -> dict[str, str]:
    """Render every file of a build: relative name -> contents. Pure, deterministic."""
    if not NAME_RE.match(name):
        raise SpiralpirError(
            f"invalid build name '{name}': use lowercase letters, digits and '_', starting "
            "with a letter (it becomes a C++ identifier)"
        )
    params, _ = parse_plan_document(doc)
    doc_json = canonical_json(doc)
    ctx = _context(name, params, doc, doc_json)
    env = _environment()
    files = {"params.json": doc_json}
    for out_name, tpl in TEMPLATE_FILES.items():
        files[out_name] = env.get_template(tpl).render(**ctx)
    return files


def write_atomic(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(content)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def generate(
    name: str,
    params: Mapping[str, Any],
    estimate: Mapping[str, Any],
    out_dir: Path = DEFAULT_OUT,
    security: Mapping[str, Any] | None = None,
    shard_bits: int | None = None,
) -> Path:
    """Write ``out_dir/name/``; returns that directory. Files no longer generated are removed.
    shard_bits: the split the build must serve (2^S shards), kept in params.json as
    shards.shard_bits."""
    params = normalize_params(params)
    if security is None:
        security = security_report(params)
    doc: dict[str, Any] = {"params": params, "estimate": dict(estimate),
                           "security": dict(security)}
    if shard_bits is not None:
        doc["shards"] = {"shard_bits": shard_bits}
    doc = json.loads(canonical_json(doc))
    files = render(name, doc)
    target = Path(out_dir) / name
    for rel, content in files.items():
        dest = target / rel
        if dest.exists() and dest.read_text(encoding="utf-8") == content:
            continue
        write_atomic(dest, content)
    return target


def generate_from_document(name: str, doc: Mapping[str, Any], out_dir: Path = DEFAULT_OUT,
                           refresh_security: bool = False) -> Path:
    """Generate from a plan document or a build's params.json. A security report already in
    the document is kept (so regeneration is a pure function of params.json and the
    templates) unless refresh_security; otherwise the estimator computes it."""
    params, estimate = parse_plan_document(doc)
    security = doc.get("security")
    if refresh_security or not isinstance(security, dict) or not security:
        security = None
    return generate(name, params, estimate, out_dir, security=security,
                    shard_bits=shard_bits_of(doc, int(params["nu_2"])))
