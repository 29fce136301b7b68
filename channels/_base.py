"""``ChannelBase``: what turns an inbound chat message into an agent turn, and back.

A platform adapter subclasses it and implements ``async deliver(outbound)``; the channel is the
live route of every session it resolves, so agent output and command answers in a session
reach the platform only through the runtime's outbox. ``handle_inbound`` returns once the
message is accepted: a command has been answered, or a turn has been queued in a task the
runtime's supervision tree owns (a channel needs no nursery of its own).
"""

from __future__ import annotations

import collections
import functools
import gc
import inspect
import logging
import types
import uuid
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

import trio

from tidings.actors import DeliveryHandle, Outbound, Runtime, TextBlock, _held
from tidings.actors._pipeline import new_id
from tidings.actors._route_checks import OPTIONAL_METHODS, check_capabilities
from tidings.channels._agents import Agent, EchoAgent
from tidings.channels._answer_order import SWITCH_ANSWER_WAIT, AnswerOrder, wait_ended
from tidings.channels._arguments import expect_instance
from tidings.channels._command_handler import HoldAnswer, Known, run_cancel, run_command
from tidings.channels._commands import Command, parse_command, trim
from tidings.channels._config import ChannelConfig, RuntimeIdentity, RuntimeMemoryScope
from tidings.channels._directory import (
    Conversation,
    SessionDirectory,
    bound_conversation_key,
    conversation_for,
)
from tidings.channels._dispatch import Dispatch, _task_name, unanswered_notice
from tidings.channels._handback import LeftBehind, requeue_unrouted
from tidings.channels._in_flight import InFlight
from tidings.channels._inbound import Inbound
from tidings.channels._keys import ConversationKey, conversation_key, parse_conversation_key
from tidings.channels._lifecycle import TaskLifecycleEvent
from tidings.channels._loader import load_agent
from tidings.channels._owed_answers import OwedAnswers, paid_stored, take_stored
from tidings.channels._stop_button import StopButton
from tidings.errors import RuntimeClosedError, TidingsError, ValidationError
from tidings.store import Call, Op, acking
from tidings.store._ids import check_id
from tidings.store._inbound import AnswerNotice, hold_command_answer, is_held
from tidings.supervisor._callables import certainly_sync, wrong_signature
from tidings.supervisor._log import field

__all__ = ["HELD_OUTCOMES", "REFUSAL", "ChannelBase", "InboundOutcome"]

log = logging.getLogger("tidings.channels")

InboundOutcome = Literal["started", "queued", "merged", "command", "refused", "ignored",
                         "duplicate"]
"""What ``handle_inbound`` did: a turn ``started`` now, was ``queued`` behind another, or
``merged`` into a waiting one; a ``command`` was answered; the sender was ``refused`` by the
access policy; a blank message (whitespace and invisible format characters only) was
``ignored``; a message id seen before (with ``ChannelConfig(dedupe_message_ids=True)``) was a
``duplicate``: nothing was run again."""

SWITCHES = frozenset({"cancel", "new", "clear", "resume"})
"""The commands whose message id is written with (or before) their effect, and read under
the conversation's lock with it (see :meth:`ChannelBase._inbound_once`)."""

HELD_OUTCOMES: tuple[InboundOutcome, ...] = ("started", "queued", "merged")
"""The outcomes of a message that became (part of) a turn: held until dealt with."""

REFUSAL = "Sorry, you are not allowed to use this channel."

_OPEN: weakref.WeakKeyDictionary[Runtime, dict[str, weakref.ref[ChannelBase]]] = \
    weakref.WeakKeyDictionary()
"""Each runtime's channels by name, the open one of each name (see ``_claim_name``)."""


def _claim_name(runtime: Runtime, name: str, channel: ChannelBase) -> None:
    """Make *channel* the runtime's one open channel of *name*, or raise
    :class:`ValidationError` naming ``name``. The name owns its conversations' sessions
    durably; two open channels of it, each with its own directory, locks and dispatch, both
    bound them: a message on one did not steer the turn the other ran in its session, and that
    turn's reply went to the one bound last. A closed channel's name is free (a reload), and
    so is one nothing refers to any more (dropped unclosed, or whose ``__init__`` failed):
    channels sit in reference cycles, so on a conflict the garbage is collected once first,
    and whether the name is free does not depend on when the collector last ran."""
    names = _OPEN.setdefault(runtime, {})
    if _open_channel(names, name) is not None:
        gc.collect()  # only on a conflict: a dropped channel is garbage, not open
    other = _open_channel(names, name)
    if other is not None:
        raise ValidationError("name", f"a channel named {name!r} is open in this runtime "
                                      f"already ({other!r}); two would share its sessions: "
                                      f"close() that one first, or give this one another "
                                      f"name (ChannelConfig(name=...))")
    names[name] = weakref.ref(channel)


def _open_channel(names: dict[str, weakref.ref[ChannelBase]], name: str) -> ChannelBase | None:
    """The channel of *name* in *names*, if it is alive and not closed."""
    held = names.get(name)
    other = held() if held is not None else None
    directory = getattr(other, "directory", None)  # None: gone, or its __init__ failed
    return other if directory is not None and not directory.closed else None


def _check_route_extras(channel: Any, adapter: str) -> None:
    """What ``bind`` checks of a route beyond ``deliver``, checked when the channel is built:
    it binds itself at each conversation's first message, and a refusal then failed every
    message, after the conversation's session was made. An optional route method must be an
    async method; ``capabilities`` a collection of block types (``check_capabilities``)."""
    for name, argument in OPTIONAL_METHODS.items():
        method = getattr(channel, name, None)
        if method is None:
            continue
        if not callable(method) or certainly_sync(method):
            what = "a plain function" if callable(method) else f"{method!r:.80}"
            raise ValidationError(name, f"{adapter}.{name} must be a coroutine function "
                                        f"(async def {name}(self, {argument})), got {what}")
        _check_one_argument(adapter, name, method, argument)
    check_capabilities(getattr(channel, "capabilities", None))


