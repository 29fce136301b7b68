"""``tidings chat`` over the websocket gateway: a terminal client of a running ``tidings serve``.

Each line typed is a ``message`` (slash commands pass through; a CRLF line's ``\r\n`` is not
sent, as in ``--local``); while a prompt or an approval request is open the next line answers it
(``y`` / ``yes`` / ``allow`` approves; with several open, the oldest first, as ``--local``
does); a line over the server's ``max_frame_bytes``, or not valid UTF-8, is not sent (a ``!``
line says why; a question stays open); a piped one is refused as soon as it is known to be over,
and the rest of it skipped unread into memory (see :mod:`tidings.supervisor._chat_input`).
Deliveries, progress, notices and lifecycle events are printed as they arrive, and every
delivery is acked once printed, as is a notice answering a line of its own (printed once: see
:func:`_noticed`). If the connection drops (or goes silent: see :func:`_heartbeat`)
it reconnects with ``session_id`` and ``after_seq``, so nothing is missed or shown twice (a
server whose session went back, its database restored, is said so: see :func:`_behind`; one that
does not know the session, another database, is joined afresh: see :func:`_session_unknown`),
and sends again, with the same id, each message the server had not answered ``accepted`` (or
refused) yet, or refused as it stopped (``shutting_down``: send it again later): one the drop
cut is not lost, one it had taken is answered ``duplicate``; an answer to a prompt or an
approval request that the drop cut is given again when the server asks again (it asks every new
connection what still waits), so the person is not asked twice; and a line typed while it
reconnects, with a question open, answers that question if the server asks it again (it is read
only once the server has asked), else it is a message (the question not asked again closed while
the chat was away: ``(question closed while reconnecting)`` says so first). :data:`_RECONNECTS`
times in a row at most, the count starting afresh once a connection has stayed up
:data:`_STABLE` seconds. With stdin a pipe each line waits for its turn (or command answer) to
be delivered before the next is sent, however long the turn runs (sent meanwhile, the next line
would steer it), and the end of input ends the chat once everything is in: a deterministic
transcript. That wait goes on across a reconnect (a turn that ended while the client was away
sent a ``completed`` nobody heard: its reply is replayed, and a line the ``welcome``'s
``running`` does not name is asked about at once, see :func:`_unlisted`; one still running is
named there, and a resent line the server had is answered ``duplicate`` with ``running`` while
its turn has not ended: either is waited for; a line merged into a turn whose frames carry
another message's id is asked about once no turn runs; once no turn is heard to run, the wait
lasts :data:`_SETTLE` at most, see :func:`_turn_ended`). At the end of input (piped, or
Ctrl-D typed) a question still open, or one the last line's turn asks while it is waited for,
gets "no answer" (a prompt's ``text`` null: the agent gets None; an approval's ``deny``), as
``--local`` declines, rather than left to its timeout. A server that has not
welcomed it within ``WELCOME_TIMEOUT`` (30 s) is one it cannot connect to: exit 1 on the first
connection. After a drop, every reconnect is said on stderr with how long it waits for its
welcome, and all of them together must be welcomed within :data:`_RECONNECT_FOR` (30 s) of the
drop: a hung server ends the chat then (exit 1). The frames it sends keep under the server's
``rate`` and ``burst`` (see :mod:`tidings.supervisor._chat_limits`): a pasted block of lines,
or the lines sent again after a reconnect, wait their turn rather than get the connection
closed ``4029``.
Ctrl-C cancels the chat at any point (exit 130, no traceback), and so do SIGTERM (exit 143)
and SIGHUP (exit 129; unless ignored, as under ``nohup``). A ``--token`` or
``--conversation`` no gateway takes is bad usage (exit 2, naming it), before connecting. A
stderr it cannot write (``2>/dev/full``) or closed (``2>&-``) loses its lines and changes
nothing else (see :mod:`tidings.supervisor._stderr`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import pathlib
import signal
import sys
import urllib.parse
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any, TextIO

import attrs
import trio
from trio_websocket import ConnectionRejected, HandshakeError

from tidings.actors import MAX_TEXT_BYTES
from tidings.channels import GatewayClient, GatewayClosed, GatewayConfig
from tidings.channels._gateway_client import WELCOME_TIMEOUT
from tidings.channels._gateway_frames import (
    MAX_SERVER_FRAME_BYTES,
    PROTOCOL_VERSION,
    FrameError,
    encode,
    parse_client_frame,
)
from tidings.channels._sanitize import sanitize_line, sanitize_text
from tidings.channels._terminal import (
    allows,
    input_line,
    is_a_terminal,
    over_prompt,
    stdin_is_a_terminal,
)
from tidings.errors import ConfigError
from tidings.store._ids import lone_surrogate
from tidings.supervisor._chat_input import LineTooLong, input_lines
from tidings.supervisor._chat_limits import (
    LineLimit,
    Pace,
    over_frame_limit,
    positive,
    too_big,
)
from tidings.supervisor._cli_paths import path_argument
from tidings.supervisor._config import file_path
from tidings.supervisor._signals import ENDING, ending_signals
from tidings.supervisor._stderr import say, stdout_lost
from tidings.supervisor._token import MIN_TOKEN_LENGTH, is_token, read_token_file

__all__ = ["DEFAULT_URL", "ChatOptions", "OutputFailed", "add_arguments",
           "chat_over_websocket", "check_url", "default_token_file", "run",
           "until_signalled", "web_page"]

_RECONNECTS = 5
"""Reconnects in a row before the chat gives up (exit 1)."""
_STABLE = 10.0
"""Seconds a connection must stay up after ``welcome`` before its drop starts a fresh count of
reconnects: a server that welcomes and then drops the client at once is not retried forever."""
_RECONNECT_FOR = 30.0
"""Seconds after a drop within which a reconnect must be welcomed, all attempts together
(each is given what is left as its ``welcome_timeout``): a server that takes the connection
and never answers (hung, or another service on its port) ends the chat this long after the
drop, not after :data:`_RECONNECTS` full welcome bounds (about 2.8 minutes)."""
_BACKOFF = 0.25
"""Seconds before a reconnect: doubled on each attempt (the first waits twice this), 8 at most."""
_SETTLE = 30.0
"""Seconds a piped line waits for its ``accepted``, for its answer's deliveries, and for its
turn's end while no turn runs (see :func:`_turn_ended`), before the next one is sent anyway."""
_ANSWERS_KEPT = 64
"""Answers to questions not closed yet that are kept, to answer again after a reconnect."""
_IDS_KEPT = 256
"""Message ids whose answer (``accepted``, a refusal, the end of their turn) is kept: only the
message a piped chat (or the end of input) waits for needs it, the last one sent; older ones
are forgotten, so a long chat keeps no id per line."""
_Line = str | LineTooLong
"""What the chat reads: a line, or one refused as it was read (too long to hold)."""


