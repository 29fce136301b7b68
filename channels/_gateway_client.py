"""A Python client of the gateway protocol (``tidings chat``, the tests and the bench use it).

``async with GatewayClient.connect(url, token=..., conversation=...) as client`` sends the
hello and waits for ``welcome`` (a refused hello raises :class:`GatewayClosed` with the close
code and reason; a server that has not welcomed it within ``welcome_timeout`` seconds,
:data:`WELCOME_TIMEOUT` by default, raises :class:`GatewayTimeout` naming the URL: a wrong port
that accepts and says nothing must not hang the client). :meth:`GatewayClient.receive` returns
the next frame, answering the server's ``ping`` on the way; :attr:`GatewayClient.seen` keeps
the highest ``seq`` received per session, which is what a reconnect passes as ``after_seq``;
:attr:`GatewayClient.last_heard`, trio's clock when the last frame came (a ``ping`` too), tells
a connection that went silent (see ``tidings chat``'s heartbeat).
"""

from __future__ import annotations

import itertools
import json
import math
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

from tidings.actors._status import check_seconds, check_seq, seconds_bound
from tidings.channels._gateway_frames import (
    _MAX_ACK_IDS,
    MAX_SERVER_FRAME_BYTES,
    PROTOCOL_VERSION,
    encode,
)
from tidings.channels._gateway_transport import open_transport
from tidings.errors import GatewayClosed, GatewayTimeout, ValidationError
from tidings.store._ids import check_id

__all__ = ["WELCOME_TIMEOUT", "GatewayClient", "GatewayClosed", "GatewayTimeout",
           "open_transport"]

WELCOME_TIMEOUT = 30.0
"""Seconds :meth:`GatewayClient.connect` gives the whole opening by default: TCP connection,
websocket handshake, hello and ``welcome`` (a gateway answers a hello at once, after a store
read or two). Pass ``welcome_timeout=`` to change it."""


_PROTOCOL_ERROR = 1002


def _closed(exc: ConnectionClosed) -> GatewayClosed:
    reason = exc.reason
    return GatewayClosed(getattr(reason, "code", None), getattr(reason, "reason", None))


_CLOSE_REASON_BYTES = 123
"""The most a websocket close frame carries as its reason (RFC 6455: 125 bytes, 2 of them
the code)."""


def _sendable_close_code(code: object) -> bool:
    """Whether *code* is a close code an endpoint may send (RFC 6455, 7.4): ``1004`` is
    reserved, ``1005``, ``1006`` and ``1015`` only ever say why a close had none to give."""
    if not isinstance(code, int) or isinstance(code, bool):
        return False
    return 1000 <= code <= 1003 or 1007 <= code <= 1011 or 3000 <= code <= 4999


def _close_reason(reason: str) -> str:
    """*reason* cut to fit a close frame (:data:`_CLOSE_REASON_BYTES` of UTF-8, ``…`` said
    where it was cut)."""
    data = reason.encode("utf-8", "replace")
    if len(data) <= _CLOSE_REASON_BYTES:
        return data.decode("utf-8")
    return data[:_CLOSE_REASON_BYTES - 3].decode("utf-8", "ignore") + "…"


async def _refuse(ws: WebSocketConnection, error: GatewayClosed) -> None:
    """Close *ws* as *error* says (``1002`` and its reason) before it is raised: otherwise the
    transport closes it ``1000``, and the server's log says all was well. Shielded, and
    bounded as :meth:`GatewayClient.aclose` is."""
    with trio.CancelScope(shield=True), trio.move_on_after(2):
        await ws.aclose(error.code or _PROTOCOL_ERROR, _close_reason(error.reason or ""))


def _frame(raw: str | bytes) -> dict[str, Any]:
    """One server frame: a JSON object, else :class:`GatewayClosed` (``1002``: the peer does
    not speak the protocol, say a URL that is some other websocket server)."""
    try:
        frame = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # also binary that is not UTF-8
        raise GatewayClosed(_PROTOCOL_ERROR, f"not a tidings gateway: a frame that is not "
                                             f"JSON ({exc})") from None
    if not isinstance(frame, dict):
        raise GatewayClosed(_PROTOCOL_ERROR, f"not a tidings gateway: a frame that is not a "
                                             f"JSON object ({type(frame).__name__})")
    return frame


_REQUIRED: dict[str, dict[str, type]] = {
    "delivery": {"session_id": str, "seq": int, "delivery_id": str},
    "accepted": {"id": str},
    "synced": {"session_id": str, "last_seq": int},
    "prompt": {"prompt_id": str},
    "approval_request": {"request_id": str},
    "prompt_closed": {"id": str},
}
"""The fields of server frames that a client acts on (acks, waits, answers), by type."""


