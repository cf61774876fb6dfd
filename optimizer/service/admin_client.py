"""Sending a change batch to a running server's update endpoint (admin_http.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import requests
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import http_api as api


def send_update(url: str, token: bytes, changes_path: Path, timeout: float = 600.0
                ) -> dict[str, Any]:
    """POST the CHANGES file to ``url``'s /v1/admin/update; the server's report (JSON)."""
    try:
        body = Path(changes_path).read_bytes()
    except OSError as exc:
        raise SpiralpirError(f"cannot read {changes_path}: {exc.strerror}") from None
    target = url.rstrip("/") + api.ADMIN_UPDATE
    try:
        r = requests.post(target, data=body, timeout=timeout, headers={
            "Authorization": "Bearer " + token.decode("ascii"),
            "Content-Type": "application/x-ndjson"})
    except requests.RequestException as exc:
        raise SpiralpirError(f"cannot reach {target}: {exc}") from None
    try:
        out = r.json()
    except ValueError:
        out = None
    if r.status_code != 200 or not isinstance(out, dict):
        why = out.get("error") if isinstance(out, dict) else r.text[:200]
        hint = " (the server was started without --admin-token-file)" \
            if r.status_code == 404 else ""
        raise SpiralpirError(f"update refused by {url} (HTTP {r.status_code}): {why}{hint}")
    return out