@attrs.frozen
class ChatOptions:
    url: str
    token: str = attrs.field(repr=False)
    conversation: str
    interactive: bool
    show_chunks: bool = False


class _State:
    """What the receiver has seen, for the sender (piped mode) and for reconnects."""

    def __init__(self) -> None:
        # The conversation's current session, as the server says (see _heard): the one the
        # hello after a drop names.
        self.session_id: str | None = None
        # The sessions the server moved the conversation off (a frame of one, a turn /new
        # left running, does not make it current again), the :data:`_IDS_KEPT` latest; and
        # the session a /clear answer cleared, until a frame names the one that follows it.
        self.left: dict[str, None] = {}
        self.cleared: str | None = None
        # message id -> the session its turn's lifecycle frames name: where its reply goes.
        self.turn_sessions: dict[str, str] = {}
        self.seen: dict[str, int] = {}
        # session -> highest seq printed: a delivery at or below it is a repeat (a hello that
        # names an older session, after /new, has the current one replayed from its start);
        # on a reconnect, raised to what it has seen there, except in the session its hello
        # names (see _had).
        self.printed: dict[str, int] = {}
        # The sessions a replay or catch-up is sending from their start that the chat had
        # seen nothing of: their rows from before it began are history (see _history), until
        # a row that is not.
        self.history: dict[str, None] = {}
        # The first welcome's server_time: when the chat began, on the server's clock, which
        # a replayed row's created_at is of (None from a gateway that does not say).
        self.began: float | None = None
        # id -> the server's answer to that message; and the ids whose turn ended. The
        # :data:`_IDS_KEPT` latest only (see _remember).
        self.accepted: dict[str, str] = {}
        # id -> message frame sent (or being sent) with no accepted nor refusal yet: sent again
        # after a reconnect (see _resend).
        self.unanswered: dict[str, dict[str, Any]] = {}
        # The message ids whose notice (a command's answer with no session) was printed, the
        # :data:`_IDS_KEPT` latest: a repeat is not printed again (see _noticed).
        self.noticed: dict[str, None] = {}
        self.finished: dict[str, None] = {}
        # The message ids of the turns running now, as this connection's welcome and
        # lifecycle frames tell (set anew on each connection: an end while away is never
        # heard, and a start while away only by the welcome's "running").
        self.running: dict[str, None] = {}
        # The message waited for, accepted on a connection before this one, whose turn this
        # connection's welcome does not list in its running: it ended while the chat was away
        # (its end never heard), or it waits to run (queued): asked about at once (see
        # _turn_ended), not waited for _SETTLE seconds.
        self.unlisted: str | None = None
        self.synced: dict[str, int] | None = None
        # question id -> its frame, oldest first: the questions open in the conversation
        # (an agent may ask two at once); the next line answers the oldest, as --local does.
        self.questions: dict[Any, dict[str, Any]] = {}
        # question id -> (the question frame, the answer or approval frame sent for it), until
        # its prompt_closed: a drop may cut it, and the gateway then asks again after the
        # reconnect (see _asked).
        self.answers: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        # The message whose answer is not in yet (piped mode waits for it before the next line,
        # and any mode at the end of input): kept across a reconnect, which must not end that
        # wait (the answer comes on the next connection).
        self.waiting: str | None = None
        # A question was open when a connection dropped, and no connection since has told
        # whether it still waits (see _asked_again); those questions (id -> frame): one not
        # asked again closed while the chat was away, and is said closed.
        self.recheck = False
        self.away: dict[Any, dict[str, Any]] = {}
        # The session a reconnect's hello named and the server refused as none of the
        # conversation's (its database replaced, or restored from an older copy): the next
        # hello names none, and the chat goes on in the session that welcome gives.
        self.unknown: str | None = None
        self.pace = Pace({})  # the connection's, from its welcome (see _connect)
        self.changed = trio.Event()

    def poke(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    async def wait_for(self, condition: Any) -> None:
        while not condition():
            await self.changed.wait()


class OutputFailed(Exception):
    """The chat's output cannot be written (``> /dev/full``, a reader that left): the chat ends
    (exit 1). Not an ``OSError``, so that it is never taken for a dropped connection; the
    ``OSError`` is its ``__cause__``."""


_PROMPT = "> "
"""What ``input()`` shows on a terminal while it waits for a line."""
_SHOWN = MAX_TEXT_BYTES
"""Characters shown of a delivery's text, a question or an approval's action and details, a
streamed chunk (``--chunks``): a message's cap, so none is cut (a reply acked as printed, a
request the person approves must be read whole, a chunk frame holds at most that much)."""


class _Printer:
    """Prints what the server sends. *redraw* (a terminal on stdin and stdout): a line that
    comes while ``input()`` shows its prompt clears that prompt, is printed, and puts the
    prompt and what was typed back (``redraw()`` gives them), as ``--local`` does; else a
    reply came after ``> ``, as if typed, and the prompt was gone until the next line."""

    def __init__(self, out: TextIO, show_chunks: bool,
                 redraw: Callable[[], str] | None = None) -> None:
        self.out = out
        self.show_chunks = show_chunks
        self.redraw = redraw

    def line(self, text: str) -> None:
        try:
            self.out.write(over_prompt(text, self.redraw))
            self.out.flush()
        except OSError as exc:
            raise OutputFailed(str(exc)) from exc

    def frame(self, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        if kind == "delivery":
            mark = {"progress": "... ", "notice": "* "}.get(str(frame.get("kind")), "")
            self.line(_marked(mark, sanitize_text(str(frame.get("text", "")), limit=_SHOWN)))
        elif kind == "notice":
            self.line(_marked("* ", sanitize_text(str(frame.get("text", "")), limit=_SHOWN)))
        elif kind == "lifecycle":
            self._lifecycle(frame)
        elif kind == "prompt":
            self.line(f"? {sanitize_line(str(frame.get('text', '')), limit=_SHOWN)}")
        elif kind == "approval_request":
            details = json.dumps(frame.get("details") or {}, ensure_ascii=False)
            self.line(f"? approve {sanitize_line(str(frame.get('action', '')), limit=_SHOWN)} "
                      f"{sanitize_line(details, limit=_SHOWN)} [y/N]")
        elif kind == "error":
            self.line(f"! {sanitize_line(str(frame.get('code')), limit=100)}: "
                      f"{sanitize_line(str(frame.get('message')), limit=500)}")

    def _lifecycle(self, frame: dict[str, Any]) -> None:
        event = frame.get("event")
        if event == "text_chunk" and self.show_chunks:
            # Whole, as the reply is (a frame joins a slow reader's chunks, up to 64 KiB)
            self.line(f"~ {sanitize_line(str(frame.get('chunk', '')), limit=_SHOWN)}")
        elif event == "tool_call":
            call = frame.get("tool_call")
            if not isinstance(call, dict):  # not the protocol's shape: said as it is
                call = {"name": call}
            self.line(f"(tool {sanitize_line(str(call.get('name')), limit=100)} "
                      f"{sanitize_line(json.dumps(call.get('arguments')), limit=500)})")
        elif event == "cancelled":
            self.line(f"(cancelled: {sanitize_line(str(frame.get('reason')), limit=200)})")
        elif event == "failed":
            self.line(f"(failed: {sanitize_line(str(frame.get('error')), limit=500)})")


def _marked(mark: str, text: str) -> str:
    """*text* after *mark* (``* ``, ``... ``), its later lines indented under its first, as
    ``--local`` prints them: at the margin, they read as lines of a reply of their own."""
    pad = "\n" + " " * len(mark)
    return mark + text.replace("\n", pad) if mark else text


async def _delivered(client: GatewayClient, state: _State, printer: _Printer,
                     frame: dict[str, Any]) -> None:
    """Print a delivery (a repeat, or history: see :func:`_history`, only acked) and ack it.
    A caught-up row (``catch_up``: written before this connection joined, ahead of a later
    row of its session) never makes its session current: a switch's answer among them is
    older than the welcome's session and every frame since."""
    session_id, seq = frame["session_id"], frame["seq"]
    caught_up = frame.get("catch_up") is True
    if _history(state, session_id, _before_began(state, frame)):
        state.printed[session_id] = max(state.printed.get(session_id, 0), seq)
    elif seq > state.printed.get(session_id, 0):
        printer.frame(frame)
        state.printed[session_id] = seq
        if not caught_up:
            _heard(state, session_id, frame.get("command"))
    state.seen[session_id] = max(state.seen.get(session_id, 0), seq)
    await client.ack(frame["delivery_id"])


def _history(state: _State, session_id: str, old: bool) -> bool:
    """Whether a delivery of *session_id* is history, not shown: an *old* row (see
    :func:`_before_began`) of a session the chat had seen nothing of until the gateway
    began to send it from its start, after a reconnect: ahead of its first row that reaches
    the connection live (a catch-up: a late reply in a session another device left before the
    chat began, a ``/resume`` of an older one), or in the replay (a session another device
    ``/resume``'d while the chat was away, history and news alike). A connection without
    ``after_seq``, as the chat's first, is never sent them. The first row that is not old ends
    it (see :attr:`_State.history`)."""
    if not old:
        state.history.pop(session_id, None)
        return False
    if session_id in state.history or session_id not in state.seen:
        _remember(state.history, session_id, None)
        return True
    return False


def _before_began(state: _State, frame: dict[str, Any]) -> bool:
    """Whether a delivery *frame* is of a row written before the chat began: its
    ``created_at`` (a replayed or caught-up row's) before the first welcome's
    ``server_time``, both the server's clock. A row written while the chat was away is not,
    the ``/resume`` answer that brought its session included. From a gateway that does not
    say both (older than those fields), a caught-up row (``catch_up``) is taken for one."""
    created_at, began = frame.get("created_at"), state.began
    if _time(created_at) and began is not None:
        return bool(created_at < began)
    return frame.get("catch_up") is True


def _time(value: Any) -> bool:
    """Whether *value* is a time on the wire: an int (not a bool: any size, compared exactly)
    or a finite float."""
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, int) and not isinstance(value, bool)


_SWITCHES = ("new", "resume")
"""The commands whose answer is written in the session they make current (a refused
``/resume``'s, in the current one)."""


def _follow(state: _State, session_id: str) -> None:
    """*session_id* is the conversation's current session now: the one the chat was in is
    left (see :attr:`_State.left`)."""
    current = state.session_id
    if session_id == current:
        return
    if current is not None:
        _remember(state.left, current, None)
    state.left.pop(session_id, None)
    state.session_id = session_id
    state.cleared = None


def _heard(state: _State, session_id: str, command: Any = None) -> None:
    """A frame of *session_id* (a delivery, answering *command*, or a lifecycle frame): the
    chat follows it only where the server says that session is current now. A switch's
    answer (``/new``, ``/resume``, from any device) is written in the session switched to;
    ``/clear``'s in the session it cleared, after which the next session a frame names (a
    message's, or a device's hello, started it) is current. Any other frame may be of a
    session the conversation left: a turn ``/new`` left running streams on there, the end of
    a turn ``/clear`` dropped may come after the next session's first frames, and a hello
    hands back an older session's rows. Taken for current, it made a piped line wait in the
    wrong session, and the reconnect's hello name it."""
    if command in _SWITCHES:
        _follow(state, session_id)
    elif command == "clear":
        if session_id not in state.left:  # (a late answer of a clear already followed)
            _follow(state, session_id)
            state.cleared = session_id
    elif state.cleared is not None and session_id != state.cleared \
            and session_id not in state.left:
        _follow(state, session_id)


def _question_id(frame: dict[str, Any]) -> Any:
    return frame.get("prompt_id") if frame.get("type") == "prompt" else frame.get("request_id")


async def _asked(client: GatewayClient, state: _State, printer: _Printer,
                 frame: dict[str, Any]) -> None:
    """A prompt or an approval request: printed, and the next line answers it; or, if it was
    answered already on a connection that dropped (the gateway asks every new connection what
    still waits, so the answer did not reach it), answered again with the same frame. Only
    the same question (the gateway sends its frame again as it was): another one that reuses
    the id (the question answered closed with the ``prompt_closed`` lost) is the person's."""
    kept = state.answers.pop(_question_id(frame), None)
    if kept is not None and kept[0] == frame:
        state.answers[_question_id(frame)] = kept
        await state.pace.take()
        await client.send(kept[1])
        return
    printer.frame(frame)
    state.questions[_question_id(frame)] = frame


async def _receive(client: GatewayClient, state: _State, printer: _Printer) -> None:
    while True:
        frame = await client.receive()
        kind = frame.get("type")
        if kind == "delivery":
            await _delivered(client, state, printer, frame)
        elif kind in ("prompt", "approval_request"):
            await _asked(client, state, printer, frame)
        elif kind == "notice":
            await _noticed(client, state, printer, frame)
        elif _refused_until_back(state, frame):  # not "send it again later": it will be
            printer.line("! shutting_down: the server is stopping; the line is sent again "
                         "once the chat has reconnected")
        else:
            printer.frame(frame)
        if kind == "lifecycle":
            message_id = str(frame.get("message_id"))
            if isinstance(frame.get("session_id"), str):
                _heard(state, frame["session_id"])
                _remember(state.turn_sessions, message_id, frame["session_id"])
            if frame.get("event") in ("completed", "cancelled", "failed"):
                _remember(state.finished, message_id, None)
                state.running.pop(message_id, None)
            elif message_id not in state.finished:  # started, or its chunks and tool calls
                state.running[message_id] = None
        elif kind == "accepted":
            # A resend the server already had (see _resend): its turn may have ended while
            # the client was away, a lifecycle frame that never comes again; or not yet
            # ("running": it runs, silent, or waits to), and its end is waited for.
            outcome = frame.get("outcome", "")
            if frame.get("duplicate"):
                outcome = ("running" if frame.get("running") is True
                           else "duplicate" if "running" in frame else _RUNNING_UNSAID)
            _remember(state.accepted, frame["id"], outcome)
            state.unanswered.pop(frame["id"], None)
        elif kind == "error" and isinstance(frame.get("ref"), str) \
                and not _refused_until_back(state, frame):
            # A refused message (bad_field...) gets no accepted: piped mode would wait for it
            # until _SETTLE gave up.
            if frame["ref"] not in state.accepted:
                _remember(state.accepted, frame["ref"], "refused")
            state.unanswered.pop(frame["ref"], None)
        elif kind == "synced":
            state.synced = {frame["session_id"]: frame["last_seq"]}
        elif kind == "prompt_closed":
            state.answers.pop(str(frame.get("id")), None)
            asked = state.questions.pop(frame.get("id"), None)
            if state.away.pop(frame.get("id"), None) is not None or asked is not None:
                # Still open here (not answered by this chat): say so, or the next line, the
                # person's answer, would go out as a message and steer the turn.
                printer.line(f"(question closed: "
                             f"{sanitize_line(str(frame.get('reason')), limit=100)})")
        state.poke()


async def _noticed(client: GatewayClient, state: _State, printer: _Printer,
                   frame: dict[str, Any]) -> None:
    """Print a ``notice`` (a command's answer with no session) and, if it answers a message
    this chat sent and has no ``accepted`` for yet (its ``message_id``), ack it: the gateway
    sends it again to a resend of that message until then. One whose message's answer was
    printed already is not printed again: its ack lost with a connection, the line was sent
    again at the reconnect (or another device's resend brought it). One that names no
    message (a gateway from before the notice ack) is printed, not acked."""
    message_id = frame.get("message_id")
    if not isinstance(message_id, str) or not message_id:
        printer.frame(frame)
        return
    if message_id not in state.noticed:
        printer.frame(frame)
        _remember(state.noticed, message_id, None)
    if message_id in state.unanswered:
        await client.ack_notices(message_id)


_RUNNING_UNSAID = "duplicate, running unsaid"
"""The outcome kept for a ``duplicate`` with no ``running`` (a gateway from before that field):
like ``duplicate`` for a resent line, but no answer to :func:`_still_running`."""


def _refused_until_back(state: _State, frame: dict[str, Any]) -> bool:
    """Whether *frame* refuses a message of this chat's that is still unanswered because the
    server is stopping (``shutting_down``: send it again later). The message is kept
    unanswered, so :func:`_resend` sends it again, with its id, once the chat has reconnected
    (the stop ends with the connection closed ``1001``), and piped mode waits for that answer:
    taken for a refusal, the line was lost across the server's restart."""
    ref = frame.get("ref")
    return (frame.get("type") == "error" and frame.get("code") == "shutting_down"
            and isinstance(ref, str) and ref in state.unanswered)


def _remember(kept: dict[str, Any], key: str, value: Any, limit: int | None = None) -> None:
    """Set *kept*[*key*], forgetting the oldest keys beyond *limit* (None: :data:`_IDS_KEPT`,
    for message ids; :data:`_ANSWERS_KEPT` for kept answers)."""
    kept[key] = value
    while len(kept) > (_IDS_KEPT if limit is None else limit):
        del kept[next(iter(kept))]


def _answer(question: dict[str, Any], line: str) -> dict[str, Any]:
    """The frame that answers *question* with *line*."""
    if question["type"] == "prompt":
        return {"type": "answer", "prompt_id": question["prompt_id"], "text": line}
    decision = "allow" if allows(line) else "deny"
    return {"type": "approval", "request_id": question["request_id"], "decision": decision}


def _declined(question: dict[str, Any]) -> dict[str, Any]:
    """The frame that gives *question* no answer: a prompt's ``text`` null (the agent gets
    None), an approval's ``deny``."""
    if question["type"] == "prompt":
        return {"type": "answer", "prompt_id": question["prompt_id"], "text": None}
    return {"type": "approval", "request_id": question["request_id"], "decision": "deny"}


async def _decline_open(client: GatewayClient, state: _State) -> int:
    """At the end of input: give every question still open no answer (see :func:`_declined`),
    kept as a typed answer is, so that a drop that cuts it gives it again when asked again.
    Returns how many were open."""
    open_now = list(state.questions.values())
    for question in open_now:
        await state.pace.take()
        if state.questions.pop(_question_id(question), None) is None:
            continue  # closed while paced: there is nothing to decline
        frame = _declined(question)
        _keep(state.answers, question, frame)
        await client.send(frame)
    return len(open_now)


async def _settle(client: GatewayClient, state: _State, message_id: str) -> bool | None:
    """Piped mode: wait until the line's turn or command answer has been delivered (True).
    False when the turn asks a question first (the next line answers it; settle again after);
    None when it gave up: no ``accepted``, or no deliveries, within :data:`_SETTLE` seconds,
    or a turn's end that may never come (see :func:`_turn_ended`)."""
    with trio.move_on_after(_SETTLE):
        await state.wait_for(lambda: message_id in state.accepted)
    if message_id not in state.accepted:
        return None
    # Where its answer is: a turn's reply in the session its turn ran in (one /new left
    # running goes on in the old one); a command's answer in the current one, which the
    # server knows best (also from a /clear to the next session: the one it cleared).
    session: str | None = None
    if state.accepted[message_id] in _TURN_OUTCOMES:
        ended = await _turn_ended(client, state, message_id)
        if not ended:
            return ended
        session = state.turn_sessions.get(message_id)
    with trio.move_on_after(_SETTLE):
        state.synced = None
        await state.pace.take()
        await client.sync(session)
        await state.wait_for(lambda: state.synced is not None)
        assert state.synced is not None
        [(session_id, last_seq)] = state.synced.items()
        floor = client.welcome["last_seq"] if session_id == client.session_id else 0
        await state.wait_for(lambda: max(state.seen.get(session_id, 0), floor) >= last_seq)
        return True
    return None


async def _turn_ended(client: GatewayClient, state: _State, message_id: str) -> bool | None:
    """Wait for the end of *message_id*'s turn (True) or a question (False), however long a
    turn runs: sent while one runs, the next line would steer (cancel) it. A turn's lifecycle
    frames carry the id of the newest message merged into it, which may be another's (another
    device's, in ``collect`` mode): so each time no turn runs any more, the gateway is asked
    whether this message's turn has ended (see :func:`_still_running`), instead of waiting
    for an end under its id that never comes; so too at once, after a reconnect, when the
    welcome does not list its turn as running (see :func:`_unlisted`). None when no turn
    was heard to run for :data:`_SETTLE` seconds (one that ended while the chat was away,
    from a gateway whose welcome has no ``running``), or no answer came."""
    def done() -> bool:
        return message_id in state.finished or bool(state.questions)

    ask = False
    if state.unlisted == message_id:  # (see _unlisted)
        state.unlisted = None
        ask = message_id not in state.running
    while not done():
        if ask:
            running = await _still_running(client, state, message_id)
            if running is None:
                return None
            if not running:  # ended while the chat was away, or under the id of another
                return True  # message merged into it
        with trio.move_on_after(_SETTLE) as idle:
            await state.wait_for(lambda: done() or bool(state.running))
        if idle.cancelled_caught:
            return None
        await state.wait_for(lambda: done() or not state.running)
        ask = True
    return message_id in state.finished


async def _still_running(client: GatewayClient, state: _State, message_id: str
                         ) -> bool | None:
    """Whether *message_id*'s turn has not ended yet, as the gateway says: its id sent again
    (a known id is answered ``accepted`` ``duplicate``, with ``running``, and never run
    twice), with no text (so that not even a server that forgot it runs anything: a blank
    message is ``ignored``). Kept unanswered until then, so that a drop asks again after the
    reconnect (see :func:`_resend`). A ``duplicate`` with no ``running`` (an older gateway)
    counts as not ended. None when no answer came within :data:`_SETTLE`."""
    frame = {"type": "message", "text": "", "id": message_id}
    state.accepted.pop(message_id, None)
    state.unanswered[message_id] = frame
    await state.pace.take()
    await client.send(frame)
    with trio.move_on_after(_SETTLE):
        await state.wait_for(lambda: message_id in state.accepted)
    if message_id not in state.accepted:
        return None
    # A gateway from before ``running`` does not say: not taken for an end (the next line
    # would steer a turn still to run), the wait goes on as for a running one.
    return state.accepted[message_id] in ("running", _RUNNING_UNSAID)


async def _settle_waiting(client: GatewayClient, state: _State) -> None:
    """Piped mode: :func:`_settle` the message being waited for; it is waited for no more
    once settled or given up on, but still when its turn asked a question first (the next
    line answers it, then the wait goes on)."""
    assert state.waiting is not None
    settled = await _settle(client, state, state.waiting)
    if settled is not False:
        state.waiting = None


def _keep(answers: dict[str, tuple[dict[str, Any], dict[str, Any]]], question: dict[str, Any],
          frame: dict[str, Any]) -> None:
    """Keep *frame*, the answer to *question*, forgetting the oldest beyond
    :data:`_ANSWERS_KEPT` (a question whose ``prompt_closed`` the drop took is never asked
    again: its answer would be kept for nothing)."""
    _remember(answers, _question_id(question), (question, frame), _ANSWERS_KEPT)


async def _pump(lines: AsyncGenerator[_Line, None], send: trio.MemorySendChannel[_Line]) -> None:
    """Read *lines* into *send* for as long as the chat lasts (reconnects included)."""
    try:
        async with contextlib.aclosing(lines):
            async for line in lines:
                await send.send(line)
    finally:
        send.close()


async def _resend(client: GatewayClient, state: _State) -> str | None:
    """After a reconnect: send again, in order and with their ids, the messages the last
    connection dropped before the server answered them. Returns the last one's id (piped mode
    waits for its answer), None when there was none."""
    last: str | None = None
    for message_id, frame in list(state.unanswered.items()):
        if message_id in state.unanswered:  # not answered meanwhile
            await state.pace.take()
            if message_id in state.unanswered:
                await client.send(frame)
                last = message_id
    return last


async def _asked_again(client: GatewayClient, state: _State) -> None:
    """After a reconnect with a question open: wait until the server has asked again what
    still waits, before a line is read. It queues those questions as the connection starts,
    so its answer to a ``sync`` comes after them. Else a line typed while away (the answer)
    was read before the question came again, and sent as a message, which steered (cancelled)
    the very turn that asked."""
    state.synced = None
    await state.pace.take()
    await client.sync()
    await state.wait_for(lambda: state.synced is not None)


async def _send(client: GatewayClient, state: _State, printer: _Printer,
                lines: trio.MemoryReceiveChannel[_Line], options: ChatOptions) -> None:
    if state.recheck:  # a question was open when a connection dropped
        await _asked_again(client, state)
        state.recheck = False  # (not before: a drop meanwhile leaves it to the next one)
        for question_id in state.away:
            if question_id not in state.questions:  # not asked again: it closed meanwhile
                printer.line("(question closed while reconnecting)")
        state.away.clear()
    state.waiting = await _resend(client, state) or state.waiting
    if state.waiting is not None and not options.interactive:
        await _settle_waiting(client, state)
    async for raw in lines:
        if isinstance(raw, LineTooLong):  # refused as it was read (a question stays open)
            printer.line(f"! not sent: {over_frame_limit(raw.limit)}; the rest of it is "
                         "skipped")
            continue
        line = raw.rstrip("\r\n")  # a CRLF line's \r too, as the terminal channel (--local)
        # A pipe that is not UTF-8 reads with surrogateescape: the server would refuse the
        # line (as an answer, with no ref to tell which frame).
        lone = lone_surrogate(line)
        if lone is not None:
            printer.line(f"! not sent: the line is not valid UTF-8 (at index {lone})")
            continue
        question = next(iter(state.questions.values()), None)  # the oldest open
        frame: dict[str, Any] | None = None
        if question is not None:
            frame = _answer(question, line)
        elif line.strip():
            frame = {"type": "message", "text": line, "id": client.new_id()}
        if frame is not None:
            refused = too_big(client, frame)
            if refused is not None:  # a question stays open: the next line answers it
                printer.line(f"! not sent: {refused}")
                continue
            if question is not None:
                state.questions.pop(_question_id(question), None)
                # kept until the question closes: a drop before then answers it again
                _keep(state.answers, question, frame)
            else:  # kept until answered: a drop before then sends it again (_resend)
                state.unanswered[frame["id"]] = frame
            await state.pace.take()
            await client.send(frame)
            if question is None:
                state.waiting = frame["id"]
        if state.waiting is not None and not options.interactive:
            await _settle_waiting(client, state)
    # The end of input: nobody is left to answer. What is open (or asked while the last turn
    # is waited for) gets "no answer", as --local declines, not left to wait out its timeout.
    await _decline_open(client, state)
    while state.waiting is not None:
        settled = await _settle(client, state, state.waiting)
        declined = await _decline_open(client, state)
        if settled is not False or not declined:  # (False: its turn asked, declined: wait on)
            state.waiting = None


async def chat_over_websocket(options: ChatOptions, lines: AsyncGenerator[_Line, None], *,
                              out: TextIO, err: TextIO | None,
                              line_limit: LineLimit | None = None) -> int:
    """Chat until *lines* end (0), or the server refuses or cannot be reached (1). Each
    welcome's frame limit is given to *line_limit*, the one *lines* reads with (see
    :func:`~tidings.supervisor._chat_input.input_lines`)."""
    send, receive = trio.open_memory_channel[_Line](0)
    with receive:  # (the send end is _pump's to close)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_pump, lines, send)
            code = await _connect(options, receive, out=out, err=err, line_limit=line_limit)
            nursery.cancel_scope.cancel(reason="chat ended")
    return code


async def _talk(client: GatewayClient, state: _State, printer: _Printer,
                lines: trio.MemoryReceiveChannel[_Line], options: ChatOptions) -> None:
    """Receive and send on one connection until the end of input. A dropped connection is
    raised as the bare :class:`GatewayClosed` (not in the nursery's group), so that
    :func:`_connect` sees it and reconnects; an :class:`OutputFailed`, even with a drop in the
    same group (a reconnect cannot bring stdout back), as the bare :class:`OutputFailed`."""
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_receive, client, state, printer)
            nursery.start_soon(_heartbeat, client, state)
            await _send(client, state, printer, lines, options)
            nursery.cancel_scope.cancel(reason="end of input")
    except BaseExceptionGroup as group:
        failed, rest = group.split(OutputFailed)
        if failed is not None and (rest is None or _only(rest, GatewayClosed)):
            raise _first(failed)  # noqa: B904 (its __cause__ is the OSError: kept)
        closed, rest = group.split(GatewayClosed)
        if closed is None or rest is not None:
            raise
        raise _first(closed) from None


