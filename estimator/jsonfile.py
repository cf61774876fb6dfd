"""Reading a JSON document a user names, with errors that say which file and what is wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import SpiralpirError


def read_json_object(path: str | Path, what: str) -> dict[str, Any]:
    """The JSON object in `path`; `what` names the file in errors ("parameters file", ...)."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SpiralpirError(f"cannot read {what} {p}: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpiralpirError(f"{what} {p} is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise SpiralpirError(f"{what} {p} must hold a JSON object")
    return doc