def _checked(frame: dict[str, Any]) -> dict[str, Any]:
    """*frame*, if the fields of :data:`_REQUIRED` for its type are there with their type;
    else :class:`GatewayClosed` ``1002`` naming the field (a gateway never sends such a frame:
    a client acting on it would fail with a ``KeyError`` far from the cause)."""
    for name, kind in _REQUIRED.get(str(frame.get("type")), {}).items():
        value = frame.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise GatewayClosed(_PROTOCOL_ERROR, f"not a tidings gateway: {frame['type']}."
                                                 f"{name} is {value!r:.80}")
    return frame


_OWN_IDS_KEPT = 1024
"""How many of the message ids it sent a :class:`GatewayClient` remembers, to ack the
``notice`` frames answering them (see :meth:`GatewayClient.receive_until`)."""


def _answers_message(frame: dict[str, Any], own: dict[str, None]) -> bool:
    """Whether a ``notice`` frame names a message of *own* as the one it answers (a gateway
    older than the notice ack names none, and is not acked; another device's is left to that
    device, whose resend after a lost connection is to be sent it)."""
    message_id = frame.get("message_id")
    return isinstance(message_id, str) and message_id in own


def _welcome(raw: str | bytes) -> dict[str, Any]:
    welcome = _frame(raw)
    if welcome.get("type") != "welcome":
        raise GatewayClosed(_PROTOCOL_ERROR, f"expected welcome, got {welcome.get('type')!r}")
    for name in ("session_id", "last_seq"):
        value = welcome.get(name)
        if not (isinstance(value, str) if name == "session_id"
                else isinstance(value, int) and not isinstance(value, bool)):
            raise GatewayClosed(_PROTOCOL_ERROR, f"not a tidings gateway: welcome.{name} is "
                                                 f"{value!r}")
    return welcome