async def _heartbeat(client: GatewayClient, state: _State) -> None:
    """Find a connection that died without a close (the server's host frozen, a network that
    dropped it without a word, a laptop that slept): nothing ever came on it, and the chat
    never noticed. The gateway pings a client it has not heard from for ``heartbeat_s``
    (from ``welcome``) and answers a ping at once; so a server not heard from for
    ``heartbeat_s`` is pinged, and one from which nothing came ``heartbeat_s`` after that
    ping raises :class:`GatewayClosed` ``1006``, a drop: the chat reconnects."""
    period = client.welcome.get("heartbeat_s")
    if not positive(period):
        period = attrs.fields(GatewayConfig).heartbeat_s.default
    while True:
        await trio.sleep_until(client.last_heard + period)
        if trio.current_time() < client.last_heard + period:
            continue  # heard from it meanwhile
        await state.pace.take()
        await client.send({"type": "ping"})
        pinged = trio.current_time()
        await trio.sleep_until(pinged + period)
        if client.last_heard < pinged:
            raise GatewayClosed(1006, f"nothing from the server for {2 * period:g} s, a ping "
                                      "unanswered (a connection that died without a close)")


async def _connect(options: ChatOptions, lines: trio.MemoryReceiveChannel[_Line], *,
                   out: TextIO, err: TextIO | None, line_limit: LineLimit | None) -> int:
    state = _State()
    printer = _Printer(out, options.show_chunks,
                       redraw=(lambda: input_line(_PROMPT)) if options.interactive
                       and is_a_terminal(out) else None)
    attempts = 0
    dropped = 0.0  # trio's clock when the last welcomed connection dropped
    welcome_timeout = WELCOME_TIMEOUT
    while True:
        hello: dict[str, Any] = {}
        if state.session_id is not None and state.session_id != state.unknown:
            hello = {"session_id": state.session_id,
                     "after_seq": state.seen.get(state.session_id, 0)}
        welcomed: float | None = None
        try:
            async with GatewayClient.connect(options.url, token=options.token,
                                             conversation=options.conversation,
                                             client="tidings-chat",
                                             welcome_timeout=welcome_timeout,
                                             **hello) as client:
                welcomed = trio.current_time()
                state.pace = Pace(client.welcome)
                if line_limit is not None:
                    line_limit.welcomed(client.welcome)
                # A question from before may have closed while we were away (answered on
                # another device, expired, the server restarted) with no prompt_closed for us:
                # the server sends again what still waits, so the next line answers only that
                # (once that is known: see _asked_again).
                if state.questions:
                    state.recheck = True
                    state.away.update(state.questions)
                state.questions.clear()
                state.running.clear()  # the turns running now (see _State)
                state.running.update(_running_in(client.welcome))
                state.unlisted = _unlisted(state, client.welcome)
                welcome = client.welcome
                if state.session_id is None:
                    state.seen[welcome["session_id"]] = _history_seq(welcome)
                    began = welcome.get("server_time")
                    state.began = began if _time(began) else None
                    say(err, f"tidings chat: {options.url}, conversation "
                              f"{options.conversation}; /help for commands; end of input "
                              "(Ctrl-D) quits.")
                else:
                    _had(state, hello.get("session_id"))
                if state.unknown is not None:  # (see _State.unknown) from its last_seq on
                    state.unknown = None
                    state.seen.setdefault(welcome["session_id"], _history_seq(welcome))
                # The current session: the hello may have named one the conversation left
                _follow(state, welcome["session_id"])  # while the chat was away
                _behind(state, client.welcome, err)
                await _talk(client, state, printer, lines, options)
                await client.aclose()
                return 0
        except GatewayClosed as exc:
            said = sanitize_line(str(exc), limit=500)  # the reason is the server's text
            # Refused (bad hello, token, protocol), not a gateway (1002: a frame that is not
            # the protocol's, which the same server sends again), or never welcomed at all (a
            # server failing on the hello): as for a server it cannot reach, no retry.
            if _session_unknown(exc, state):  # not the person's: the server's database changed
                state.unknown = state.session_id
                said += (" (its database replaced, or restored from an older copy?): going on "
                         "in the session it has")
            elif exc.code in (1002, 4000, 4001, 4002) or state.session_id is None:
                say(err, f"tidings chat: {said}")
                return 1
        except (OSError, HandshakeError) as exc:
            said = f"cannot connect to {options.url}: {_reason(exc)}"
            if state.session_id is None:
                say(err, f"tidings chat: {said}")
                return 1
        attempts = 0 if _stayed_up(welcomed) else attempts
        if welcomed is not None:
            dropped = trio.current_time()
        backoff = min(8.0, _BACKOFF * math.pow(2, attempts + 1))
        left = dropped + _RECONNECT_FOR - trio.current_time() - backoff
        if attempts >= _RECONNECTS:
            say(err, f"tidings chat: {said}; gave up after {_RECONNECTS} reconnects")
            return 1
        if left <= 0:
            say(err, f"tidings chat: {said}; gave up: not welcomed again within "
                      f"{_RECONNECT_FOR:g} s of the drop")
            return 1
        say(err, f"tidings chat: {said}; reconnecting")
        attempts += 1
        await trio.sleep(backoff)
        welcome_timeout = left
        say(err, f"tidings chat: reconnect {attempts} of {_RECONNECTS}: waiting up to "
                  f"{left:.3g} s for {options.url} to welcome it")


