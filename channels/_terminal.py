"""A channel on a terminal: lines in, deliveries, progress and lifecycle events out.

:class:`TerminalChannel` is a complete adapter over :class:`ChannelBase`, for trying tidings
with no network (``tidings chat --local``). Every line read is one inbound message (commands
included) in one conversation; deliveries come back through the runtime's outbox like any
other channel's. While an agent waits for an answer (``prompt_user`` / ``request_approval``)
the next line answers it. Output is sanitized (no control or bidi characters reach the
terminal) and works the same when stdin and stdout are pipes.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import json
import os
import sys
import threading
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Any, TextIO

import trio

from tidings.actors import MAX_TEXT_BYTES, ApprovalRequest, Outbound, Prompt
from tidings.actors._blocks import lone_surrogate, plain_json
from tidings.actors._conversations import MAX_CONVERSATION_KEY_CHARS
from tidings.actors._pipeline import new_id
from tidings.actors._policy import check_flag
from tidings.channels._agents import Agent
from tidings.channels._base import ChannelBase, key_refusal
from tidings.channels._config import ChannelConfig
from tidings.channels._inbound import Inbound, inbound_conversation_key
from tidings.channels._lifecycle import TaskLifecycleEvent
from tidings.channels._lines import (
    LineTooLong,
    message_cap,
    read_in_thread,
    split_lines,
    write_only,
)
from tidings.channels._sanitize import sanitize_line, sanitize_text
from tidings.errors import ValidationError
from tidings.store._ids import check_id

__all__ = ["DELIVERY_WAIT", "LineTooLong", "TerminalChannel", "allows", "input_line",
           "is_a_terminal", "over_prompt", "readline_reads", "stdin_is_a_terminal",
           "stdin_lines"]

DELIVERY_WAIT = 30.0
"""Seconds :meth:`TerminalChannel.chat` waits at the end for deliveries still on their way."""
_TEXT_LIMIT = MAX_TEXT_BYTES
"""Characters :meth:`TerminalChannel._print` shows of one text: a message's cap (its UTF-8
bytes, so never fewer characters), so a reply is printed whole, never cut with an ellipsis
while its delivery is ``sent``."""
_OPEN = ("queued", "sending")
_RECHECK = 0.05
_prompting = threading.Event()
"""Set while :func:`stdin_lines`' ``input()`` shows its prompt on the terminal and waits for a
line: only then has :func:`input_line` a prompt to put back."""
_prompting_lock = threading.Lock()
"""Orders the set of :data:`_prompting` (readline's pre-input hook, in the reading thread)
against its clear when that read is abandoned (in the loop's thread): see :func:`_shown`."""


class TerminalChannel(ChannelBase):
    """One terminal conversation (``chat_id``) of a channel, printed to ``out``.

    ``show_chunks`` also prints ``text_chunk`` events (the reply is printed once it is
    delivered either way). ``redraw`` (for a terminal being typed into) returns the input line
    to put back after each print: the prompt and what was typed so far. ``output_error``: the
    ``OSError`` of the first print that failed (``> /dev/full``, a reader that left), which
    ended :meth:`chat`; None while the output works.

    Its own options are checked here, not at the first line or print: ``out`` must have
    callable ``write`` and ``flush`` (or be None: stdout), ``chat_id`` and ``sender_id`` must
    be what :class:`Inbound` takes (text or a number, not empty, valid Unicode) and make a
    conversation key within ``MAX_CONVERSATION_KEY_CHARS``,
    ``show_chunks`` a real bool and ``redraw`` None or callable; else a
    ``ValidationError`` (``NotABoolError`` for ``show_chunks``) naming the option.
    """

    stopped_name = "the chat"
    """The "not answered" notice says the chat stopped: it runs in the user's own process
    (``tidings chat --local``), with no server that could have."""

    def __init__(self, runtime: Any, config: ChannelConfig, agent: Agent | None = None, *,
                 out: TextIO | None = None, chat_id: str = "default", sender_id: str = "you",
                 show_chunks: bool = False,
                 redraw: Callable[[], str] | None = None) -> None:
        _check_out(out)
        # Every line read becomes an Inbound of these two ids: one it would refuse is refused
        # now, by the same rules, not as the first line is sent (which ended the chat).
        ids = Inbound(chat_id=chat_id, sender_id=sender_id, text="")
        check_flag("show_chunks", show_chunks)
        if redraw is not None and not callable(redraw):
            raise ValidationError("redraw", f"must be None or a function returning the input "
                                            f"line, got {type(redraw).__name__} {redraw!r:.40}")
        # ... and so is one whose conversation key (the same for every line) is over its cap;
        # before the base class claims the name (refused after, it held the name while it
        # lived). A config that is no ChannelConfig is for the base class to name.
        if isinstance(config, ChannelConfig):
            try:
                check_id("conversation_key", inbound_conversation_key(config, ids),
                         max_chars=MAX_CONVERSATION_KEY_CHARS)
            except ValidationError as exc:
                raise key_refusal(config, ids, exc) from exc
        super().__init__(runtime, config, agent)
        self.out = out if out is not None else sys.stdout
        self.chat_id = ids.chat_id
        self.sender_id = ids.sender_id
        self.show_chunks = show_chunks
        self.redraw = redraw
        self._questions: collections.deque[tuple[trio.Event, list[str | None]]] = (
            collections.deque())
        self._asked = trio.Event()
        self._input_ended = False
        self.output_error: OSError | None = None
        self._chat_scope: trio.CancelScope | None = None
        # Piped (one_at_a_time): the turns' ends, printed once their replies are (see
        # _release_ends); None while ends are printed as they come.
        self._ends: list[str] | None = None

    # --- output --------------------------------------------------------------------------------

    def _print(self, prefix: str, text: str) -> None:
        """Print *text* after *prefix*. A write that fails is kept in :attr:`output_error` and
        ends :meth:`chat`; nothing is written after it (a lifecycle event or a question is
        then lost, a delivery fails)."""
        if self.output_error is not None:
            return
        clean = sanitize_text(text, limit=_TEXT_LIMIT)
        pad = " " * len(prefix)
        lines = clean.split("\n") or [""]
        body = "\n".join([prefix + lines[0], *(pad + line for line in lines[1:])])
        try:
            self.out.write(over_prompt(body, self.redraw))
            self.out.flush()
        except OSError as exc:
            self.output_error = exc
            if self._chat_scope is not None:
                self._chat_scope.cancel(reason="the output cannot be written")

    async def deliver(self, outbound: Outbound) -> None:
        """Print a delivery: a message as ``<display name>> text``, progress as ``... text``,
        a notice (command answers included) as ``* text``. Raises ``OSError`` (the delivery
        fails) when the output cannot be written."""
        await trio.lowlevel.checkpoint()
        if outbound.kind == "message":
            self._print(f"{self.identity.display_name}> ", outbound.text)
        elif outbound.kind == "progress":
            self._print("... ", outbound.text)
        else:
            self._print("* ", outbound.text)
        if self.output_error is not None:
            raise OSError(self.output_error.errno,
                          f"not printed: {self.output_error.strerror or self.output_error}")

    def on_task_lifecycle(self, event: TaskLifecycleEvent) -> None:
        """Print lifecycle events in brackets (``text_chunk`` only with ``show_chunks``). Piped,
        a turn's end (``completed``, ``cancelled``, ``failed``) waits for the turn's replies,
        which come through the outbox: else the two came in either order."""
        if event.type == "text_chunk":
            if self.show_chunks:
                # Its own characters (_print sanitizes), not "\u65e5" for every one not ASCII
                chunk = json.dumps(event.chunk, ensure_ascii=False)  # type: ignore[attr-defined]
                self._print("  ", f"[chunk {chunk}]")
            return
        detail = ""
        if event.type == "tool_call":
            call = event.tool_call  # type: ignore[attr-defined]
            arguments = json.dumps(plain_json(call.arguments), sort_keys=True, default=str)
            detail = f" {sanitize_line(call.name, limit=100)} {arguments}"
        # One line each, as tidings chat --url says them: an error's later lines, at the
        # margin, read as lines of their own (a reply, a notice).
        elif event.type == "cancelled":
            detail = f": {sanitize_line(str(event.reason), limit=200)}"  # type: ignore[attr-defined]
        elif event.type == "failed":
            detail = f": {sanitize_line(str(event.error), limit=500)}"  # type: ignore[attr-defined]
        if self._ends is not None and event.type in ("completed", "cancelled", "failed"):
            self._ends.append(f"[{event.type}{detail}]")
            return
        self._print("  ", f"[{event.type}{detail}]")

    def _release_ends(self) -> None:
        """Print the turns' ends held back: every turn has ended and its deliveries are in."""
        if self._ends:
            ends = self._ends[:]
            self._ends.clear()
            for end in ends:
                self._print("  ", end)

    # --- questions from the agent ---------------------------------------------------------------

    async def prompt_user(self, prompt: Prompt) -> str | None:
        """Print the question; the next line typed is the answer."""
        self._print("? ", prompt.text)
        return await self._ask()

    async def request_approval(self, request: ApprovalRequest) -> str:
        """Print the request; a next line that :func:`allows` allows it, anything else
        denies."""
        details = json.dumps(plain_json(request.details), sort_keys=True, default=str)
        self._print("? ", f"approve {request.action} {details}? [y/N]")
        answer = await self._ask()
        return "allow" if allows(answer) else "deny"

    async def _ask(self) -> str | None:
        if self._input_ended:  # nobody is left to answer
            await trio.lowlevel.checkpoint()
            return None
        answered: trio.Event = trio.Event()
        slot: list[str | None] = []
        question = (answered, slot)
        self._questions.append(question)
        self._asked.set()
        self._asked = trio.Event()
        try:
            await answered.wait()
        finally:  # expired or cancelled unanswered: the next line is a message again
            if not answered.is_set() and question in self._questions:
                self._questions.remove(question)
                # Said, or the person, still looking at the question, types its answer and it
                # goes out as a message (which steers the turn), as tidings chat --url says.
                self._print("", "(question closed)")
        return slot[0] if slot else None

    def _answer(self, text: str | None) -> bool:
        """Give *text* to the oldest question still waiting; False when none is (the line
        is then a message). A question whose asker no longer waits (its turn was cancelled,
        or it expired, and the asker has not run since: the same scheduler tick) is dropped
        here, not given the line, which would then be lost."""
        while self._questions:
            answered, slot = self._questions.popleft()
            if answered.statistics().tasks_waiting:
                slot.append(text)
                answered.set()
                return True
        return False

    # --- the loop ------------------------------------------------------------------------------

    async def chat(self, lines: AsyncIterable[str | LineTooLong], *,
                   one_at_a_time: bool = False) -> None:
        """Send every line as a message (or as the answer to a waiting question; a line that
        is not valid UTF-8, or one :func:`stdin_lines` found too long or over
        ``MAX_TEXT_BYTES`` however read, typed ones too, is refused with ``! not sent: ...``
        and a question stays open); at the end of input, decline
        what is (or will be) asked, wait for running turns and (up to :data:`DELIVERY_WAIT`
        seconds) for their deliveries, then return.

        With ``one_at_a_time`` (for piped input) the next line is read only once the last
        one's turn has ended and its deliveries arrived, or when the agent asks something:
        the transcript is then deterministic (a turn's end, ``[completed]``, is printed after
        its replies), and no message steers the one before it.

        A print that fails (:attr:`output_error`) ends it at once: nobody would see the rest.
        It may be called again with other lines (a script, then a terminal): what is asked
        between two calls is declined, as at the end of input; during one, its lines answer.
        """
        self._chat_scope = trio.CancelScope()
        if self.output_error is not None:
            self._chat_scope.cancel(reason="the output cannot be written")
        self._ends = [] if one_at_a_time else None
        # Lines are read again: a question is answered by the next one (the end of an earlier
        # chat's input had questions declined at once, for good).
        self._input_ended = False
        try:
            with self._chat_scope:
                await self._chat(lines, one_at_a_time)
        finally:
            self._chat_scope = None
            # Ended early (Ctrl-C, SIGTERM, the runtime's stop) with a turn's end held back
            # for its replies: said now, as what comes next is (no write waits here).
            self._release_ends()
            self._ends = None

    async def _chat(self, lines: AsyncIterable[str | LineTooLong], one_at_a_time: bool) -> None:
        async for line in lines:
            if not isinstance(line, LineTooLong) and _over_a_message(line):
                # typed: input() read it whole, uncapped (nothing of it is left to skip)
                line = LineTooLong(MAX_TEXT_BYTES, skipped=False)
            if isinstance(line, LineTooLong):
                name = " (MAX_TEXT_BYTES)" if line.limit == MAX_TEXT_BYTES else ""
                rest = "; the rest of it is skipped" if line.skipped else ""
                self._print("! ", f"not sent: the line is over {line.limit} bytes{name}{rest}")
                continue
            text = line.rstrip("\r\n")
            lone = lone_surrogate(text)  # a pipe that is not UTF-8: refused, not fatal
            if lone is not None:
                self._print("! ", f"not sent: the line is not valid UTF-8 (at index {lone})")
                continue
            if not self._answer(text):
                # Unique across runs, not numbered from 1 in each: the conversation outlives
                # the run, and a channel with dedupe_message_ids would take every line of
                # the next run for the line of that number (a duplicate: nothing done).
                await self.handle_inbound(Inbound(chat_id=self.chat_id,
                                                  sender_id=self.sender_id, text=text,
                                                  message_id=new_id("line")))
            if one_at_a_time:
                await self._settle()
        self._input_ended = True
        while self._answer(None):
            pass
        await self.wait_idle()
        with trio.move_on_after(DELIVERY_WAIT):
            await self.wait_delivered()
        self._release_ends()

    async def _settle(self) -> None:
        """Wait until the agent asks something, or until every turn ended and its
        deliveries arrived."""
        async def until_idle(scope: trio.CancelScope) -> None:
            await self.wait_idle()
            with trio.move_on_after(DELIVERY_WAIT):
                await self.wait_delivered()
            self._release_ends()
            scope.cancel()

        async def until_asked(scope: trio.CancelScope) -> None:
            while not self._questions:
                await self._asked.wait()
            scope.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(until_idle, nursery.cancel_scope)
            nursery.start_soon(until_asked, nursery.cancel_scope)

    async def wait_delivered(self) -> None:
        """Block until no delivery of this channel's sessions is queued or being sent. Each
        look counts the session's rows by status (one snapshot), not reading every row of a
        history that a conversation continued run after run makes long."""
        feed = self.runtime.events()
        while True:
            open_rows = 0
            for session_id in self.directory.sessions():
                counts = await self.runtime.status_counts(session_id=session_id)
                open_rows += sum(counts[status] for status in _OPEN)
            if not open_rows:
                return
            with trio.move_on_after(_RECHECK):
                await feed.__anext__()


async def stdin_lines(prompt: str = "> ", *,
                      max_line_bytes: Callable[[], Awaitable[int]] | None = None,
                      ) -> AsyncIterator[str | LineTooLong]:
    """Lines from stdin until end of input, read in a worker thread.

    On a terminal, with line editing and history (``readline``) and *prompt*; on a pipe, no
    prompt is printed, nor on a terminal readline does not read (:func:`readline_reads`:
    stdout elsewhere, ``host > transcript.txt``), which is read as a pipe is: ``input()``
    wrote its prompt into that transcript, through the buffered reader below. Cancelling
    abandons the blocked read: a terminal's modes are put back as they were (readline's would
    outlive the exit). A file or a pipe is read by
    ``os.read`` of its descriptor (:func:`~tidings.channels._lines.read_in_thread`), not
    ``sys.stdin``'s buffered reader: a thread abandoned in that reader held its lock, and
    CPython aborted at exit (``_enter_buffered_busy``); ``tidings chat`` reads a pipe with
    :func:`~tidings.supervisor._chat_input.input_lines` (trio waits on it, no thread), which
    hands a terminal and a file here. Bytes that do not decode come as lone surrogates
    (``surrogateescape``) whatever the locale's error handler, for the chat to refuse that
    line: a strict decoder would raise, and lose the lines read with it. A closed stdin
    (``<&-``: ``sys.stdin`` is None) has no lines, as ``/dev/null``; so does one open for
    writing only (``nohup`` typed into). What ``sys.stdin``'s buffered reader had read
    already (a host that read it first) is not seen.

    Not on a terminal (a file, a pipe: ``tidings chat --local < big.bin``), a line of more than
    *max_line_bytes* (awaited once for each line; None: :data:`MAX_TEXT_BYTES`, a message
    text's cap) is yielded as :class:`LineTooLong` once that many of its bytes are read, and
    the rest of it is skipped up to its newline: at most the limit is held, not the line (see
    :func:`~tidings.channels._lines.split_lines`, which ``tidings chat`` splits a pipe with).
    A terminal's lines are read whole by ``input()``: :meth:`TerminalChannel.chat` refuses
    one over :data:`MAX_TEXT_BYTES` as it would this reader's :class:`LineTooLong`.
    """
    if sys.stdin is None:
        return
    fd = _stdin_fd()
    # A terminal input() reads without readline (stdout elsewhere) is read as a pipe.
    if not stdin_is_a_terminal() or (fd is not None and not readline_reads(fd)):
        if fd is None:  # a stand-in (a test's io.StringIO): its own readline, whole
            while line := await trio.to_thread.run_sync(sys.stdin.readline,
                                                        abandon_on_cancel=True):
                yield line
        elif not write_only(fd):
            split = split_lines(functools.partial(read_in_thread, fd),
                                sys.stdin.encoding or "utf-8", max_line_bytes or message_cap)
            async with contextlib.aclosing(split):  # closed with this one, not left to gc
                async for line in split:
                    yield line
        return
    set_hook: Callable[[Callable[[], None]], None] | None = None
    restore_modes = _terminal_modes()
    try:
        import readline  # importing it gives input() line editing
    except ImportError:
        pass
    else:  # its hook is called once the prompt is printed
        set_hook = getattr(readline, "set_pre_input_hook", None)
    while True:
        try:
            abandoned = threading.Event()
            try:
                line = await trio.to_thread.run_sync(_input, prompt, set_hook, abandoned,
                                                     abandon_on_cancel=True)
            except BaseException:  # abandoned (Ctrl-C, the chat's end) in readline; after
                restore_modes()  # an EOFError readline put them back already: the same
                # Its prompt is no longer waited at (the input() left blocked never
                # clears it): the lines the runtime's stop prints must not put it back.
                _abandon(abandoned)
                raise
        except EOFError:
            return
        except UnicodeDecodeError as exc:  # a terminal's strict decoder: that line only
            line = exc.object.decode(exc.encoding, "surrogateescape")
        yield line


def readline_reads(fd: int) -> bool:
    """Whether ``input()`` reads the terminal *fd* with readline: only when it is fd 0 and
    stdout is fd 1, a terminal too. Else (``tidings chat > transcript.txt`` typed into) it
    prints its prompt to stdout and reads ``sys.stdin``'s buffered reader, as a pipe would
    be read: the lock a cancelled read keeps would abort the exit. :func:`stdin_lines` reads
    such a terminal as a pipe, and so does ``tidings chat``, by trio."""
    try:
        out = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # no stdout (closed), or a stand-in
        return False
    return fd == 0 and out == 1 and os.isatty(out)


def _stdin_fd() -> int | None:
    """stdin's descriptor; None for a stand-in that has none (a test's ``io.StringIO``)."""
    if getattr(sys.stdin, "buffer", None) is None:
        return None
    try:
        return sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def _terminal_modes() -> Callable[[], None]:
    """A function that puts stdin's terminal modes back as they are now: an ``input()`` left
    in readline (a read abandoned) keeps readline's (no echo, no canonical mode) after the exit,
    for whatever reads the terminal next. One that does nothing without ``termios``."""
    try:
        import termios
    except ImportError:
        return lambda: None
    try:
        fd = sys.stdin.fileno()
        modes = termios.tcgetattr(fd)
    except (termios.error, AttributeError, OSError, ValueError):
        return lambda: None

    def restore() -> None:
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(fd, termios.TCSANOW, modes)

    return restore


def _input(prompt: str, set_hook: Callable[[Callable[[], None]], None] | None,
           abandoned: threading.Event) -> str:
    """``input(prompt)``, with :data:`_prompting` set while its prompt is shown: from
    readline's pre-input hook when there is one (*set_hook* sets it: the prompt is then
    printed), else from the start; never once the read is *abandoned* (:func:`_abandon`)."""
    if set_hook is not None:
        set_hook(lambda: _shown(abandoned))
    else:
        _shown(abandoned)
    try:
        return input(prompt)
    finally:
        _prompting.clear()


def _shown(abandoned: threading.Event) -> None:
    """The prompt of a read is shown: set :data:`_prompting`, unless the read was abandoned
    meanwhile. A Ctrl-C right as the prompt was printed abandons the read before readline
    calls its hook; set then, after the clear, it had every line the runtime's stop printed
    put the prompt back ('you> ' after '[cancelled: shutdown]', the chat's last line)."""
    with _prompting_lock:
        if not abandoned.is_set():
            _prompting.set()


def _abandon(abandoned: threading.Event) -> None:
    """The read is abandoned (its ``input()`` left blocked in its thread): no prompt waits
    for a line any more, and its hook, should it still run, sets none (see :func:`_shown`)."""
    with _prompting_lock:
        abandoned.set()
        _prompting.clear()


def _check_out(out: object) -> None:
    """A ``ValidationError`` naming ``out`` unless it is None or has callable ``write`` and
    ``flush`` (every print calls both: anything else failed at the first print, naming
    nothing)."""
    if out is None:
        return
    for method in ("write", "flush"):
        if not callable(getattr(out, method, None)):
            raise ValidationError("out", f"must be a text stream with write() and flush() (or "
                                         f"None: stdout), got {type(out).__name__} "
                                         f"{out!r:.40}")


def _over_a_message(line: str) -> bool:
    """Whether *line*'s text (its ``\r\n`` not counted) is over ``MAX_TEXT_BYTES`` of UTF-8:
    what the capped readers refuse as :class:`LineTooLong`, and a terminal's ``input()``
    hands over whole. Undecodable bytes (lone surrogates) count as the bytes they were."""
    text = line.rstrip("\r\n")
    if len(text) * 4 <= MAX_TEXT_BYTES:  # at most 4 bytes a character: no need to encode
        return False
    try:
        size = len(text.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:  # a lone surrogate no byte gave: 3 bytes, as Python writes it
        size = len(text.encode("utf-8", "surrogatepass"))
    return size > MAX_TEXT_BYTES


def allows(answer: str | None) -> bool:
    """Whether the line *answer* to an approval request allows it: ``y``, ``yes`` or
    ``allow``, in any case, spaces around them aside. One rule for ``tidings chat --local``
    and ``--url`` (and ``docs/chat.html``): the same word must not allow in one and deny in
    the other. Anything else (an empty line, the end of input: None) denies."""
    return (answer or "").strip().lower() in ("y", "yes", "allow")


def input_line(prompt: str) -> str:
    """*prompt* and what has been typed on the current input line (for ``redraw``); nothing
    while :func:`stdin_lines` does not wait in ``input()`` (a line just read, the next
    ``input()`` not started): that ``input()`` prints its prompt itself, and putting it back
    too showed ``you> you> ``."""
    if not _prompting.is_set():
        return ""
    try:
        import readline
    except ImportError:
        return prompt
    return prompt + readline.get_line_buffer()


def stdin_is_a_terminal() -> bool:
    """Whether stdin is an interactive terminal (not a pipe, a file or closed)."""
    return is_a_terminal(sys.stdin)


def is_a_terminal(stream: object) -> bool:
    """Whether *stream* (``sys.stdin``, ``sys.stdout``...) is an interactive terminal: not a
    pipe or a file, not closed (None), not a stand-in with no descriptor."""
    try:
        return os.isatty(stream.fileno())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False


def over_prompt(text: str, redraw: Callable[[], str] | None) -> str:
    """What to write for the line *text*: itself with its newline, or, with *redraw* (a
    prompt shown on the terminal), the input line cleared, *text*, then the prompt and what
    was typed put back (``redraw()``), so a line never lands after a waiting prompt."""
    if redraw is None:
        return text + "\n"
    return f"\r\x1b[K{text}\n{redraw()}"
