"""Waiting for a server that is still starting, instead of failing at once.

`spiralpir serve` binds its port before it reads and preprocesses the database, so a client
that comes early either finds nothing listening (the process is still starting) or is
connected but not answered (the database is being prepared). Both are waited out, with one
line saying so, up to a bound; after it, a refused connection is left to the caller's own
error and a silent server is a one-line error naming the bound.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import requests
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import http_api as api

FIRST_ANSWER_SECONDS = 2.0  # a running server answers /v1/health at once
RETRY_SECONDS = 0.5  # between connection attempts while nothing listens


def wait_until_answering(http: Any, url: str, wait: float,
                         log: Callable[[str], None]) -> None:
    """Return once `url` answers an HTTP request (any status), or after `wait` seconds of
    nothing listening; a server that holds the connection unanswered for `wait` seconds is an
    error. `log` gets one line when waiting starts."""
    if wait <= 0:
        return
    try:
        socket.getaddrinfo(urlsplit(url).hostname, None)
    except (socket.gaierror, UnicodeError):
        return  # an unknown host is not a starting server: the caller's request reports it
    deadline = time.monotonic() + wait
    told = False
    read_timeout = FIRST_ANSWER_SECONDS
    while True:
        remaining = deadline - time.monotonic()
        try:
            r = http.get(url + api.HEALTH, stream=True,
                         timeout=(max(min(remaining, 5.0), 0.1),
                                  max(min(read_timeout, remaining), 0.1)))
            r.close()
            return
        except requests.ReadTimeout:
            if deadline - time.monotonic() <= 0.05:
                raise SpiralpirError(
                    f"{url} accepted the connection but did not answer within {wait:g} s "
                    "(still preparing its database?); give --wait SECONDS to wait longer"
                ) from None
            why = "connected; the server is preparing its database"
            read_timeout = deadline - time.monotonic()
        except requests.ConnectionError:
            if remaining <= 0:
                return  # nothing listens: the caller's request reports it
            why = "nothing answers yet"
            time.sleep(min(RETRY_SECONDS, max(remaining, 0.0)))
        if not told:
            log(f"waiting for the server at {url} to start ({why}; up to {wait:g} s, --wait "
                "to change)")
            told = True