def _history_seq(welcome: dict[str, Any]) -> int:
    """Up to which seq the chat counts *welcome*'s session as had (its history, never shown):
    the welcome's ``history_seq``, below the first row still waiting for a client, which
    comes to the chat as news; ``last_seq`` from a gateway that does not say (older than that
    field), or says no seq within it. Not ``last_seq`` itself: the reconnect's hello, whose
    ``after_seq`` this is, has the server take every row up to it for had, and a waiting row
    the first connection lost before the chat read it was confirmed ``sent``, never shown."""
    last_seq = welcome["last_seq"]
    history_seq = welcome.get("history_seq")
    if isinstance(history_seq, int) and not isinstance(history_seq, bool) \
            and 0 <= history_seq <= last_seq:
        return history_seq
    return last_seq


def _running_in(welcome: dict[str, Any]) -> dict[str, None]:
    """The message ids of the turns *welcome* says run (``running``): their ``started`` went
    to the connection before, and a turn that stays silent would otherwise be heard of only
    by its end; waited for (see :func:`_turn_ended`), not for :data:`_SETTLE` seconds only.
    Empty from a server that does not say (older than this field)."""
    running = welcome.get("running")
    if not isinstance(running, list):
        return {}
    return {message_id: None for message_id in running if isinstance(message_id, str)}


