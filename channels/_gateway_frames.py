"""The gateway's wire protocol, version 1: one JSON object per websocket message.

Client frames are parsed into frozen records (:func:`parse_client_frame`); anything else is a
:class:`FrameError` naming a stable ``code`` (and the ``field`` when one is to blame), which the
gateway answers with an ``error`` frame, persisting nothing. Server frames are built by the
``*_frame`` functions as plain dicts and sent with :func:`encode`. Unknown fields are ignored
(a newer client may send more); unknown frame types are refused. The README documents it all.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, final

import attrs

from tidings.actors import MAX_ID_CHARS, ContentBlock, Outbound
from tidings.actors._blocks import lone_surrogate, plain_json
from tidings.errors import ProtocolError
from tidings.store import MAX_INTEGER

__all__ = [
    "CLOSE_BAD_HELLO",
    "CLOSE_FLOOD",
    "CLOSE_GOING_AWAY",
    "CLOSE_HEARTBEAT",
    "CLOSE_INTERNAL",
    "CLOSE_TOO_SLOW",
    "CLOSE_UNAUTHORIZED",
    "CLOSE_UNSUPPORTED",
    "ERROR_CODES",
    "HELLO_MAX_BYTES",
    "MAX_SERVER_FRAME_BYTES",
    "PROTOCOL_VERSION",
    "Ack",
    "Answer",
    "Approval",
    "ClientFrame",
    "FrameError",
    "Hello",
    "Message",
    "Ping",
    "Pong",
    "Sync",
    "UnsupportedProtocol",
    "approval_request_frame",
    "delivery_frame",
    "encode",
    "encoded_size",
    "error_frame",
    "parse_client_frame",
    "peek_hello_token",
    "prompt_frame",
]

PROTOCOL_VERSION = 1

CLOSE_GOING_AWAY = 1001
"""The server is shutting down (or the gateway restarts): reconnect later with ``after_seq``."""
CLOSE_INTERNAL = 1011
CLOSE_BAD_HELLO = 4000
"""The hello was authenticated but malformed (the reason names the field)."""
CLOSE_UNAUTHORIZED = 4001
"""No hello in time, the first frame was not a hello, or its token is wrong."""
CLOSE_UNSUPPORTED = 4002
"""The hello asked for a protocol version (an integer) this server does not speak; a hello
with no integer ``protocol`` is a bad one (``4000``)."""
CLOSE_HEARTBEAT = 4008
"""Nothing was heard from the client for two heartbeat periods."""
CLOSE_TOO_SLOW = 4009
"""The client did not read its frames; its backlog stays in the outbox (reconnect with
``after_seq``)."""
CLOSE_FLOOD = 4029
"""The client sent frames faster than its rate allows."""

HELLO_MAX_BYTES = 65536
"""The largest hello taken, whatever ``max_frame_bytes`` says (the default of that limit): a
hello carries the server's token (any length from MIN_TOKEN_LENGTH), a conversation name and a
session id (up to ``MAX_ID_CHARS``), so a server configured with a small frame limit for its
clients' messages would otherwise admit no one. Read once per connection."""

MAX_SERVER_FRAME_BYTES = 1 << 22
"""The largest frame the server sends (4 MiB of UTF-8): what :class:`GatewayClient` takes by
default, and what any client must take (trio-websocket's own default is 1 MiB). A delivery
frame carries its text twice, and JSON escapes a text's quotes, backslashes and control
characters (``\\x01`` is six bytes as ``\\u0001``), so a text within ``MAX_TEXT_BYTES`` can
still make a bigger frame: the gateway fails such a delivery rather than send it (a client's
connection would close ``1009`` on it at every replay), and drops any other frame over it."""

ERROR_CODES = {
    "bad_json": "the frame is not JSON",
    "bad_utf8": "a binary frame that is not UTF-8",
    "not_an_object": "the frame is JSON but not an object",
    "frame_too_big": "the frame is over max_frame_bytes",
    "missing_field": "a required field is missing (see field)",
    "bad_field": "a field has the wrong type or value (see field)",
    "unknown_type": "no such frame type",
    "duplicate_hello": "hello is only the first frame",
    "unknown_delivery": "an ack names deliveries of another conversation",
    "unknown_prompt": "no such prompt or approval request in this conversation",
    "already_answered": "the prompt or approval request was answered already",
    "expired": "the prompt or approval request expired; the answer was not applied",
    "cancelled": ("the question was withdrawn (its turn was cancelled, or the agent stopped "
                  "waiting); the answer was not applied"),
    "refused": ("the channel's access does not allow this client (hello.client) to answer "
                "a prompt or approval request; the answer was not applied"),
    "shutting_down": "the server is stopping and takes no new messages",
    "internal": "the server failed to handle the frame",
}
"""Every ``error`` frame code and what it means."""

