"""The websocket under :class:`~tidings.channels.GatewayClient`: a TCP (or TLS) stream this
module opens and closes itself, with trio-websocket's client handshake over it
(``wrap_client_stream``).

trio-websocket's own ``open_websocket_url`` opens the stream inside and leaves it open when
the handshake fails (the server rejects it: a web server's 404) or is cancelled (a peer that
takes the TCP connection and says nothing, the caller's deadline), and when the server closed
first after a close handshake: the garbage collector closed it later, with a
``ResourceWarning`` in whatever ran then. Here the stream is closed on every path out.

Errors are as ``open_websocket_url``'s: ``HandshakeError`` (caused by the ``OSError``) when
the server cannot be reached (and, with its own text, when the connection ends before the
server answers the handshake: see :func:`_handshake`), ``ConnectionRejected`` when it refuses
the handshake, and what the body raises comes out as it was raised, not in an exception group.
A URL it cannot use (no ``ws://`` or ``wss://`` string with a host and a valid port) is a
:class:`~tidings.errors.ValidationError` naming ``url``, before anything is tried. A ``wss``
server's certificate is checked as there (the system's trust store, the URL's host,
sent as SNI); one refused is a ``HandshakeError`` caused by the ``ssl`` error, at once (see
:func:`_tls_handshake`).
"""

from __future__ import annotations

import ssl
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import trio
from trio_websocket import HandshakeError, WebSocketConnection, wrap_client_stream

from tidings.errors import ValidationError

__all__ = ["CLOSE_AFTER_ERROR", "CLOSE_WITHIN", "open_transport"]

CLOSE_WITHIN = 60.0
"""Seconds the close handshake may take when the body ends (trio-websocket's own
``disconnect_timeout``; the caller may cancel it); the stream is closed after it either way."""
CLOSE_AFTER_ERROR = 2.0
"""Seconds, shielded, for the close handshake when the body raised (as
:meth:`~tidings.channels.GatewayClient.aclose` gives it). None when it was cancelled or
interrupted: the stream is closed at once."""


def _address(url: object) -> tuple[str, int, str, str, bool]:
    """*url*'s host, port, resource (path and query), ``Host`` header and whether it is
    ``wss``, as trio-websocket reads a URL. Raises :class:`ValidationError` naming ``url``
    (before any connection is tried) for one that is no ``ws://`` or ``wss://`` URL string
    with a host a name lookup takes (no empty label, none over 63 characters) and a valid
    port (1 to 65535: a connection to port 0 always fails): bad input, not a bare
    ``ValueError`` or the lookup's ``UnicodeError``."""
    if not isinstance(url, str):
        raise ValidationError("url", f"must be a ws:// or wss:// URL string, got {url!r:.80}")
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValidationError("url", f"{exc}, got {url!r:.200}") from None
    if parts.scheme not in ("ws", "wss"):
        raise ValidationError("url", f"must start ws:// or wss://, got {url!r:.200}")
    host = parts.hostname
    if not host:
        raise ValidationError("url", f"names no host, got {url!r:.200}")
    try:  # as the name lookup encodes it: else a UnicodeError from the connect
        host.encode("idna")
    except UnicodeError as exc:
        raise ValidationError("url", f"the host is no host name ({exc.__cause__ or exc}), "
                                     f"got {url!r:.200}") from None
    if port == 0:  # what a server is told to listen on for a free port, never one it has
        raise ValidationError("url", f"port 0 is no port to connect to (a server started on "
                                     f"port 0 listens on a free one: its log says which), "
                                     f"got {url!r:.200}")
    secure = parts.scheme == "wss"
    port = port if port is not None else (443 if secure else 80)
    resource = (parts.path or "/") + (f"?{parts.query}" if "?" in url else "")
    named = f"[{host}]" if ":" in host else host
    header = named if port in (80, 443) else f"{named}:{port}"
    return host, port, resource, header, secure