def _unlisted(state: _State, welcome: dict[str, Any]) -> str | None:
    """The message waited for (:attr:`_State.waiting`) if *welcome* lists the running turns
    and not its own, though it was accepted into a turn on a connection before (not one sent
    again after this reconnect, whose answer says ``running``): its turn ended while the chat
    was away, its ``completed`` never heard, or it waits to run (``queued``). Either way the
    gateway is asked (see :func:`_turn_ended`): none otherwise would be heard to run, and the
    chat waited :data:`_SETTLE` seconds. None from a gateway whose welcome does not say."""
    waiting = state.waiting
    if waiting is None or not isinstance(welcome.get("running"), list) \
            or waiting in state.unanswered or waiting in state.finished \
            or waiting in state.running:
        return None
    return waiting if state.accepted.get(waiting) in _TURN_OUTCOMES else None


_TURN_OUTCOMES = ("started", "queued", "merged", "running")
"""The outcomes of a message answered by a turn whose end is waited for (see :func:`_settle`)."""


def _session_unknown(exc: GatewayClosed, state: _State) -> bool:
    """Whether *exc* refuses a reconnect's hello for the session it named (``4000``, the
    reason naming ``hello.session_id``, as the protocol's bad hello names its field): one the
    server does not know, not a flag of the person's, which the first hello had already passed.
    Once only: a hello naming no session that is refused too ends the chat."""
    return (exc.code == 4000 and state.session_id is not None and state.unknown is None
            and "hello.session_id" in str(exc.reason))


