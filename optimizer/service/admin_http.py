"""The update endpoint's side of the server: who may call it and what it does with a body.

``POST /v1/admin/update`` exists only when ``serve`` is given ``--admin-token-file``; the
request must carry ``Authorization: Bearer <token>`` (compared in constant time), its body is a
CHANGES batch (changes.py), applied whole by the server's Updater (db_updates.py; a keyword
table's through keyword_updates.KeywordUpdater) on threads of their own, so queries keep their
workers; batches arriving while one is applied are applied together as the next version
(db_updates.Updater). The reply is the batch's UpdateReport as JSON.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import changes
from spiralpir.optimizer.service.db_updates import Updater

DEFAULT_MAX_BODY = 1 << 30  # bytes of one change batch (100,000 records of 256 B: ~60 MB)
MIN_TOKEN_BYTES = 16
# requests parsed and waiting at once: those waiting while a batch lands become one version
ADMIN_WORKERS = 4


def read_token(path: Path) -> bytes:
    """The token in ``path`` (surrounding whitespace ignored), at least MIN_TOKEN_BYTES."""
    try:
        token = Path(path).read_bytes().strip()
    except OSError as exc:
        raise SpiralpirError(f"cannot read the admin token file {path}: {exc.strerror}") from None
    if len(token) < MIN_TOKEN_BYTES or any(b <= 0x20 or b >= 0x7F for b in token):
        raise SpiralpirError(f"admin token file {path}: the token must be at least "
                             f"{MIN_TOKEN_BYTES} printable ASCII characters without spaces")
    return token


class Admin:
    """The admin endpoint of one server: its token and its Updater."""

    def __init__(self, token: bytes, updater: Updater, num_records: int,
                 max_body: int = DEFAULT_MAX_BODY,
                 apply_text: Callable[[str, str], dict[str, Any]] | None = None) -> None:
        self._token = token
        self.updater = updater
        self._apply_text = apply_text  # a keyword table's batches (text, source) -> report
        self.num_records = num_records
        self.max_body = max_body
        self.executor = ThreadPoolExecutor(max_workers=ADMIN_WORKERS,
                                           thread_name_prefix="spiralpir-admin")

    def authorized(self, header: str | None) -> bool:
        """Whether an Authorization header carries the token (constant time in its value)."""
        scheme, _, given = (header or "").partition(" ")
        ok = hmac.compare_digest(given.strip().encode("latin-1", "replace"), self._token)
        return ok and scheme.lower() == "bearer"

    def apply(self, body: bytes) -> dict[str, Any]:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise changes.BadChanges(f"request body: not UTF-8 (byte {exc.start})") from None
        if self._apply_text is not None:
            return self._apply_text(text, "request body")
        batch = changes.parse(text, "request body", self.num_records,
                              self.updater.files.file_record_size)
        return self.updater.apply(batch).to_json()