_ID_LIMIT = 200
_QUESTION_ID_LIMIT = MAX_ID_CHARS
"""A prompt's or approval request's id is the asker's (a host's ``Prompt(prompt_id=...)`` may
be any id, up to ``MAX_ID_CHARS``), not the client's: an answer takes any id a question has
(one over :data:`_ID_LIMIT` was sent, then every answer to it refused)."""
_SESSION_ID_LIMIT = MAX_ID_CHARS
"""A session id a client names (hello, ack, sync) is one the server gave it in a frame, and a
host may make sessions with ids of up to ``MAX_ID_CHARS``: a client could be sent such a
session's deliveries and questions, then not name it back (refused over :data:`_ID_LIMIT`)."""
_MAX_ACK_IDS = 1000


class FrameError(ProtocolError):
    """A client frame the gateway refuses; ``code`` is one of :data:`ERROR_CODES`."""

    def __init__(self, code: str, message: str, *, field: str | None = None,
                 frame_id: str | None = None) -> None:
        super().__init__(code, message)
        self.field = field
        self.frame_id = frame_id


class UnsupportedProtocol(FrameError):
    """A hello of another protocol version (an integer other than :data:`PROTOCOL_VERSION`):
    closed ``4002``, where a hello with no integer ``protocol`` is malformed (``4000``)."""


@final
@attrs.frozen
class Hello:
    token: str
    conversation: str
    protocol: int
    after_seq: int | None = None
    session_id: str | None = None
    client: str | None = None


@final
@attrs.frozen
class Message:
    text: str
    id: str


@final
@attrs.frozen
class Ack:
    """Exactly one of ``delivery_ids`` / ``up_to_seq`` / ``message_ids``; ``session_id``
    scopes ``up_to_seq`` (default: the conversation's current session). ``message_ids``
    acks ``notice`` frames (a command's answer with no session) by the client message id
    each names."""

    delivery_ids: tuple[str, ...] | None = None
    up_to_seq: int | None = None
    session_id: str | None = None
    message_ids: tuple[str, ...] | None = None
    ref: str | None = None
    """The frame's own ``id``, if it had one: an error after the parse carries it back."""


@final
@attrs.frozen
class Answer:
    prompt_id: str
    text: str | None
    """None: the client says "no answer" (``"text": null``); the agent gets None."""
    ref: str | None = None
    """The frame's own ``id``, if it had one: an error after the parse carries it back."""


@final
@attrs.frozen
class Approval:
    request_id: str
    decision: str
    ref: str | None = None
    """The frame's own ``id``, if it had one: an error after the parse carries it back."""


@final
@attrs.frozen
class Ping:
    pass


@final
@attrs.frozen
class Pong:
    pass


@final
@attrs.frozen
class Sync:
    """Ask for the highest seq a client gets in a session (default: the conversation's current
    one; a message or notice row, not a ``visible=False`` or ``failed`` one: progress rows are
    never replayed); answered with ``synced``. A client that has received that seq has caught
    up."""

    session_id: str | None = None
    ref: str | None = None
    """The frame's own ``id``, if it had one: an error after the parse carries it back."""


ClientFrame = Hello | Message | Ack | Answer | Approval | Ping | Pong | Sync


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _decode(raw: str | bytes, max_frame_bytes: int) -> dict[str, Any]:
    if isinstance(raw, bytes):
        if len(raw) > max_frame_bytes:
            raise FrameError("frame_too_big", f"{len(raw)} bytes, over max_frame_bytes "
                                              f"({max_frame_bytes})")
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FrameError("bad_utf8", f"binary frame is not UTF-8 ({exc.reason} at byte "
                                         f"{exc.start})") from None
    elif len(raw) * 4 > max_frame_bytes and len(raw.encode("utf-8", "surrogatepass")) \
            > max_frame_bytes:
        raise FrameError("frame_too_big", f"over max_frame_bytes ({max_frame_bytes})")
    try:
        data = json.loads(raw, parse_constant=_refuse_constant)
    except ValueError as exc:
        raise FrameError("bad_json", f"not JSON: {exc}") from None
    except RecursionError:  # arrays or objects nested deeper than the parser's stack
        raise FrameError("bad_json", "not JSON we take: nested too deeply") from None
    if not isinstance(data, dict):
        raise FrameError("not_an_object", f"a frame is a JSON object, got {type(data).__name__}")
    return data