def _behind(state: _State, welcome: dict[str, Any], err: TextIO | None) -> None:
    """A *welcome* whose session's ``last_seq`` (the highest seq it has) is below what the
    chat has seen in it: the server's database went back (restored from an older copy, moved
    without its ``-wal`` after a crash) and assigns those seqs again. What the chat printed
    and saw there goes back to it, said on stderr: else every new delivery at or below the old
    mark was taken for a repeat, acked (``sent``) and never shown."""
    session_id, last_seq = welcome["session_id"], welcome["last_seq"]
    seen = state.seen.get(session_id, 0)
    if last_seq >= seen:
        return
    say(err, f"tidings chat: the server's session is at seq {last_seq}, behind the {seen} "
             "this chat has seen (its database restored from an older copy?): what it sends "
             "is shown from there")
    state.seen[session_id] = last_seq
    state.printed[session_id] = min(state.printed.get(session_id, 0), last_seq)


def _had(state: _State, named: str | None) -> None:
    """A reconnect whose hello named *named*: in every other session, the rows the chat has
    seen (up to the first welcome's ``history_seq``, in the session it began in: its
    history, never shown; see :func:`_history_seq`) count as printed. The gateway writes
    such a session's rows from its start: before the first of its rows that reaches the
    connection live (a late reply in the session the chat began in, left by ``/new``), or in
    the replay (one switched to while the chat was away): that history was printed, in the
    middle of the chat, as if new. Not in *named*: the hello's ``after_seq`` has the gateway
    send only what comes after, and a row at or below it that still waited in the outbox
    (``queued``, which the drop kept from it) comes through the session's queue: the person
    has not seen it."""
    for session_id, seq in state.seen.items():
        if session_id != named and state.printed.get(session_id, 0) < seq:
            state.printed[session_id] = seq


