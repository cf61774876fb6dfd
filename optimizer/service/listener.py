"""The server's listening socket, bound before any slow startup work (reading and
preprocessing the database) so that a port in use is reported at once, in one line."""

from __future__ import annotations

import errno
import socket

from spiralpir.optimizer.errors import SpiralpirError

BACKLOG = 128


def bind_listener(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: a free port), or a one-line error."""
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise SpiralpirError(f"cannot listen on {shown}: {exc.strerror}") from None
    family, kind, proto, _name, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        # like aiohttp's default: a restarted server may rebind a port in TIME_WAIT
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        why = "the port is in use (pick another --port)" if exc.errno == errno.EADDRINUSE else \
            exc.strerror
        raise SpiralpirError(f"cannot listen on {shown}: {why}") from None
    sock.setblocking(False)
    return sock