def _id_of(raw: str | bytes) -> str | None:
    """The ``id`` of a frame refused for its size, to send back as the error's ``ref`` (None
    when it has none to send). Parsed all the same: the websocket bounds it (four times
    ``max_frame_bytes``), and a client waiting for its message's answer needs the ref."""
    try:
        data = json.loads(raw, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):  # also bytes that are no UTF-8
        return None
    return _Fields(data, "frame").frame_id if isinstance(data, dict) else None


class _Fields:
    """Typed access to one frame's fields; errors name the field and carry the frame's id."""

    def __init__(self, data: Mapping[str, Any], kind: str) -> None:
        self.data = data
        self.kind = kind
        frame_id = data.get("id")
        self.frame_id = (frame_id if isinstance(frame_id, str)
                         and lone_surrogate(frame_id) is None else None)  # sendable back

    def _error(self, code: str, name: str, message: str) -> FrameError:
        return FrameError(code, f"{self.kind}.{name}: {message}", field=name,
                          frame_id=self.frame_id)

    def text(self, name: str, *, required: bool = True, limit: int | None = None,
             empty: bool = True) -> str | None:
        value = self.data.get(name)
        if value is None:
            if required:
                raise self._error("missing_field", name, "is required")
            return None
        if not isinstance(value, str):
            raise self._error("bad_field", name, f"must be a string, not "
                                                 f"{type(value).__name__}")
        if not empty and not value:
            raise self._error("bad_field", name, "must not be empty")
        if limit is not None and len(value) > limit:
            raise self._error("bad_field", name, f"must be at most {limit} characters")
        lone = lone_surrogate(value)
        if lone is not None:
            raise self._error("bad_field", name, f"is not valid Unicode (lone surrogate at "
                                                 f"index {lone})")
        return value

    def count(self, name: str, *, required: bool = False) -> int | None:
        value = self.data.get(name)
        if value is None:
            if required:
                raise self._error("missing_field", name, "is required")
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self._error("bad_field", name, f"must be an integer >= 0, got {value!r:.80}")
        if value > MAX_INTEGER:  # a seq beyond what SQLite stores is no seq
            raise self._error("bad_field", name, f"must be at most {MAX_INTEGER}")
        return value


def parse_client_frame(raw: str | bytes, *, max_frame_bytes: int,
                       after_hello: bool = False) -> ClientFrame:
    """Parse one websocket message from a client. Raises :class:`FrameError`.

    *after_hello*: the connection said its hello already, so a hello is ``duplicate_hello``
    whatever its fields (its field errors would tell the client to fix a frame it must not
    send at all)."""
    try:
        data = _decode(raw, max_frame_bytes)
    except FrameError as exc:
        if exc.code == "frame_too_big":  # the client matches it to its message by the ref
            exc.frame_id = _id_of(raw)
        raise
    kind = data.get("type")
    frame_id = _Fields(data, "frame").frame_id  # the client matches the error by it (ref)
    if kind is None:
        raise FrameError("missing_field", "type: is required", field="type",
                         frame_id=frame_id)
    if not isinstance(kind, str):
        raise FrameError("bad_field", "type: must be a string", field="type",
                         frame_id=frame_id)
    if after_hello and kind == "hello":
        raise FrameError("duplicate_hello", "hello is only the first frame",
                         frame_id=frame_id)
    parse = _PARSERS.get(kind)
    if parse is None:
        raise FrameError("unknown_type", f"no frame type {kind[:40]!r} (protocol "
                                         f"{PROTOCOL_VERSION}: {', '.join(sorted(_PARSERS))})",
                         field="type", frame_id=frame_id)
    return parse(_Fields(data, kind))


