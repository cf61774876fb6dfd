"""Named parameter sets of known PIR schemes, shipped as ring files in ``presets/``.

Each preset is a ring file (paramsets.RING_FIELDS) whose ``name``, ``tags`` and ``source``
say what it is and where its numbers come from; ``spiralpir security --presets`` tabulates
their levels, ``--preset NAME`` checks one like a file.
"""

from __future__ import annotations

from importlib import resources

from .errors import SpiralpirError
from .jsonfile import read_json_object
from .paramsets import ParamSet, ring_file


def all_presets() -> list[ParamSet]:
    """Every shipped preset, in name order."""
    folder = resources.files("spiralpir.estimator") / "presets"
    out = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            with resources.as_file(entry) as path:
                doc = read_json_object(path, "preset")
            out.append(ring_file(doc, doc.get("name", entry.name[:-5])))
    return out


def preset(name: str) -> ParamSet:
    """The preset called ``name``."""
    found = {p.name: p for p in all_presets()}
    if name not in found:
        raise SpiralpirError(f"--preset {name!r}: no such preset (known: {', '.join(found)})")
    return found[name]