class GatewayClient:
    """One connection to a gateway, after its ``welcome`` (see the module docstring)."""

    def __init__(self, ws: WebSocketConnection, welcome: dict[str, Any]) -> None:
        self.ws = ws
        self.welcome = welcome
        self.session_id: str = welcome["session_id"]
        self.seen: dict[str, int] = {}
        self.last_heard = trio.current_time()  # the welcome's; then each frame's (see receive)
        self._ids = itertools.count(1)
        # The whole uuid4: the gateway remembers a conversation's message ids for good, and
        # 32 random bits (8 hex digits) met between two connections often enough in a long
        # conversation that a new message was answered ``duplicate`` and never run.
        self._prefix = uuid.uuid4().hex
        # The latest message ids sent (:data:`_OWN_IDS_KEPT`): their notices are acked.
        self._own: dict[str, None] = {}

    @classmethod
    @asynccontextmanager
    async def connect(cls, url: str, *, token: str, conversation: str,
                      after_seq: int | None = None, session_id: str | None = None,
                      client: str | None = None,
                      max_message_size: int = MAX_SERVER_FRAME_BYTES,
                      welcome_timeout: float = WELCOME_TIMEOUT,
                      ) -> AsyncIterator[GatewayClient]:
        """Connect, say hello, yield the client once welcomed. Raises
        :class:`GatewayClosed` if the server refuses (or answers with anything but a
        ``welcome``: code ``1002``), :class:`GatewayTimeout` if it has not welcomed the client
        within *welcome_timeout* seconds of the call, ``HandshakeError`` (caused by the
        ``OSError``) if it cannot be reached or the connection ends before the websocket
        handshake's answer
        (``ConnectionRejected``, a ``HandshakeError``, if it answers the upgrade with an HTTP
        error); :class:`ValidationError` naming ``url`` for one that is no ``ws://`` or
        ``wss://`` URL with a host and a valid port, ``welcome_timeout`` if it is no number
        of seconds > 0 (``inf``, or an integer past a float's range: no bound), or
        ``max_message_size`` if it is no integer > 0 (the most bytes a server frame may have:
        ``None`` is no 'no limit'; see :data:`MAX_SERVER_FRAME_BYTES` for what a gateway may
        send)."""
        check_seconds("welcome_timeout", welcome_timeout, positive=True)
        if not isinstance(max_message_size, int) or isinstance(max_message_size, bool) \
                or max_message_size <= 0:
            raise ValidationError("max_message_size",
                                  f"must be an integer > 0 (bytes), got {max_message_size!r:.80}")
        hello: dict[str, Any] = {"type": "hello", "token": token, "conversation": conversation,
                                 "protocol": PROTOCOL_VERSION}
        if after_seq is not None:
            hello["after_seq"] = after_seq
        if session_id is not None:
            hello["session_id"] = session_id
        if client is not None:
            hello["client"] = client
        # One deadline over the whole opening, the transport's own included: trio-websocket's
        # connect_timeout leaves its reader task waiting on a peer that accepted the TCP
        # connection and says nothing, and so hangs for ever in its nursery; this scope
        # cancels that nursery too. Lifted once welcomed.
        # An integer past a float's range is a number of seconds too: no bound, as inf.
        bound = seconds_bound(welcome_timeout)
        with trio.CancelScope(deadline=trio.current_time() + bound) as opening:
            async with open_transport(url, max_message_size=max_message_size) as ws:
                try:
                    await ws.send_message(encode(hello))
                    raw = await ws.get_message()
                except ConnectionClosed as exc:
                    raise _closed(exc) from None
                opening.deadline = math.inf
                try:
                    welcome = _welcome(raw)
                except GatewayClosed as exc:
                    await _refuse(ws, exc)
                    raise
                yield cls(ws, welcome)
        if opening.cancelled_caught:
            raise GatewayTimeout(f"no welcome from {url} within {bound:g} s (not a "
                                 "tidings gateway, or a hung one?)")

    # --- sending -------------------------------------------------------------------------------

    async def send(self, frame: dict[str, Any]) -> None:
        """Send one raw protocol *frame* (a dict, JSON-encoded); the typed methods below use it.
        Raises :class:`GatewayClosed` if the server closed the connection."""
        try:
            await self.ws.send_message(encode(frame))
        except ConnectionClosed as exc:
            raise _closed(exc) from None

    def new_id(self) -> str:
        """A client message id not used before on this client (``<prefix>-<n>``). Never blocks."""
        return f"{self._prefix}-{next(self._ids)}"

    async def message(self, text: str, *, message_id: str | None = None) -> str:
        """Send a ``message`` (slash commands too); returns its client id: *message_id* as
        given (an empty one too, which the gateway refuses naming ``id``), else a new one.
        The latest :data:`_OWN_IDS_KEPT` ids are remembered: :meth:`receive_until` acks the
        ``notice`` answering one of them."""
        message_id = self.new_id() if message_id is None else message_id
        self._own.pop(message_id, None)  # kept as the latest
        self._own[message_id] = None
        while len(self._own) > _OWN_IDS_KEPT:
            del self._own[next(iter(self._own))]
        await self.send({"type": "message", "text": text, "id": message_id})
        return message_id

    async def answer(self, prompt_id: str, text: str | None) -> None:
        """Answer the ``prompt`` *prompt_id* with *text*; None says "no answer" (the agent's
        ``prompt_user`` gets None at once, as when ``--local``'s input ends), rather than
        leaving the question open until it expires. Raises :class:`ValidationError` naming
        ``prompt_id`` (no non-empty string) or ``text`` (neither a string nor None), before
        anything is sent. The gateway's refusal (``already_answered``, ``expired``...) is an
        ``error`` frame, read later like any frame."""
        prompt_id = check_id("prompt_id", prompt_id)
        if text is not None and not isinstance(text, str):
            raise ValidationError("text", f"must be a string, or None for no answer, not "
                                          f"{type(text).__name__}")
        await self.send({"type": "answer", "prompt_id": prompt_id, "text": text})

    async def ack(self, *delivery_ids: str) -> None:
        """Ack the deliveries named (an ``ack`` frame; ids past the gateway's 1,000 per frame
        go in as many frames as they need). With none, nothing is sent. Raises
        :class:`ValidationError` naming ``delivery_ids``, before anything is sent, unless each
        is a non-empty string (the gateway refuses a whole frame for one bad id, with an
        ``error`` frame the caller reads later, if at all). Always a checkpoint."""
        await self._ack_ids("delivery_ids", "delivery id", delivery_ids)

    async def ack_notices(self, *message_ids: str) -> None:
        """Ack the ``notice`` frames answering the messages named (their ``message_id``: a
        command answered with no session), so that a resend of such an id is not sent the
        answer again (an ``ack`` frame with ``message_ids``, 1,000 per frame). With none,
        nothing is sent. Raises :class:`ValidationError` naming ``message_ids``, before
        anything is sent, unless each is a non-empty string. Always a checkpoint."""
        await self._ack_ids("message_ids", "message id", message_ids)

    async def _ack_ids(self, field: str, what: str, ids: tuple[str, ...]) -> None:
        """Ack frames of *ids* in their *field*, :data:`_MAX_ACK_IDS` a frame (none for no
        ids: a checkpoint), each checked first: a :class:`ValidationError` naming *field*
        for one that is no non-empty string (a *what*), before anything is sent."""
        for one in ids:
            if not isinstance(one, str) or not one:
                raise ValidationError(field, f"must each be a non-empty {what} string, got "
                                             f"{one!r:.80}")
        if not ids:
            await trio.lowlevel.checkpoint()
            return
        for start in range(0, len(ids), _MAX_ACK_IDS):
            await self.send({"type": "ack", field: list(ids[start:start + _MAX_ACK_IDS])})

    async def ack_up_to(self, seq: int, *, session_id: str | None = None) -> None:
        """Ack every delivery of the session (default: the conversation's current one) up to
        *seq*. Raises :class:`ValidationError` naming ``seq`` or ``session_id``, before
        anything is sent, for what the gateway would refuse (as :meth:`ack` does: its
        ``error`` frame, read later if at all, left the rows unacked and the window full)."""
        frame: dict[str, Any] = {"type": "ack", "up_to_seq": check_seq("seq", seq)}
        if session_id is not None:
            frame["session_id"] = check_id("session_id", session_id)
        await self.send(frame)

    async def sync(self, session_id: str | None = None) -> None:
        """Ask for the highest seq a client gets in the session (the answer is a ``synced``
        frame). Raises :class:`ValidationError` naming ``session_id`` if it is no session id
        (not a non-empty string), before anything is sent."""
        frame: dict[str, Any] = {"type": "sync"}
        if session_id is not None:
            frame["session_id"] = check_id("session_id", session_id)
        await self.send(frame)

    # --- receiving -----------------------------------------------------------------------------

    async def receive(self) -> dict[str, Any]:
        """The next frame (a server ``ping`` is answered with ``pong`` and skipped).
        Raises :class:`GatewayClosed` when the server closes, or ``1002`` when it sent
        something that is not a JSON object, or a frame without a field a client acts on, such
        as a delivery's ``delivery_id``: the connection is then closed ``1002`` with that
        reason (cut to a close frame's 123 bytes), so the server's side hears why."""
        while True:
            try:
                raw = await self.ws.get_message()
            except ConnectionClosed as exc:
                raise _closed(exc) from None
            self.last_heard = trio.current_time()
            try:
                frame = _checked(_frame(raw))
            except GatewayClosed as exc:
                await _refuse(self.ws, exc)
                raise
            if frame.get("type") == "ping":
                await self.send({"type": "pong"})
                continue
            if frame.get("type") == "delivery":
                session = frame["session_id"]
                self.seen[session] = max(self.seen.get(session, 0), frame["seq"])
            return frame

    async def receive_until(self, done: Callable[[dict[str, Any]], bool], *,
                            ack: bool = True) -> list[dict[str, Any]]:
        """Frames up to and including the first for which ``done(frame)`` is true; with
        ``ack`` every delivery is acked as it arrives, and so is every ``notice`` that
        answers (its ``message_id``) one of the latest messages this client sent: another
        device's is not, as that device's resend of its message after a lost connection
        is sent the notice only until some device acks it."""
        frames: list[dict[str, Any]] = []
        while True:
            frame = await self.receive()
            frames.append(frame)
            if ack and frame.get("type") == "delivery":
                await self.ack(frame["delivery_id"])
            elif ack and frame.get("type") == "notice" and _answers_message(frame, self._own):
                await self.ack_notices(frame["message_id"])
            if done(frame):
                return frames

    async def aclose(self, code: int = 1000) -> None:
        """Close the connection with the close *code* (``1000``: a normal close), waiting at
        most 2 s for the server's answer (shielded: it is closed even from a cancelled scope).

        Raises:
          ValidationError: (a ``ValueError``, field ``code``) for a code no websocket endpoint
            may send (RFC 6455, 7.4): anything but ``1000``-``1003``, ``1007``-``1011`` and
            ``3000``-``4999``. Nothing is sent then, and the connection stays open: sent, the
            server would close it as a protocol error, far from the call that was wrong.
        """
        if not _sendable_close_code(code):
            raise ValidationError("code", f"must be a websocket close code an endpoint may "
                                          f"send (1000-1003, 1007-1011 or 3000-4999), "
                                          f"got {code!r:.80}")
        with trio.CancelScope(shield=True), trio.move_on_after(2):
            await self.ws.aclose(code)