@asynccontextmanager
async def open_transport(url: str, *, max_message_size: int = 2 ** 20,
                         ) -> AsyncIterator[WebSocketConnection]:
    """A websocket client connection to *url* for the body (see the module docstring); its
    TCP stream closed when the body ends or the opening fails, whatever the reason."""
    host, port, resource, header, secure = _address(url)
    stream: trio.SocketStream | trio.SSLStream[trio.SocketStream]
    try:
        if secure:
            stream = await trio.open_ssl_over_tcp_stream(
                host, port, ssl_context=ssl.create_default_context(), https_compatible=True)
        else:
            stream = await trio.open_tcp_stream(host, port)
    except OSError as exc:
        raise HandshakeError from exc
    try:
        if isinstance(stream, trio.SSLStream):
            await _tls_handshake(stream)
        async with trio.open_nursery() as nursery:
            ws = await _handshake(nursery, stream, header, resource, max_message_size)
            try:
                yield ws
            except BaseException as exc:
                if not _cancelled(exc):  # a cancel leaves no time for the close handshake
                    with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_AFTER_ERROR):
                        await ws.aclose()
                raise
            else:
                with trio.move_on_after(CLOSE_WITHIN):
                    await ws.aclose()
            finally:
                nursery.cancel_scope.cancel()  # the reader task, if the close did not end it
    except BaseExceptionGroup as group:
        _raise_sole(group)
    finally:
        with trio.CancelScope(shield=True):
            await trio.aclose_forcefully(stream)


class _Watched:
    """The nursery trio-websocket's reader task runs in, as ``wrap_client_stream`` sees it:
    when that task ends, *handshake* is cancelled (a no-op once the handshake is done)."""

    def __init__(self, nursery: trio.Nursery, handshake: trio.CancelScope) -> None:
        self._nursery = nursery
        self._handshake = handshake

    def start_soon(self, reader: Callable[..., Awaitable[None]], *args: object) -> None:
        async def watched() -> None:
            await reader(*args)
            self._handshake.cancel()

        self._nursery.start_soon(watched)


async def _handshake(nursery: trio.Nursery,
                     stream: trio.SocketStream | trio.SSLStream[trio.SocketStream], header: str,
                     resource: str, max_message_size: int) -> WebSocketConnection:
    """trio-websocket's client handshake over *stream*, its reader task in *nursery*.

    ``wrap_client_stream`` waits for the server's answer until its reader task sees one, and
    that task ends without a word when the connection ends first (a server that closes it
    after reading the request, one at its connection limit, a service that is no web server
    and hangs up): the handshake then waited for the caller's deadline (30 s for
    ``GatewayClient.connect``, which then said "no welcome"). Here the end of the reader ends
    the wait, as ``HandshakeError`` saying so. A rejection (``ConnectionRejected``) is raised
    by the reader task itself, as before; an answer that came before the end wins (the waiter
    was woken first: a cancel cannot undo that), and the body then sees the connection
    closed."""
    with trio.CancelScope() as handshake:
        return await wrap_client_stream(
            _Watched(nursery, handshake), stream,  # type: ignore[arg-type]
            header, resource, max_message_size=max_message_size)
    raise HandshakeError("the connection ended before the server answered the websocket "
                         "handshake (it hung up, or spoke no HTTP)")


async def _tls_handshake(stream: trio.SSLStream[trio.SocketStream]) -> None:
    """The TLS handshake, before the websocket's. Left to trio-websocket, a failed one (a
    certificate refused, a server that speaks no TLS) was taken by its reader task for a closed
    connection, and the websocket handshake waited on: the caller's deadline ended it, the
    reason lost. Here it is ``HandshakeError``, caused by the ``ssl`` error (an ``OSError``),
    as a server that cannot be reached is."""
    try:
        await stream.do_handshake()
    except trio.BrokenResourceError as exc:
        raise HandshakeError from (exc.__cause__ or exc)


def _cancelled(exc: BaseException) -> bool:
    """Whether *exc* is (or holds) a cancel or a Ctrl-C: the close must not wait then."""
    if isinstance(exc, BaseExceptionGroup):
        return exc.split((trio.Cancelled, KeyboardInterrupt))[0] is not None
    return isinstance(exc, trio.Cancelled | KeyboardInterrupt)


def _raise_sole(group: BaseExceptionGroup) -> None:
    """Raise the one exception of the nursery's *group* that is not a ``trio.Cancelled`` (the
    body's, or the handshake's), as it was raised: a group the body raised stays that group,
    as ``open_websocket_url`` left it (not its one exception alone, nor the group kept inside
    the nursery's). The nursery's group itself when there is none (a cancel, for its scope to
    catch) or more than one."""
    others = [exc for exc in group.exceptions if not isinstance(exc, trio.Cancelled)]
    if len(others) != 1:
        raise group
    [sole] = others
    context = sole.__context__
    try:
        raise sole
    finally:
        sole.__context__ = context  # not the group it came out of
        del sole, context
