"""The session interaction router: the live route table, keyed by session and nothing else.

``bind(session_id, route)`` attaches an adapter route to one session and returns a token; the
last bind wins. ``unbind(token)`` is idempotent and a stale token never removes a newer binding.
``channel`` is adapter metadata and never decides routing; parent/child lineage is unknown
here. A binding costs a few hundred bytes, and every lookup is one dict access, so 20,000 bound
sessions cost what 100 do per delivery.

A route owner that does not keep every session it may serve bound (a channel evicts its idle
conversations) adds a *resolver* (:meth:`SessionInteractionRouter.add_resolver`): asked, in
order, before a session with no binding is taken for one with no route (its lane's next row
``unrouted``, a host's question ``no_interactive_route``), it may bind the session's route.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import attrs
import trio

from tidings.actors._questions import checked_approval_request, checked_prompt
from tidings.actors._records import (
    ApprovalDecision,
    ApprovalRequest,
    Outbound,
    Prompt,
    PromptAnswer,
)
from tidings.actors._route_checks import (
    check_ack_window,
    check_capabilities,
    check_route,
    route_attribute,
)
from tidings.actors._status import check_session_id
from tidings.errors import RouteMismatchError, RuntimeClosedError, TidingsError, ValidationError
from tidings.supervisor._callables import certainly_sync

__all__ = ["BindToken", "Binding", "RecipientAway", "SessionInteractionRouter"]

log = logging.getLogger("tidings.router")

_Q = TypeVar("_Q", Prompt, ApprovalRequest)
_A = TypeVar("_A", PromptAnswer, ApprovalDecision)

_SERIALS = itertools.count(1)
"""Bind serials, one count for every router of the process: a token names its session and
serial only, so with a count per router a token kept from an earlier runtime of the process (an
adapter that outlives a restart) or from another one named the binding this router made with
the same serial, and its ``unbind`` removed it. (``next`` on a count is atomic: a router of a
runtime in another thread shares it safely.)"""


_CAPABILITIES: dict[frozenset[str], frozenset[str]] = {}
"""One set of block types for all the bindings that render the same ones: a frozenset of a
few names is about 200 bytes, most of what a binding kept. Bounded: ``check_capabilities``
takes block type names only, so there are at most 2**len(BLOCK_TYPES) sets."""


@attrs.frozen
class BindToken:
    """Proof of one bind; ``unbind`` with it removes that binding only."""

    session_id: str
    serial: int


class RecipientAway(TidingsError):
    """Raised by a route's ``deliver()`` before any platform I/O: nobody is there to take the
    delivery now (a gateway conversation with no client connected). Not a failure: the lane
    leaves the row ``unrouted``, as one that finds no route bound, and the channel hands it
    back (``rt.requeue``, inside ``rt.hold_binds``) when its recipient returns, in seq order
    before anything newer; the session's later rows go on (to the same end while nobody is
    there). Waiting in ``deliver()`` instead held the session's lane, and its conversation,
    until then, for as long as the process ran. The gateway's signal to its lane: private,
    not (yet) a ``tidings.errors`` class a route of the host's own is meant to raise.

    *requeue*: older rows of the session are being handed back, or were while the call ran:
    the row goes back to ``queued`` instead, delivered again after them. So does any row
    whose session a binder holds by the time the lane records it."""

    def __init__(self, message: str, *, requeue: bool = False) -> None:
        super().__init__(message)
        self.requeue = requeue


class Binding:
    """A route bound to one session. Rejects outbounds for any other session."""

    __slots__ = ("ack_window", "capabilities", "route", "serial", "session_id")

    def __init__(self, session_id: str, route: Any, serial: int) -> None:
        self.session_id = session_id
        self.route = route
        self.serial = serial
        caps = check_capabilities(route_attribute(route, "capabilities"))
        self.capabilities = _CAPABILITIES.setdefault(caps, caps)
        self.ack_window = check_ack_window(route_attribute(route, "ack_window"))

    async def deliver(self, outbound: Outbound) -> Any:
        """Hand *outbound* to the route, after checking it belongs to this session."""
        if outbound.session_id != self.session_id:
            raise RouteMismatchError(
                f"route bound to session {self.session_id!r} was handed an outbound for "
                f"session {outbound.session_id!r}")
        return await self.route.deliver(outbound)


class SessionInteractionRouter:
    """Owns the live route table (see the module docstring)."""

    def __init__(self, clock: Callable[[], float] = time.time,
                 check_open: Callable[[], None] | None = None) -> None:
        self._clock = clock
        # The runtime's check_open (RuntimeClosedError once it stops): a bind after then was
        # taken, and its route never called. None: a router of its own, always open.
        self._check_open = check_open
        self._routes: dict[str, Binding] = {}
        self._listeners: list[Callable[[str], None]] = []
        self._unbind_listeners: list[Callable[[str], None]] = []
        self._resolvers: list[Callable[[str], Awaitable[object]]] = []
        # The waits of the questions being asked through this router (a host's own and a
        # turn's): withdrawn when the runtime stops (withdraw_questions).
        self._asking: set[trio.CancelScope] = set()
        # session id -> how many host calls (deliver, prompt_user, request_approval) of it
        # are in progress here (see in_progress); a session with none has no entry
        self._calls: dict[str, int] = {}

    def bind(self, session_id: str, route: Any) -> BindToken:
        """Make *route* the live route of *session_id* (replacing any other). Never blocks.

        *route* needs ``async deliver(outbound)``; optionally ``async prompt_user(prompt)``,
        ``async request_approval(request)``, ``async reconcile(delivery_ids)``,
        ``capabilities`` (a collection of the block types it renders, read at each bind;
        without it, text only) and ``ack_window``
        (an int >= 0; see ``Runtime.confirm``). A route that breaks these is refused with
        :class:`ValidationError` naming the attribute (a route class given for a route
        object, ``MemoryRoute`` for ``MemoryRoute()``, naming ``route``; a *session_id* no
        session can have, see ``check_session_id``, naming ``session_id``; a ``deliver``,
        ``prompt_user``, ``request_approval`` or ``reconcile`` that raises when read, or an
        optional method that is there but not callable), and one whose ``deliver``, ``prompt_user``,
        ``request_approval`` or ``reconcile`` is certainly sync (a plain function or method),
        or cannot take its one argument (``deliver(self)``, ``deliver(self, session_id,
        text)``), with ``TypeError`` naming it; the live binding stays as it was. Raises
        :class:`RuntimeClosedError` once the runtime is stopping or stopped (no route of it
        would be called); ``unbind`` still works then.
        """
        self._refuse_if_closed()
        check_session_id("session_id", session_id)  # (not looked up: a bind never blocks)
        check_route(route)
        binding = Binding(session_id, route, next(_SERIALS))
        self._routes[session_id] = binding
        for listener in self._listeners:
            listener(session_id)
        return BindToken(session_id, binding.serial)

    def _stopping(self) -> bool:
        """Whether the runtime is stopping or stopped (:meth:`_refuse_if_closed` raises)."""
        try:
            self._refuse_if_closed()
        except RuntimeClosedError:
            return True
        return False

    def _refuse_if_closed(self) -> None:
        """Raise the runtime's :class:`RuntimeClosedError` once it is stopping (after the
        grace its running turns get, in which they still ask): what ``bind`` and a host's
        ``deliver`` and questions check first, as the route they would reach belongs to a
        runtime that is gone. Never blocks."""
        if self._check_open is not None:
            self._check_open()

    def unbind(self, token: BindToken) -> bool:
        """Remove the binding *token* made, if it is still the live one (a token of another
        router, an earlier runtime's, is stale here too). Never blocks.
        Raises :class:`ValidationError` naming ``token`` for anything but a
        :class:`BindToken` (a session id given instead: unbind what that bind returned).

        A row its lane takes from now on finds no route (``unrouted``), but a row already
        claimed for this route (``sending``, durable: its ``deliver()`` is about to start or
        is running) still goes to it, as the host cannot tell the two apart and ``sending``
        never becomes ``unrouted``; unless another route is bound meanwhile (the last bind
        wins). A route that can no longer deliver raises from ``deliver`` (``failed``)."""
        if not isinstance(token, BindToken):
            raise ValidationError("token", f"must be the BindToken bind() returned, got "
                                           f"{token!r:.80}")
        binding = self._routes.get(token.session_id)
        if binding is None or binding.serial != token.serial:
            return False
        del self._routes[token.session_id]
        for listener in self._unbind_listeners:  # a lane waiting on its window: no route now
            listener(token.session_id)
        return True

    def binding(self, session_id: str) -> Binding | None:
        """The live binding of *session_id*, or None."""
        return self._routes.get(session_id)

    def in_progress(self, session_id: str) -> bool:
        """Whether a :meth:`deliver`, :meth:`prompt_user` or :meth:`request_approval` of
        *session_id* is in progress (a question still waiting for its answer included): a
        route owner that unbinds sessions it deems idle (a channel evicting a conversation)
        keeps this one, whose answer its route still has to place. One dict lookup."""
        return session_id in self._calls

    @contextlib.contextmanager
    def _call(self, session_id: str | None) -> Iterator[None]:
        """Count a host call of *session_id* as in progress while it runs."""
        if session_id is None:
            yield
            return
        self._calls[session_id] = self._calls.get(session_id, 0) + 1
        try:
            yield
        finally:
            left = self._calls.pop(session_id) - 1
            if left:
                self._calls[session_id] = left

    def bound_sessions(self) -> list[str]:
        """The ids of the sessions with a route bound now, as a new list. Never blocks."""
        return list(self._routes)

    def __len__(self) -> int:
        return len(self._routes)

    def add_bind_listener(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(session_id)`` (sync) after every bind. Something not callable is
        a ``TypeError`` naming ``listener`` here: taken, it made every later bind raise
        after its binding was made."""
        self._listeners.append(_callable_listener(listener))

    def add_unbind_listener(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(session_id)`` (sync) after every unbind that removed the live
        binding (not after a stale token's, which removes nothing). Something not callable
        is a ``TypeError`` naming ``listener``, as for :meth:`add_bind_listener`."""
        self._unbind_listeners.append(_callable_listener(listener))

    def add_resolver(self, resolver: Callable[[str], Awaitable[object]]) -> None:
        """Ask ``await resolver(session_id)`` for a route when *session_id* has no binding,
        before it is taken for one with no route: a lane's row (else ``unrouted``), and
        :meth:`deliver`, :meth:`prompt_user` and :meth:`request_approval`. The resolver binds
        the session's route if it has one (``bind``); its return value is ignored. Resolvers
        are asked in the order they were added until one binds. An ``Exception`` one raises
        is logged (``event=resolver_failed``) and counts as no route. Something not callable
        is a ``TypeError`` naming ``resolver``, and so is a plain (sync) function, which
        awaited would fail at every call; :meth:`remove_resolver` takes it out."""
        if not callable(resolver):
            raise TypeError(f"resolver must be callable, got {type(resolver).__name__}")
        if certainly_sync(resolver):
            raise TypeError(f"resolver must be an async function (async def), got the plain "
                            f"function {getattr(resolver, '__qualname__', resolver)!r:.80}")
        self._resolvers.append(resolver)

    def remove_resolver(self, resolver: Callable[[str], Awaitable[object]]) -> None:
        """Stop asking *resolver* (one :meth:`add_resolver` took; anything else: nothing)."""
        with contextlib.suppress(ValueError):
            self._resolvers.remove(resolver)

    async def resolve(self, session_id: str) -> Binding | None:
        """The live binding of *session_id*, after asking the resolvers for one if it has
        none (see :meth:`add_resolver`); None if still unbound. No checkpoint when it is
        bound or no resolver was added. Never raises an ``Exception`` a resolver raises
        (logged); a ``BaseException`` (``trio.Cancelled``, ``KeyboardInterrupt``) goes on. The
        ``RuntimeClosedError`` of a resolver's ``bind`` refused as the runtime stops is no
        route, not logged (the stop, not a failing resolver)."""
        binding = self._routes.get(session_id)
        if binding is not None or not self._resolvers:  # every delivery of a bound session:
            return binding  # one dict lookup, no copy of the resolvers
        for resolver in list(self._resolvers):
            try:
                await resolver(session_id)
            except Exception as exc:  # noqa: BLE001 -- a route owner's code: no route then
                if isinstance(exc, RuntimeClosedError) and self._stopping():
                    return None  # its bind, refused as the runtime stops: the stop
                log.warning("event=resolver_failed session=%s error=%r", session_id, exc)
            binding = self._routes.get(session_id)
            if binding is not None:
                break
        return binding

    async def deliver(self, outbound: Outbound) -> bool:
        """Hand *outbound* to the route bound to its ``session_id`` right now, as it is: no
        outbox (nothing durable, no handle), no lane (not in order with the session's
        deliveries, and perhaps while the lane's own ``deliver()`` to that route runs), no
        adaptation to the route's ``capabilities``.

        Returns False when no route is bound to it (an outbound with no session, ``None``,
        never has one: a channel answers a command without a session itself, not through
        the router). The runtime's durable path does not use this. Raises
        :class:`RuntimeClosedError` once the runtime is stopping, as ``bind`` does, and
        ``TypeError`` naming ``outbound`` for anything but an :class:`Outbound`.
        """
        self._refuse_if_closed()
        if not isinstance(outbound, Outbound):
            raise TypeError(f"outbound must be an Outbound, got {type(outbound).__name__}")
        with self._call(outbound.session_id):
            binding = None if outbound.session_id is None else await self.resolve(
                outbound.session_id)
            if binding is None:
                self._refuse_if_closed()  # the runtime began stopping while resolvers ran
                await trio.lowlevel.checkpoint()
                return False
            await binding.deliver(outbound)
            return True

    async def prompt_user(self, prompt: Prompt) -> PromptAnswer:
        """Ask the person on *prompt*'s session route and wait for the answer.

        Fails closed: without an interactive route the answer is empty with
        ``reason="no_interactive_route"``; past ``prompt.expires_at`` it is ``expired`` (a
        prompt already past it is not shown to anyone; the route's wait is cancelled then,
        and an ``Exception`` it ends that wait with, as some platform libraries end a request
        they were cancelled in, is that expiry too). What the route's ``prompt_user`` raises
        before then is raised here (``ctx.prompt_user`` turns an ``Exception`` into the
        answer ``route_failed``; a host asking itself decides). Raises :class:`ValidationError`
        naming the field, before anything is asked, for what ``ctx.prompt_user`` refuses (a
        ``text`` that is not a non-empty string of valid Unicode within ``MAX_TEXT_BYTES``),
        a ``session_id``, ``prompt_id`` or ``turn_id`` that is no id, or an ``expires_at``
        that is not None or unix seconds (see :mod:`._questions`). Raises
        :class:`RuntimeClosedError`, before anything is asked, once the runtime is stopping,
        as ``bind`` and ``ctx.prompt_user`` do; and when the runtime stops while the question
        waits for its answer (it is withdrawn, the route's wait cancelled; see
        :meth:`withdraw_questions`).
        """
        self._refuse_if_closed()
        prompt = checked_prompt(prompt)
        return await self._withdrawable(self._ask_prompt, prompt, prompt.prompt_id)

    async def _ask_prompt(self, prompt: Prompt) -> PromptAnswer:
        """:meth:`prompt_user` once *prompt* is checked."""
        binding = await self.resolve(prompt.session_id)
        ask = getattr(binding.route, "prompt_user", None) if binding else None
        if ask is None:
            await trio.lowlevel.checkpoint()
            return PromptAnswer(None, "no_interactive_route")
        remaining = self._remaining(prompt.expires_at)
        if remaining <= 0:
            await trio.lowlevel.checkpoint()
            return PromptAnswer(None, "expired")
        with trio.move_on_after(remaining) as expiry:
            try:
                answer = await ask(prompt)
            except Exception:  # the route's error for the wait the expiry cut off: expired
                if not expiry.cancel_called:
                    raise
                return PromptAnswer(None, "expired")
            if isinstance(answer, PromptAnswer):  # unanswered says why, as for None
                return answer if answer.text is not None or answer.reason is not None \
                    else PromptAnswer(None, "declined")
            return PromptAnswer(None, "declined") if answer is None else PromptAnswer(str(answer))
        return PromptAnswer(None, "expired")

    async def request_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        """Ask for approval on *request*'s session route and wait for the decision.

        Fails closed: no interactive route is a denial with ``reason="no_interactive_route"``;
        no decision by ``request.expires_at`` is ``expired`` (a request already past it is not
        shown to anyone; an ``Exception`` the route ends its cancelled wait with is that
        expiry too, as for :meth:`prompt_user`); anything but allow is ``denied``. What the
        route's ``request_approval`` raises before then is raised here
        (``ctx.request_approval`` denies with ``route_failed``). Raises :class:`ValidationError`
        naming the field, before anything is asked, for what ``ctx.request_approval`` refuses
        (an ``action`` as a prompt's text, ``details`` that are not a JSON-ready mapping of at
        most ``MAX_JSON_BYTES``), and ids and ``expires_at`` as :meth:`prompt_user` does. The
        route gets the ``details`` as their JSON reads back (string keys), as from a turn.
        Raises :class:`RuntimeClosedError` once the runtime is stopping, and when it stops
        while the request waits (withdrawn: never an allow), as :meth:`prompt_user` does.
        """
        self._refuse_if_closed()
        request = checked_approval_request(request)
        return await self._withdrawable(self._ask_approval, request, request.request_id)

    async def _ask_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        """:meth:`request_approval` once *request* is checked."""
        binding = await self.resolve(request.session_id)
        ask = getattr(binding.route, "request_approval", None) if binding else None
        if ask is None:
            await trio.lowlevel.checkpoint()
            return ApprovalDecision(False, "no_interactive_route")
        remaining = self._remaining(request.expires_at)
        if remaining <= 0:
            await trio.lowlevel.checkpoint()
            return ApprovalDecision(False, "expired")
        with trio.move_on_after(remaining) as expiry:
            try:
                return _decision(await ask(request))
            except Exception:  # the route's error for the wait the expiry cut off: expired
                if not expiry.cancel_called:
                    raise
        return ApprovalDecision(False, "expired")

    async def _withdrawable(self, ask: Callable[[_Q], Awaitable[_A]], question: _Q,
                            question_id: str) -> _A:
        """``await ask(question)``, withdrawn by :meth:`withdraw_questions`: then
        :class:`RuntimeClosedError`, also when the route ends its cancelled wait with an
        ``Exception`` of its own (how some platform libraries end an aborted request). A
        turn's question is withdrawn so too; the turn then raises its own error
        (``TurnContext._ask``)."""
        scope = trio.CancelScope()
        self._asking.add(scope)  # (no checkpoint since _refuse_if_closed saw it open)
        try:
            with scope, self._call(question.session_id):
                try:
                    return await ask(question)
                except Exception:  # the route's error for the wait the stop cut off
                    if not scope.cancel_called:
                        raise
                    await trio.lowlevel.checkpoint_if_cancelled()
                    raise
        finally:
            self._asking.discard(scope)
        raise RuntimeClosedError(f"the runtime stopped while {question_id} waited for an "
                                 "answer; the question was withdrawn")

    def withdraw_questions(self) -> None:
        """Cancel the waits of the questions still being asked through this router (the
        runtime is stopping: ``Runtime.withdraw_questions``, right after it starts refusing
        new ones): a host's own call would otherwise go on waiting on a route of a runtime
        that is gone, until its expiry, or for ever with none. Never blocks."""
        for scope in self._asking:
            scope.cancel(reason="the runtime is stopping")

    def _remaining(self, expires_at: float | None) -> float:
        """Seconds on trio's clock until the wall-clock *expires_at* (inf when None)."""
        if expires_at is None:
            return float("inf")
        return max(0.0, expires_at - self._clock())


def _decision(answer: object) -> ApprovalDecision:
    if isinstance(answer, ApprovalDecision):  # a denial says why, as for False
        return answer if answer.allowed or answer.reason is not None \
            else ApprovalDecision(False, "denied")
    if answer is True or answer == "allow":
        return ApprovalDecision(True)
    return ApprovalDecision(False, "denied")


def _callable_listener(listener: Callable[[str], None]) -> Callable[[str], None]:
    """*listener* if it is callable, else ``TypeError`` naming ``listener``."""
    if not callable(listener):
        raise TypeError(f"listener must be callable, got {type(listener).__name__}")
    return listener