def _check_one_argument(adapter: str, name: str, method: Any, argument: str) -> None:
    """Refuse, naming *name*, a route method that cannot take its one *argument*, as
    ``bind`` does (``deliver(self, outbound, chat_id)``: every call would fail)."""
    if (wrong := wrong_signature(method)) is not None:
        raise ValidationError(name, f"{adapter}.{name} must take the {argument} as its one "
                                    f"argument (async def {name}(self, {argument})), got "
                                    f"{name}{wrong!s:.80}")


def _weak_resolver(channel: ChannelBase, router: Any) -> Callable[[str], Awaitable[None]]:
    """The router resolver of *channel* (:meth:`ChannelBase._resolve_route`), holding it
    weakly, and taken out of *router* when the channel goes: one dropped without ``close()``
    (or whose subclass ``__init__`` failed after the base added it) left it there for good,
    asked for every row of a session with no route."""

    async def resolve(session_id: str) -> None:
        alive = ref()
        if alive is not None:
            await alive._resolve_route(session_id)

    ref = weakref.ref(channel, lambda _gone: router.remove_resolver(resolve))
    return resolve


def key_refusal(config: ChannelConfig, inbound: Inbound,
                error: ValidationError) -> ValidationError:
    """*error*, the refusal of the conversation key built from *inbound*'s ids (over its cap),
    said again naming the id the adapter gave whose part of the key is the longest: the
    adapter never gave a ``conversation_key``."""
    return ValidationError(_longest_id_field(config, inbound),
                           f"too long for a conversation key ({error.reason})")


def _longest_id_field(config: ChannelConfig, inbound: Inbound) -> str:
    """The inbound field whose part of the conversation key is the longest (the key is made
    of ``chat_id`` and, by the session scope, ``thread_id`` or ``sender_id``)."""
    other = "sender_id" if config.session_scope == "sender" else "thread_id"
    parts = [("chat_id", inbound.chat_id), (other, getattr(inbound, other))]
    return max(parts, key=lambda part: len(_encoded(part[1])))[0]


def _encoded(value: object) -> str:
    """*value* as the key writes it (percent-encoded); ``""`` for none."""
    return "" if value is None or value == "" else conversation_key("x", "y", value)