def peek_hello_token(raw: str | bytes, *, max_frame_bytes: int) -> str | None:
    """The token of a first frame that is a hello, before anything else is looked at (so an
    unauthenticated client learns nothing from field errors); None if there is none. Raises
    :class:`FrameError` (``frame_too_big``) for a frame over *max_frame_bytes*: a hello with
    a token may be one, and its size is the client's own, not the server's to keep."""
    try:
        data = _decode(raw, max_frame_bytes)
    except FrameError as exc:
        if exc.code == "frame_too_big":
            raise
        return None
    token = data.get("token")
    return token if data.get("type") == "hello" and isinstance(token, str) else None


def _hello(f: _Fields) -> Hello:
    # No length limit: the token was compared with the server's before this parse (see
    # peek_hello_token), and a server may have any token of MIN_TOKEN_LENGTH or more.
    token = f.text("token")
    protocol = f.data.get("protocol")
    if protocol is None:
        raise f._error("missing_field", "protocol", "is required")
    if isinstance(protocol, bool) or not isinstance(protocol, int):
        raise f._error("bad_field", "protocol", f"must be an integer, got {protocol!r:.80}")
    if protocol != PROTOCOL_VERSION:  # before the rest: another version's fields are its own
        raise UnsupportedProtocol("bad_field", f"hello.protocol: {protocol!r:.40} is not "
                                               f"supported: this server speaks "
                                               f"{PROTOCOL_VERSION}", field="protocol")
    conversation = f.text("conversation", limit=_ID_LIMIT, empty=False)
    if conversation is not None and not conversation.isprintable():
        raise f._error("bad_field", "conversation", "must be printable text")
    return Hello(token=token or "", conversation=conversation or "", protocol=protocol,
                 after_seq=f.count("after_seq"),
                 session_id=f.text("session_id", required=False, limit=_SESSION_ID_LIMIT,
                                   empty=False),
                 client=f.text("client", required=False, limit=100, empty=False))


def _message(f: _Fields) -> Message:
    message_id = f.text("id", limit=_ID_LIMIT, empty=False)
    return Message(text=f.text("text") or "", id=message_id or "")


def _ack(f: _Fields) -> Ack:
    # Which forms it has, before any value is read: an up_to_seq that is no seq beside
    # delivery_ids is a frame of two forms (missing_field), as a bad list beside one is.
    ids = f.data.get("delivery_ids")
    message_ids = f.data.get("message_ids")
    if [ids, f.data.get("up_to_seq"), message_ids].count(None) != 2:
        raise f._error("missing_field", "delivery_ids", "an ack has delivery_ids, up_to_seq "
                                                        "or message_ids (exactly one)")
    up_to = f.count("up_to_seq")
    session_id = f.text("session_id", required=False, limit=_SESSION_ID_LIMIT, empty=False)
    if up_to is not None:
        return Ack(up_to_seq=up_to, session_id=session_id, ref=f.frame_id)
    if message_ids is not None:
        return Ack(message_ids=_ids(f, "message_ids", message_ids, "client message id"),
                   session_id=session_id, ref=f.frame_id)
    return Ack(delivery_ids=_ids(f, "delivery_ids", ids, "delivery id"),
               session_id=session_id, ref=f.frame_id)


def _ids(f: _Fields, name: str, ids: Any, what: str) -> tuple[str, ...]:
    """The ack's list of ids in field *name*, each once (a ``bad_field`` naming it unless
    it is a list of 1 to 1,000 id strings, each 1 to 200 characters of valid Unicode)."""
    if (not isinstance(ids, list) or not ids or len(ids) > _MAX_ACK_IDS
            or not all(isinstance(i, str) and 0 < len(i) <= _ID_LIMIT
                       and lone_surrogate(i) is None for i in ids)):
        raise f._error("bad_field", name, f"must be a list of 1 to {_MAX_ACK_IDS} {what} "
                                          "strings (valid Unicode)")
    return tuple(dict.fromkeys(ids))


def _answer(f: _Fields) -> Answer:
    prompt_id = f.text("prompt_id", limit=_QUESTION_ID_LIMIT, empty=False)
    if "text" not in f.data:  # a forgotten field is not taken for "no answer"
        raise f._error("missing_field", "text", "is required (a string, or null for no answer)")
    if f.data["text"] is None:  # the person gives no answer (a chat at its end of input)
        return Answer(prompt_id=prompt_id or "", text=None, ref=f.frame_id)
    if not isinstance(f.data["text"], str):
        raise f._error("bad_field", "text", f"must be a string, or null for no answer, not "
                                            f"{type(f.data['text']).__name__}")
    return Answer(prompt_id=prompt_id or "", text=f.text("text") or "", ref=f.frame_id)