def _stayed_up(welcomed: float | None) -> bool:
    """Whether a connection welcomed at *welcomed* (trio's clock) worked long enough that its
    drop starts a fresh count of reconnects (see :data:`_STABLE`)."""
    return welcomed is not None and trio.current_time() - welcomed >= _STABLE


def _reason(exc: BaseException) -> str:
    """What went wrong, for the operator, on one line: trio-websocket's ``HandshakeError`` has
    no text of its own, its cause (``all attempts to connect ... failed``) says it; its
    ``ConnectionRejected`` holds the whole HTTP answer (a web page, say: any size, any bytes),
    of which only the status is said."""
    if isinstance(exc, ConnectionRejected):
        return (f"the server answered HTTP {exc.status_code}, not a websocket handshake (not a "
                "tidings gateway?)")
    for _ in range(10):
        if str(exc) or exc.__cause__ is None:
            break
        exc = exc.__cause__
    text = sanitize_line(str(exc), limit=500)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def check_url(url: str) -> str:
    """*url* if it is a ``ws://`` or ``wss://`` URL with a host (one a name lookup takes: no
    empty label, none over 63 characters) and a valid port. Raises :class:`ConfigError` naming
    ``--url``."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ConfigError("--url", f"{exc}, got {url!r}") from None
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise ConfigError("--url", f"must look like ws://HOST:PORT (or wss://), got {url!r}")
    if port == 0:
        raise ConfigError("--url", f"port 0 is not a port to connect to, got {url!r}")
    try:  # as the name lookup encodes it: else a UnicodeError there, out of the chat
        parts.hostname.encode("idna")
    except UnicodeError as exc:
        reason = exc.__cause__ or exc
        raise ConfigError("--url", f"the host is no host name ({reason}), got {url!r}") from None
    return url


def default_token_file() -> pathlib.Path:
    """Where ``tidings serve`` keeps the token of ``./tidings.db``."""
    return pathlib.Path("tidings.db.token").absolute()


DEFAULT_URL = "ws://127.0.0.1:8765"


def add_arguments(parser: Any) -> None:
    """The ``tidings chat`` flags of the websocket client (``--url`` is the mode's own)."""
    parser.add_argument("--token", metavar="TOKEN", help="the server's token (default: read "
                        "--token-file)")
    parser.add_argument("--token-file", type=path_argument, metavar="FILE",
                        help="where the server keeps its token (default: ./tidings.db.token)")
    parser.add_argument("--web", action="store_true",
                        help="print the path of a minimal browser client and exit")


def web_page() -> pathlib.Path:
    """The minimal browser client shipped in ``docs/``."""
    return pathlib.Path(__file__).resolve().parent.parent / "docs" / "chat.html"


def run(args: Any) -> int:
    """``tidings chat`` without ``--local``: the websocket client. Returns the exit code.
    Ctrl-C cancels it (130) when called in the main thread with SIGINT's default handler, and
    SIGTERM (143) and SIGHUP (129) when they have their default action (SIGHUP ignored, as
    under ``nohup``, is left so); from another thread (only the main one may listen for
    signals) it runs without listening (see :func:`ending_signals`)."""
    if args.web:
        page = web_page()
        if not page.exists():
            say(sys.stderr, f"tidings chat: {page} is missing")
            return 1
        try:
            print(page)
            sys.stdout.flush()  # a full disk shows at the flush: here, not at the exit
        except BrokenPipeError:  # `| head`: the reader left; the caller says nothing
            raise
        except OSError as exc:  # `> /dev/full`, `>&-`: one line, as the chats, no traceback
            return stdout_lost("tidings chat", exc)
        return 0
    try:
        # `is None`: an empty --url is refused by name, not taken for the default
        url = check_url(DEFAULT_URL if args.url is None else args.url)
    except ConfigError as exc:
        say(sys.stderr, f"tidings chat: {exc}")
        return 2
    token = args.token
    refused = _hello_refused(token, args.conversation)
    if refused is not None:
        say(sys.stderr, f"tidings chat: {refused}")
        return 2
    if token is None:
        try:
            path = file_path("--token-file", args.token_file or default_token_file())
            token = read_token_file(path, field="--token-file")
        except ConfigError as exc:
            say(sys.stderr, f"tidings chat: {exc}; give --token, or --token-file (tidings serve "
                 "keeps it in <database>.token)")
            return 2
    options = ChatOptions(url=url, token=token,
                          conversation=args.conversation, interactive=stdin_is_a_terminal(),
                          show_chunks=args.chunks)
    try:
        return trio.run(_until_interrupted, options, ending_signals(*ENDING))
    except KeyboardInterrupt:  # Ctrl-C before or after _until_interrupted listens
        return 130
    except BaseExceptionGroup as group:
        # Ctrl-C, or a stdout that failed, raised in a task of a nursery: perhaps together
        # with what a connection that dropped in the same moment raised (never a traceback).
        interrupted, rest = group.split(KeyboardInterrupt)
        if interrupted is not None and (rest is None or _only(rest, *_ALONGSIDE)):
            return 130
        failed, rest = group.split(OutputFailed)
        if failed is None or not (rest is None or _only(rest, *_ALONGSIDE)):
            raise
        failure = _first(failed)
        # `tidings chat | head`: the reader left, nothing to say. Else (`> /dev/full`) why.
        return stdout_lost("tidings chat", failure,
                           said=not isinstance(failure.__cause__, BrokenPipeError))


def _hello_refused(token: str | None, conversation: str) -> str | None:
    """Why no gateway would take *token* (None: read from its file later, checked there) or
    *conversation* in a hello, naming ``--token`` or ``--conversation``; None when it
    would. The gateway's own rules (:func:`~tidings.supervisor._token.is_token`, its hello
    parser): refused before connecting, as bad usage, not as a server's refusal."""
    if token is not None and not is_token(token):
        return (f"--token: not a token (at least {MIN_TOKEN_LENGTH} printable characters, no "
                "spaces)")
    hello = {"type": "hello", "token": "", "conversation": conversation,
             "protocol": PROTOCOL_VERSION}
    try:
        parse_client_frame(encode(hello), max_frame_bytes=MAX_SERVER_FRAME_BYTES)
    except FrameError as exc:
        return f"--conversation: {exc.reason.partition(': ')[2] or exc.reason}"
    return None


async def _until_interrupted(options: ChatOptions, signals: Mapping[int, int]) -> int:
    """The chat on stdin and stdout; a signal of *signals* (see :func:`ending_signals`: Ctrl-C,
    SIGTERM, SIGHUP) cancels it, exit 130, 143 or 129. As a cancel, not as trio's
    ``KeyboardInterrupt`` thrown into whatever code runs: trio-websocket's connect captures one
    that lands while it waits for the websocket handshake, then waits on for its reader task,
    and the chat went on as if Ctrl-C had not been pressed."""
    line_limit = LineLimit()
    lines = input_lines(_PROMPT, max_line_bytes=line_limit.wait)
    if options.interactive:
        lines = _once_welcomed(lines, line_limit)
    chat = functools.partial(chat_over_websocket, options, lines, out=sys.stdout,
                             err=sys.stderr, line_limit=line_limit)
    code = 0

    async def talk() -> None:
        nonlocal code
        code = await chat()

    signalled = await until_signalled(talk, signals)
    return code if signalled is None else signalled


async def until_signalled(body: Callable[[], Awaitable[object]],
                          signals: Mapping[int, int]) -> int | None:
    """Run *body* until it returns (None), or until a signal of *signals* comes: it is then
    cancelled (its reads of stdin abandoned, a terminal's modes put back, the connection or
    the runtime closed on the way out) and the signal's exit code returned."""
    if not signals:
        await body()
        return None
    signalled: int | None = None
    finished = False
    with trio.open_signal_receiver(*signals) as received:
        async with trio.open_nursery() as nursery:
            async def run_body() -> None:
                nonlocal finished
                await body()
                finished = True  # a signal taken after this came too late to end it
                nursery.cancel_scope.cancel(reason="ended")

            nursery.start_soon(run_body)
            async for signum in received:
                signalled = None if finished else signals[signum]
                nursery.cancel_scope.cancel(reason=signal.Signals(signum).name)
    return signalled


async def _once_welcomed(lines: AsyncGenerator[_Line, None], line_limit: LineLimit
                         ) -> AsyncGenerator[_Line, None]:
    """*lines*, read from the first welcome on: on a terminal the first read prints the
    ``> `` prompt, which came before the banner while connecting (``> tidings chat: ...``), or
    after ``cannot connect`` as the chat exited. What is typed meanwhile waits in the
    terminal."""
    await line_limit.wait()
    async with contextlib.aclosing(lines):
        async for line in lines:
            yield line


_ALONGSIDE = (GatewayClosed, OutputFailed, OSError, HandshakeError)
"""What may end a chat together with Ctrl-C or a failed stdout and still mean just that: the
connection's failures, and the output's."""


def _only(group: BaseExceptionGroup, *kinds: type[BaseException]) -> bool:
    """Whether every exception in *group* is one of *kinds*."""
    matched, rest = group.split(kinds)
    return matched is not None and rest is None


def _first(group: BaseException) -> BaseException:
    """The first leaf exception of *group* (itself if it is no group)."""
    while isinstance(group, BaseExceptionGroup):
        group = group.exceptions[0]
    return group