class ChannelBase(StopButton):
    """Base of channel adapters: sessions, dispatch modes, commands, turns and lifecycle.

    ``agent`` defaults to the one ``config.agent`` names (an import path), else
    :class:`EchoAgent`. Subclasses implement :meth:`deliver` and may override
    :meth:`on_task_lifecycle` (sync or async); they may also define the optional route
    methods ``prompt_user`` / ``request_approval`` and ``capabilities``.

    Raises:
      ValidationError: ``runtime`` is not the runtime of ``async with
        tidings.open_runtime(...) as rt`` (field ``runtime``), ``config`` is not a
        :class:`ChannelConfig` (field ``config``), or ``agent`` has no ``run``, a plain
        ``def run``, a ``run`` that cannot be called with the turn alone (``run(turn,
        extra)``), or is a class whose ``run`` wants an instance (``EchoAgent`` for
        ``EchoAgent()``) (field ``agent``), or the subclass implements no ``async
        deliver`` (none, or a plain ``def deliver``: field ``deliver``), or has a
        ``prompt_user``, ``request_approval`` or ``reconcile`` that is not an async method,
        or any of these that cannot take its one argument (``deliver(self, outbound,
        chat_id)``), or ``capabilities`` that ``bind`` would refuse (the field is named).
      ConfigError: ``config.agent`` cannot be loaded.
    """

    stopped_name = "the server"
    """What the "not answered" notice says stopped before a message was answered ("Your
    message was not answered because the server stopped..."): a channel that runs in the
    user's own process says so (the terminal: "the chat")."""

    hands_back_unrouted = True
    """Whether :meth:`handle_inbound` hands a conversation's ``unrouted`` rows back before its
    first message or command, and before a later one when rows went ``unrouted`` since (the
    gateway does it in each client's hello instead)."""

    idle_conversations: int | None = 1024
    """How many conversations the channel keeps bound (their current session cached and bound
    as its route) before it evicts the least recently used idle ones (a busy one counts toward
    it and is never evicted, so fewer idle ones are kept while many are busy): an evicted one
    costs nothing here, its next message reads its session from the store again, and a row written
    in its current session meanwhile (a host's reminder) finds this channel through the
    router's resolver and goes out at once (the gateway evicts too, but resolves no route:
    such a row goes ``unrouted`` and out at its client's next hello). None keeps every
    conversation bound until the channel closes, as does an adapter with a
    ``conversation_for`` of its own whatever the cap. An int >= 1."""

    def __init__(self, runtime: Any, config: ChannelConfig, agent: Agent | None = None) -> None:
        if not isinstance(config, ChannelConfig):
            raise ValidationError("config", f"must be a ChannelConfig, got {config!r}")
        if agent is None:
            agent = load_agent(config.agent, field=f"channels.{config.name}.agent") \
                if config.agent is not None else EchoAgent()
        run = getattr(agent, "run", None)
        if not callable(run):
            raise ValidationError("agent", f"must have an async run(turn) method, got {agent!r}")
        if isinstance(agent, type) and isinstance(inspect.getattr_static(agent, "run"),
                                                  types.FunctionType):
            # its run wants an instance: every turn would fail, missing its turn argument
            raise ValidationError("agent", f"must be an agent, not its class: pass "
                                           f"{agent.__name__}(), not {agent.__name__}")
        if certainly_sync(run):  # every turn would fail at its first await, naming nothing
            raise ValidationError("agent", f"run must be a coroutine function (async def "
                                           f"run(turn)), got the plain {run!r:.80}")
        if (wrong := wrong_signature(run)) is not None:  # every turn: a TypeError
            raise ValidationError("agent", f"run must take the turn as its one argument "
                                           f"(async def run(turn)), got run{wrong!s:.80}")
        if not isinstance(runtime, Runtime):  # else the first message fails, naming nothing
            raise ValidationError("runtime", f"must be the rt of 'async with "
                                             f"tidings.open_runtime(...) as rt', got "
                                             f"{runtime!r:.80}")
        adapter = type(self).__name__
        if type(self).deliver is ChannelBase.deliver:  # else every reply fails at delivery
            raise ValidationError("deliver", f"{adapter} must implement async "
                                             f"deliver(outbound)")
        if certainly_sync(self.deliver):  # else the first message fails as its route binds
            raise ValidationError("deliver", f"{adapter}.deliver must be a coroutine function "
                                             f"(async def deliver(self, outbound))")
        _check_one_argument(adapter, "deliver", self.deliver, "outbound")
        _check_route_extras(self, adapter)
        keep = self.idle_conversations
        if keep is not None and (type(keep) is not int or keep < 1):
            raise ValidationError("idle_conversations", f"{adapter}.idle_conversations must "
                                                        f"be None or an int >= 1, got "
                                                        f"{keep!r:.80}")
        _claim_name(runtime, config.name, self)  # before anything registers with the runtime
        self.runtime = runtime
        self.config = config
        self.agent = agent
        self.identity: RuntimeIdentity = config.resolved_identity()
        self.memory_scope: RuntimeMemoryScope = config.resolved_memory_scope()
        self.directory = SessionDirectory(runtime, config.name, self,
                                          in_use=self._session_in_use,
                                          forgotten=self._sessions_forgotten,
                                          keep_idle=keep, evictable=self._evictable)
        # Asks this channel for the route of a session the directory evicted (held weakly:
        # a channel dropped unclosed is garbage, its name free; see _claim_name).
        self._resolver = None if keep is None else _weak_resolver(self, runtime.router)
        if self._resolver is not None:
            runtime.router.add_resolver(self._resolver)
        self.dispatch = Dispatch(self)
        # conversation key -> the runtime's unrouted count when its rows were last handed
        # back (see _hand_back)
        self._handed_back: dict[str, int] = {}
        # sessions a /resume's hand-back left rows unrouted in, for a channel that does not
        # hand back before each message (the gateway: see channels/_handback.py)
        self.handback_left = LeftBehind()
        # (conversation key, message id) being handled now (dedupe_message_ids)
        self._handling_ids = InFlight()
        # (presses key, press id) of presses that cancelled but whose outcome's write failed
        # (see StopButton._press)
        self._presses_unsettled: collections.OrderedDict[tuple[str, str], None] = (
            collections.OrderedDict())
        # conversation key -> its answers still in the outbox, which a direct one waits for
        self._answers = AnswerOrder()
        # direct answers of session commands that did not go out, for the platform's retry
        # of their message id (see _owed_answers)
        self.owed_answers = OwedAnswers()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.config.name!r}>"

    # --- what a subclass implements --------------------------------------------------------------

    async def deliver(self, outbound: Outbound) -> None:
        """Send *outbound* to the platform (the route method the runtime calls).

        ``outbound.session_id`` is None for answers that have no session (their platform
        address is in ``outbound.metadata``); otherwise :meth:`conversation_of` says where the
        session lives. Raising marks that delivery ``failed``.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement async deliver()")

    def on_task_lifecycle(self, event: TaskLifecycleEvent) -> Any:
        """Called with every lifecycle event of every turn (default: nothing). May be sync or
        return an awaitable; an exception is logged to stderr and never breaks the turn."""
        return None

    # --- inbound ---------------------------------------------------------------------------------

    async def handle_inbound(self, inbound: Inbound) -> InboundOutcome:
        """Accept one platform message; return once it is accepted (see :data:`InboundOutcome`).

        Commands run at once. A sender the access policy does not allow gets a refusal and
        nothing is created. Any other text (unknown ``/x`` included) becomes a turn in the
        conversation's session (created with the first message), dispatched by the channel's
        dispatch mode; the channel is bound as that session's route first.

        With ``config.dedupe_message_ids``, a ``message_id`` already handled in the
        conversation (also before a restart) is answered ``"duplicate"`` and starts nothing:
        a platform that delivers a webhook again starts no second turn. (The conversation
        spoke, though: rows waiting for that are handed back, such as the "not answered"
        notice of a first delivery a restart cut short, unless the sender is refused.) One that
        comes while the first delivery of its id is still being handled waits for it: a
        ``"duplicate"`` if that was handled, handled itself if it was not (it raised, or its
        caller was cancelled). The id of a message that becomes a turn is written in the
        transaction that holds it (a crash keeps both or neither), that of ``/new``,
        ``/clear`` or ``/resume`` in the one of its durable effect, that of ``/cancel``
        before it cancels, each with its answer held when that goes into a session (a
        crash before the answer was written: the next start sends it, see
        :mod:`._command_handler`); that of another command, a refusal or a blank message
        once it is handled (nothing to repeat).

        Raises:
          TypeError: *inbound* is not an :class:`Inbound`.
          RuntimeClosedError: the runtime is stopping, or the channel was closed (nothing
            was accepted).
          ValidationError: the conversation key the message's ids make is over its cap
            (8192 characters) and no session is bound to it yet (nothing was created): the
            error names the inbound field whose part of the key is the longest
            (``chat_id``, ``thread_id`` or ``sender_id``).
          Whatever :meth:`deliver` raises for an answer that has no session (that of
            ``/cancel``, ``/clear`` or ``/resume``, whose id is recorded already, is then
            given to the retry of its id, a ``"duplicate"``, or before the conversation's
            next message: see :mod:`._owed_answers`).
        """
        expect_instance("inbound", inbound, Inbound)
        self._check_accepting()
        conversation = self.conversation_for(inbound)
        try:
            if self._dedupes(inbound):
                return await self._inbound_once(conversation, inbound)
            return await self._inbound(conversation, inbound)
        except ValidationError as exc:
            if exc.field != "conversation_key":
                raise
            # The key is built from the inbound's ids: name the one the adapter gave.
            raise key_refusal(self.config, inbound, exc) from exc

    def _check_accepting(self) -> None:
        """Raise :class:`RuntimeClosedError` if the channel was closed or the runtime is
        stopping: nothing new is accepted then."""
        if self.directory.closed:
            raise RuntimeClosedError(f"the channel {self.config.name!r} is closed; no new "
                                     f"messages are accepted")
        self.runtime.check_open()
        self.runtime.tasks.check_open()

    def _dedupes(self, inbound: Inbound) -> bool:
        """Whether :meth:`handle_inbound` looks *inbound*'s id up first (the gateway's
        connections do that themselves, for their clients' ids)."""
        return self.config.dedupe_message_ids and inbound.message_id is not None

    async def _inbound_once(self, conversation: Conversation, inbound: Inbound
                           ) -> InboundOutcome:
        """:meth:`_inbound` unless the message id is known durably.

        A twin still being handled is waited for first, then the record is read: answered
        ``duplicate`` at once, this delivery would be acknowledged for a message the first
        may never handle (it fails, or its caller is cancelled: the platform gave up on that
        request, which is why it delivers the message again).

        For ``/cancel``, ``/new``, ``/clear`` and ``/resume`` the record is read under the
        conversation's lock, with the command's effect: a message sent after the command,
        handled during that read, would otherwise start its turn first, in the session the
        command then leaves, clears, or cancels the turn of."""
        rt, name, message_id = self.runtime, self.config.name, inbound.message_id
        assert message_id is not None
        async with self._handling_ids.handling((conversation.key, message_id)):
            if self._switches(inbound):
                # Its id's record is read under the conversation's lock, with its effect (see
                # run_command): a message handled during the read must not start a turn that
                # the command, sent before it, then cancels or leaves behind.
                outcome = await self._inbound(
                    conversation, inbound,
                    known=functools.partial(rt.client_message_outcome, name,
                                            conversation.key, message_id))
                if outcome == "duplicate":  # its first delivery's answer may be owed
                    await self._pay_retry(conversation, message_id)
                return outcome
            if await rt.client_message_outcome(name, conversation.key, message_id) is not None:
                # The conversation spoke all the same: what waits for that goes out (the
                # "not answered" notice of the first delivery, cut by a restart, above all).
                if self.config.access.allows(inbound.sender_id):
                    await self._pay_owed_all(conversation)
                    await self._hand_back_if_due(conversation)
                return "duplicate"
            outcome = await self._inbound(conversation, inbound)
            # A turn's id was written with its hold, a session command's with its effect
            # (then this finds it known and changes nothing).
            if outcome not in HELD_OUTCOMES:
                await rt.remember_client_message(
                    name, conversation.key, message_id,
                    session_id=self.directory.cached(conversation), outcome=outcome)
            return outcome

    async def _pay_retry(self, conversation: Conversation, message_id: str) -> None:
        """A retry of the session command *message_id* was found a ``duplicate``: send it
        the answer its first delivery still owes, if it does (:meth:`_pay_owed`), also one
        a process that stopped since owes on the id's record (``take_stored``), after the
        answers owed to the conversation's earlier commands."""
        await self._pay_owed_all(conversation, but=message_id)
        await take_stored(self, conversation.key, message_id)  # owed before a restart
        await self._pay_owed(conversation, message_id)

    async def _pay_owed(self, conversation: Conversation, message_id: str) -> None:
        """Send the answer owed to the retry *message_id* (see :mod:`._owed_answers`), if
        one is, as it was to go: straight to :meth:`deliver`, with no session, or into the
        session it is held in, releasing the hold (unless its first write committed after
        all: then the hold is gone, and so is the debt). Taken before it is sent, so no one
        else sends it meanwhile; owed again when it fails (:meth:`deliver`'s error, or the
        store's, is raised, or the call was cancelled), for the next retry. A direct answer
        owed on its id's record too is cleared there once it went out; on a route whose
        client acks (the gateway) it is kept *given* instead (on the record too) until the
        client acks it, and sent again to the next retry of the id (see
        :mod:`._owed_answers`), unless the client acks it while this sends it (another
        device, say): that ack counts."""
        owed = self.owed_answers.take(conversation.key, message_id)
        if owed is None:
            return
        try:
            if owed.held is None:
                await self._deliver_direct(conversation, owed.text,
                                           extra={"command": owed.command,
                                                  "message_id": message_id})
            else:
                session_id, inbound_id = owed.held
                # Asked of the writer, not a reader: the first write of the answer, its
                # caller cancelled, may still be queued there and commit; behind it, this
                # sees its end.
                [still_held] = await self.runtime.store.commit(
                    [Call(functools.partial(is_held, inbound_id=inbound_id))])
                if still_held:
                    self.directory.attach(conversation, session_id)
                    await self.answer(conversation, session_id, owed.text,
                                      command=owed.command, settles=(inbound_id,))
        except BaseException:
            if not self.owed_answers.back(conversation.key, message_id):
                self.owed_answers.owe(conversation.key, message_id, owed.text, owed.command,
                                      held=owed.held, stored=owed.stored, given=owed.given)
            raise
        if self.owed_answers.back(conversation.key, message_id):  # acked meanwhile: it was
            return  # given, its client has it (the ack cleared its record)
        if owed.held is None and self._acks():  # given until its client acks it
            self.owed_answers.owe(conversation.key, message_id, owed.text, owed.command,
                                  stored=owed.stored, given=True)
            return
        if owed.stored:  # it went out: not owed on its id's record any more
            await paid_stored(self, conversation.key, message_id)

    async def _pay_owed_all(self, conversation: Conversation, *,
                            but: str | None = None) -> None:
        """Before a message of *conversation* (from an allowed sender) is handled: send the
        answers still owed there (:meth:`_pay_owed`), oldest first, so the answer to an
        earlier command does not come after what this message brings. One that fails again
        stays owed (logged ``event=owed_answer_failed``), and the message is handled all the
        same. Not that of *but*, the message's own id: its retry pays it after, and raises
        if that fails. No checkpoint when none is owed."""
        for message_id in self.owed_answers.of(conversation.key):
            if message_id == but:
                continue
            try:
                await self._pay_owed(conversation, message_id)
            except Exception as exc:  # noqa: BLE001 -- the adapter's deliver(): anything
                log.warning("event=owed_answer_failed conversation=%s message_id=%s error=%s",
                            field(conversation.key), field(message_id), field(repr(exc)))

    async def _inbound(self, conversation: Conversation, inbound: Inbound, *,
                       known: Known | None = None) -> InboundOutcome:
        """Handle *inbound* (see :meth:`handle_inbound`). *known*: the read of a session
        command's id record, to run under the conversation's lock (``"duplicate"`` if it
        finds one)."""
        if not self.config.access.allows(inbound.sender_id):
            await self._deliver_direct(conversation, REFUSAL, extra={"refused": True})
            return "refused"
        command = parse_command(inbound.text)
        if isinstance(command, Command) and command.name == "cancel":
            # It hands back under the lock it cancels in (see run_cancel), and pays what is
            # owed after it, before its answer: the lock comes before any checkpoint.
            ran = await run_cancel(self, conversation, known=known,
                                   record=self._command_ops(conversation, inbound),
                                   hold=self._answer_hold(conversation, inbound),
                                   owed_to=self._owed_to(inbound))
            return "command" if ran else "duplicate"
        await self._pay_owed_all(conversation, but=inbound.message_id)
        await self._hand_back_if_due(conversation)
        if command is not None:
            ran = await run_command(self, conversation, command, known=known,
                                    record=self._command_ops(conversation, inbound),
                                    hold=self._answer_hold(conversation, inbound),
                                    owed_to=self._owed_to(inbound))
            return "command" if ran else "duplicate"
        if not trim(inbound.text):  # blank as the commands read it: nothing to show either
            return "ignored"
        async with self.directory.lock(conversation):
            session_id, _ = await self.directory.resolve(conversation)
            held = new_id("inbound")
            outcome = self.dispatch.submit(session_id, conversation, inbound, held)
        # Outside the lock: the next message of the conversation need not wait for this write.
        await self._hold(session_id, inbound, held,
                         self._accepted_ops(conversation, session_id, inbound, outcome))
        return outcome

    def _switches(self, inbound: Inbound) -> bool:
        """Whether *inbound* is ``/cancel``, ``/new``, ``/clear`` or ``/resume`` (well
        formed) from an allowed sender: its id's record is read under the conversation's
        lock, with its effect (see ``run_command``)."""
        command = parse_command(inbound.text)
        return (isinstance(command, Command) and command.name in SWITCHES
                and self.config.access.allows(inbound.sender_id))

    async def _hand_back_if_due(self, conversation: Conversation, *,
                                locked: bool = False) -> None:
        """:meth:`_hand_back`, for a channel that hands back (the gateway's hellos do it
        instead) and when it is due (see :meth:`_handed_back_since`). No checkpoint if not.
        *locked*: the caller holds the conversation's lock already."""
        if self.hands_back_unrouted and not self._handed_back_since(conversation):
            await self._hand_back(conversation, locked=locked)

    async def _hand_back(self, conversation: Conversation, *, locked: bool = False) -> None:
        """Before the conversation's first message or command in this process is handled,
        and again before its next one whenever a row somewhere went ``unrouted`` since: bind
        the channel to each of the conversation's sessions that has ``unrouted`` rows
        (recovery's "not answered" notices after a restart, replies left while no channel had
        the session, a notice a host wrote in a session the directory forgot) and hand those
        rows back, so they reach the platform, in seq order, before anything newer (see
        :mod:`tidings.channels._handback`)."""
        if not locked:
            async with self.directory.lock(conversation):
                await self._hand_back(conversation, locked=True)
            return
        if self._handed_back_since(conversation):
            return
        rt = self.runtime
        unrouted = self._unrouted_count()  # before the read: a row unrouted later counts
        sessions = await rt.unrouted_sessions(self.config.name, conversation.key)
        if sessions:
            async with rt.hold_binds(self):
                for session_id in sessions:
                    self.directory.attach(conversation, session_id)
                for session_id in sessions:
                    await requeue_unrouted(rt, session_id)
        self._handed_back[conversation.key] = unrouted

    def _unrouted_count(self) -> int:
        """How many deliveries the runtime has found no route for so far (sync)."""
        return self.runtime.dispatcher.counts["unrouted"]

    def _handed_back_since(self, conversation: Conversation) -> bool:
        """Whether the conversation's rows were handed back and no row went ``unrouted``
        since: a row of a session no channel has bound (one the directory forgot) is only
        found by a new hand-back."""
        return self._handed_back.get(conversation.key) == self._unrouted_count()

    def _session_in_use(self, session_id: str) -> bool:
        """Whether a session its conversation has left must stay bound to this channel: a
        turn of it runs or waits here, a serial turn the host opened in it runs or waits
        (``rt.open_turn``: its sends and questions still reach the chat), the runtime
        still has rows of it in hand, or a host's ``rt.router`` call of it is in progress (a
        question waiting for its answer, for hours perhaps: the route must still find its
        conversation when the answer comes)."""
        return (self.dispatch.state(session_id) is not None
                or session_id in self.runtime.serial_turns
                or not self.runtime.dispatcher.settled(session_id)
                or self.runtime.router.in_progress(session_id))

    def _evictable(self, conversation: Conversation, session_ids: tuple[str, ...]) -> bool:
        """Whether the directory may evict idle *conversation* (sessions *session_ids*): its
        key gives it back whole (:meth:`_conversation_from_key`: an adapter with a
        ``conversation_for`` of its own keeps its conversations), and no session of it
        remembers a turn cut while it opened (the session's next first prompt counts it)."""
        return (self._conversation_from_key(conversation.key) == conversation
                and not any(self.dispatch.unseen(sid) for sid in session_ids))

    def _conversation_from_key(self, key: str) -> Conversation | None:
        """The conversation :meth:`conversation_for` gives the key *key* (by the session
        scope), or None if the key is not one it makes, or the adapter has a
        ``conversation_for`` of its own (its conversations may hold more than their key)."""
        if type(self).conversation_for is not ChannelBase.conversation_for:
            return None
        scope = self.config.session_scope
        parsed = self._own_key(key, scope)
        if parsed is None:
            return None
        if scope == "sender" and len(parsed.ids) == 2 and parsed.thread is None:
            return Conversation(key, parsed.ids[0], sender_id=parsed.ids[1])
        if scope == "chat" and len(parsed.ids) == 1:
            return Conversation(key, parsed.ids[0], thread_id=parsed.thread)
        return None

    def _own_key(self, key: str, scope: str) -> ConversationKey | None:
        """The key *key* parsed (:func:`parse_conversation_key`) when it is one of this
        channel's in *scope*; None for another channel's, another scope's, or no key: what
        each :meth:`_conversation_from_key` starts from."""
        try:
            parsed = parse_conversation_key(key)
        except ValidationError:
            return None
        if parsed.channel != self.config.name or parsed.scope != scope:
            return None
        return parsed

    async def _resolve_route(self, session_id: str) -> None:
        """The router's resolver: bind this channel to *session_id* if it is the current
        session of one of its conversations (one the directory evicted, or never held since
        the channel opened), so a row written in it goes out now, not at the conversation's
        next message. Not while the session has ``unrouted`` rows: they are handed back, in
        order, when the conversation next speaks, and this row goes after them. Not a
        session the conversation left (``/new``, ``/clear``): as before, its rows wait for
        the conversation's next message or ``/resume``."""
        rt = self.runtime
        if self.directory.closed or self.directory.conversation_of(session_id) is not None:
            return
        with self.directory.watch() as moved:
            key = await rt.store.read(bound_conversation_key, rt.core_id, self.config.name,
                                      session_id)
            conversation = None if key is None else self._conversation_from_key(key)
            if conversation is None:
                return
            if await rt.stored_deliveries(session_id, limit=1, kinds=("message", "notice"),
                                          statuses=("unrouted",)):
                return
            # Not if the conversation moved on during those reads (a /new, /resume, or /clear
            # and its next message, handled meanwhile, perhaps evicted again since): that
            # would bind the session it left.
            latest = self.directory.latest(conversation)
            if not self.directory.closed and (
                    latest == session_id or (latest is None and not moved(conversation.key))):
                self.directory.attach(conversation, session_id)

    def _sessions_forgotten(self, conversation: Conversation, session_ids: list[str]) -> None:
        """The directory unbound sessions *conversation* has left: a row written in one
        later is ``unrouted``, so the conversation's next message hands rows back again;
        the dispatch forgets what it kept of them."""
        self._handed_back.pop(conversation.key, None)
        for session_id in session_ids:
            self.dispatch.forget(session_id)

    def _owed_to(self, inbound: Inbound) -> str | None:
        """The message id a session command's direct answer is owed to when it does not go
        out: *inbound*'s, when it is remembered (:meth:`_remembers`), so a retry of it is
        looked up and answered ``duplicate``, which pays it (:meth:`_pay_retry`: in
        :meth:`handle_inbound` with ``dedupe_message_ids``, in a gateway connection for the
        gateway); else None (nothing would pay it)."""
        return inbound.message_id if self._remembers(inbound) else None

    def _remembers(self, inbound: Inbound) -> bool:
        """Whether *inbound*'s message id is remembered with the hold of its turn (with
        ``dedupe_message_ids``; the gateway remembers every client's)."""
        return self._dedupes(inbound)

    def _accepted_ops(self, conversation: Conversation, session_id: str, inbound: Inbound,
                      outcome: InboundOutcome) -> list[Op]:
        """Store ops to write with the hold of a message accepted as a turn (*outcome*), in
        the same transaction: its message id (see :meth:`_remembers`), so a crash cannot keep
        one without the other: were it written after (as for commands), a crash between the
        two would make the resend a new message, answered, while the held first one got a
        "not answered" notice too."""
        if not self._remembers(inbound):
            return []
        rt = self.runtime
        assert inbound.message_id is not None
        return [acking.remember_client_message(
            rt.core_id, self.config.name, conversation.key, inbound.message_id,
            session_id=session_id, outcome=outcome, now=rt.store.clock())]

    def _command_ops(self, conversation: Conversation, inbound: Inbound) -> list[Op]:
        """Store ops recording the message id of the command *inbound* (see
        :meth:`_remembers`), for ``run_command`` to write with the command's durable effect
        (``/new``, ``/clear``, ``/resume``), or before it cancels (``/cancel``): were it
        written after, a crash between the two made the platform's resend run the command
        again (a second new session, a clear of the session the user had started since, a
        cancel of the turn of a message sent since)."""
        if not self._remembers(inbound):
            return []
        assert inbound.message_id is not None
        rt = self.runtime
        return [acking.remember_command_message(
            rt.core_id, self.config.name, conversation.key, inbound.message_id,
            outcome="command", now=rt.store.clock())]

    def _answer_hold(self, conversation: Conversation, inbound: Inbound) -> HoldAnswer | None:
        """How ``run_command`` holds the answer of the command *inbound* with its effect (see
        :func:`~tidings.store._inbound.hold_command_answer`), when its message id is recorded
        with that effect (see :meth:`_command_ops`); else None. Were the answer only written
        after, a crash in between kept the effect and the id: the platform's retry is then a
        ``duplicate``, and the user was never answered. Held, it is sent at the next start.
        The hold takes the answer, the command's name and, for ``/clear``, the session it
        closes."""
        if not self._remembers(inbound):
            return None
        rt, message_id = self.runtime, inbound.message_id
        # A direct answer (no session to hold it in) is owed on the id's record instead, when
        # the retry of the id is looked up here (it is sent that answer: see _owed_answers).
        owe_direct = self._owed_to(inbound) is not None

        def hold(notice: AnswerNotice, command: str,
                 cleared: str | None = None) -> tuple[str, Op]:
            inbound_id = new_id("inbound")
            return inbound_id, hold_command_answer(
                inbound_id, core_id=rt.core_id, channel=self.config.name,
                conversation_key=conversation.key, command=command, message_id=message_id,
                notice=notice, claimant=rt.store.claimant, now=rt.store.clock(),
                cleared=cleared, owe_direct=owe_direct)
        return hold

    async def _hold(self, session_id: str, inbound: Inbound, held: str,
                    also: list[Op]) -> None:
        """Hold the submitted *inbound* durably (as *held*, with the ops *also*) before it
        counts as accepted: from then on a crash, or a stop that cuts its turn, cannot lose it
        silently; recovery tells the user it was not answered (see
        :mod:`tidings.actors._held`).

        Its turn starts meanwhile, unhindered, and cannot have ended (so released it) before
        the hold is written: the hold reaches the store's writer before this task's next
        checkpoint, and the turn's end comes after several writes of its own.

        Should the hold's write fail, the message is accepted all the same (its turn runs),
        and *also* is written on its own: its message id must be remembered, or the
        platform's retry of it would start a second turn."""
        with trio.CancelScope(shield=True):  # bounded: one or two store requests
            try:
                await _held.hold(self.runtime, session_id,
                                 notice=unanswered_notice(inbound.text,
                                                          stopped=self.stopped_name),
                                 message_id=inbound.message_id, channel=self.config.name,
                                 inbound_id=held, also=also)
            except TidingsError as exc:  # accepted all the same: only a crash can lose it now
                log.warning("event=hold_failed session=%s error=%s", field(session_id),
                            field(repr(exc)))
                if also:
                    await self._write_alone(session_id, also)

    async def _write_alone(self, session_id: str, ops: list[Op]) -> None:
        """Write *ops* (what went with a hold whose write failed) in a transaction of their
        own; a failure is logged (``event=remember_failed``), as the hold's was."""
        try:
            await self.runtime.store.commit(ops)
        except TidingsError as exc:
            log.warning("event=remember_failed session=%s error=%s", field(session_id),
                        field(repr(exc)))

    # --- reading ---------------------------------------------------------------------------------

    def conversation_for(self, inbound: Inbound) -> Conversation:
        """The conversation *inbound* belongs to (default: by the config's session scope).
        An adapter whose platform names conversations differently overrides it; the key must
        still come from :func:`conversation_key`. Anything but an :class:`Inbound` is a
        ``TypeError`` naming ``inbound``."""
        expect_instance("inbound", inbound, Inbound)
        return conversation_for(self.config, inbound)

    def conversation_of(self, session_id: str | None) -> Conversation | None:
        """The conversation (chat, thread, sender) of a session this channel resolved."""
        return self.directory.conversation_of(session_id)

    def turn_running(self, session_id: str) -> bool:
        """Whether *session_id* has an active turn in this channel."""
        return self.dispatch.turn_running(session_id)

    async def wait_idle(self) -> None:
        """Block until no session of this channel has an active or waiting turn."""
        await self.dispatch.wait_idle()

    def close(self) -> None:
        """Unbind the channel from every session it is the route of, for good. Never blocks.
        Turns still running go on; what they send is ``unrouted`` unless another route binds
        (a new channel of the same name hands it back when the conversation next speaks).
        Turns waiting behind them run too, unless a new route takes their session first (a
        new channel of the same name, at the conversation's next message): each then gets
        the "not answered" notice, as at a stop, rather than an answer after that newer
        message. A closed channel takes no more messages (:meth:`handle_inbound` raises
        :class:`RuntimeClosedError`), and one it was handling meanwhile binds nothing."""
        self.directory.close()
        if self._resolver is not None:
            self.runtime.router.remove_resolver(self._resolver)

    # --- answers ---------------------------------------------------------------------------------

    async def answer(self, conversation: Conversation, session_id: str | None, text: str, *,
                     command: str | None = None, settles: Sequence[str] = (),
                     message_id: str | None = None) -> None:
        """Answer in *conversation*: a transient notice through the outbox of *session_id*,
        or, without a session, straight to :meth:`deliver` with ``session_id=None`` (once
        the answers queued earlier for the conversation ended: see :meth:`_deliver_direct`).
        *settles*: held messages of *session_id* the notice deals with, released in its
        commit (``rt.notify(settles=...)``; a command's own answer, held with its effect).
        A *conversation* that is no :class:`Conversation` is a ``TypeError`` naming it, and a
        *command* that is not None or a non-empty string (of valid Unicode) a
        ``ValidationError`` naming it, before anything is written (the notice was queued,
        then the call failed). *message_id*: the message a direct answer answers (a
        command's), said to :meth:`deliver` in its metadata, ``message_id``: a route whose
        client acks (the gateway) names it so that its client can ack the answer; None or a
        message id (``ValidationError`` naming ``message_id`` otherwise, as ``command``)."""
        expect_instance("conversation", conversation, Conversation)
        if command is not None:
            check_id("command", command, max_chars=None)
        if message_id is not None:  # a client acks the notice by it (the gateway)
            check_id("message_id", message_id)
        extra = {} if command is None else {"command": command}
        if session_id is None and message_id is not None:
            extra["message_id"] = message_id
        if session_id is None:
            await self._deliver_direct(conversation, text, extra=extra)
        else:
            handle = await self.runtime.notify(session_id, text, metadata=extra,
                                               settles=settles)
            self._answer_queued(conversation, handle)

    def _answer_queued(self, conversation: Conversation, handle: DeliveryHandle) -> None:
        """An answer or a turn's reply for *conversation* was queued through the outbox
        (*handle*): a direct answer, or a session switch's, comes after it (see
        :mod:`._answer_order`). Sync."""
        if not self._acks():
            self._answers.queued(conversation.key, handle)

    async def _answer_switch(self, conversation: Conversation, session_id: str, text: str, *,
                            command: str, settles: Sequence[str] = ()) -> None:
        """Answer a session switch (``/new``, ``/resume``) in *session_id*, the session
        switched to, whose lane runs beside the old session's: the session is held (its lane
        claims nothing, this answer and what follows it included) until the answers and
        replies queued earlier in the conversation's other sessions have ended, or
        :data:`SWITCH_ANSWER_WAIT` seconds have passed (a stuck route must not hold it for
        ever). Sent at once, "Started a new session." came before the old session's last
        reply on a slow platform. The wait runs in a task of the runtime's: neither this call
        nor the conversation's next message waits for it. Not for a route whose client acks
        (the gateway: a row ends when the client acks it)."""
        earlier = [] if self._acks() else self._answers.earlier(conversation.key, session_id)
        if not earlier:
            await self.answer(conversation, session_id, text, command=command, settles=settles)
            return
        release = self._hold_for_switch(session_id, earlier)
        try:
            await self.answer(conversation, session_id, text, command=command, settles=settles)
        except BaseException:
            release()
            raise
        try:
            self.runtime.start_task(_task_name(self.config.name, session_id, "answer"),
                                    self._release_after, earlier, release,
                                    on_abandon=release)
        except RuntimeClosedError:  # stopping: the answer is written; nothing to hold it for
            release()

    def _hold_for_switch(self, session_id: str,
                         earlier: list[DeliveryHandle]) -> Callable[[], None]:
        """Hold *session_id*'s lane for a switch's answer until *earlier* end; return the
        release (sync, and only the first call of it releases)."""
        dispatcher = self.runtime.dispatcher
        dispatcher.hold_sessions([session_id])
        self._answers.holding(session_id, True, [handle.session_id for handle in earlier])
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                self._answers.holding(session_id, False)
                dispatcher.release_sessions([session_id])
        return release

    async def _release_after(self, earlier: list[DeliveryHandle],
                             release: Callable[[], None]) -> None:
        """Call *release* once *earlier* have ended, or after :data:`SWITCH_ANSWER_WAIT`
        seconds, or when cancelled (the runtime is stopping)."""
        try:
            with trio.move_on_after(SWITCH_ANSWER_WAIT):
                await wait_ended(earlier)
        finally:
            release()

    def _acks(self) -> bool:
        """Whether this channel is a route whose deliveries end when its client acks them
        (an ``ack_window``, as the gateway's)."""
        return bool(getattr(self, "ack_window", None))

    async def _deliver_direct(self, conversation: Conversation, text: str, *,
                              extra: dict[str, Any]) -> None:
        """Deliver *text* to the conversation with no session, after the answers this channel
        queued for it through the outbox have ended (see :mod:`._answer_order`): sent at once,
        it overtook them (``/clear`` then ``/status`` on a slow platform). Not for a route
        whose client acks (the gateway): an answer ends once the client acks it, and a client
        connection reads acks only after the message that is being answered."""
        if not self._acks():
            await self._answers.wait(conversation.key)
        metadata = {**conversation.as_metadata(), **extra}
        outbound = Outbound(session_id=None,
                            delivery_id=f"direct_{uuid.uuid4().hex}", kind="notice",
                            blocks=(TextBlock(text),), text=text, channel=self.config.name,
                            metadata=metadata)
        await self.deliver(outbound)