def _approval(f: _Fields) -> Approval:
    request_id = f.text("request_id", limit=_QUESTION_ID_LIMIT, empty=False)
    decision = f.text("decision")
    if decision not in ("allow", "deny"):
        raise f._error("bad_field", "decision", f"must be 'allow' or 'deny', got {decision!r:.80}")
    return Approval(request_id=request_id or "", decision=decision, ref=f.frame_id)


def _sync(f: _Fields) -> Sync:
    return Sync(session_id=f.text("session_id", required=False, limit=_SESSION_ID_LIMIT,
                                  empty=False), ref=f.frame_id)


_PARSERS = {"hello": _hello, "message": _message, "ack": _ack, "answer": _answer,
            "approval": _approval, "ping": lambda f: Ping(), "pong": lambda f: Pong(),
            "sync": _sync}


# --- server frames ------------------------------------------------------------------------------


def encode(frame: Mapping[str, Any]) -> str:
    """One frame as the text of a websocket message (compact JSON, UTF-8 kept).

    Text with a lone surrogate (say, an agent's text chunk) cannot be sent as UTF-8: such a
    frame is written with JSON escapes instead (``\\ud800``), so it never breaks the
    connection's writer. A float JSON has no number for (NaN, an infinity: a tool call's
    arguments are the agent's own values) is sent as the string Python writes for it
    (``"NaN"``), as a value of no JSON type is sent as its ``str()``: the bare ``NaN`` token
    is no JSON, and a strict client (a browser's ``JSON.parse``) refused the whole frame."""
    try:
        text = json.dumps(frame, ensure_ascii=False, separators=(",", ":"), default=str,
                          allow_nan=False)
    except ValueError as exc:
        if "Out of range float" not in str(exc):
            raise
        frame = _nan_as_text(frame)
        text = json.dumps(frame, ensure_ascii=False, separators=(",", ":"), default=str)
    if lone_surrogate(text) is not None:
        text = json.dumps(frame, ensure_ascii=True, separators=(",", ":"), default=str)
    return text


def _nan_as_text(value: Any) -> Any:
    """*value* with every non-finite float (in a mapping, list or tuple) as its string."""
    if isinstance(value, float) and not math.isfinite(value):
        return json.dumps(value)
    if isinstance(value, Mapping):
        return {key: _nan_as_text(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_nan_as_text(item) for item in value]
    return value


def encoded_size(text: str) -> int:
    """The UTF-8 bytes of an encoded frame (what goes on the wire)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _block(block: ContentBlock) -> dict[str, Any]:
    data = block.as_dict()
    if data.get("source_kind") == "path":  # a server path means nothing to a remote client
        data.pop("location", None)
    return data


def delivery_frame(outbound: Outbound) -> dict[str, Any]:
    """A stored delivery: ``seq`` is the per-session number from the store; ``command`` names
    the command a delivery answers, when it answers one."""
    frame = {"type": "delivery", "session_id": outbound.session_id, "seq": outbound.seq,
             "delivery_id": outbound.delivery_id, "kind": outbound.kind, "text": outbound.text,
             "blocks": [_block(block) for block in outbound.blocks]}
    command = outbound.metadata.get("command")
    if isinstance(command, str):
        frame["command"] = command
    return frame


def error_frame(code: str, message: str, *, field: str | None = None,
                ref: str | None = None) -> dict[str, Any]:
    """An ``error`` frame; ``ref`` is the id of the client frame it answers, when it had one."""
    frame: dict[str, Any] = {"type": "error", "code": code, "message": message}
    if field is not None:
        frame["field"] = field
    if ref is not None:
        frame["ref"] = ref
    return frame


def prompt_frame(prompt_id: str, session_id: str, text: str, expires_at: float
                 ) -> dict[str, Any]:
    return {"type": "prompt", "prompt_id": prompt_id, "session_id": session_id, "text": text,
            "expires_at": _finite(expires_at)}


def approval_request_frame(request_id: str, session_id: str, action: str,
                           details: Mapping[str, Any], expires_at: float) -> dict[str, Any]:
    return {"type": "approval_request", "request_id": request_id, "session_id": session_id,
            "action": action, "details": plain_json(details), "expires_at": _finite(expires_at)}


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
