"""The session interaction router: the live route table, keyed by session and nothing else.

``bind(session_id, route)`` attaches an adapter route to one session and returns a token; the
last bind wins. ``unbind(token)`` is idempotent and a stale token never removes a newer binding.
``channel`` is adapter metadata and never decides routing; parent/child lineage is unknown
here. A binding costs a few hundred bytes, and every lookup is one dict access, so 20,000 bound
sessions cost what 100 do per delivery.
"""

from __future__ import annotations

import inspect
import itertools
import logging
import time
import types
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, TypeVar

import attrs
import trio

from tidings.actors._blocks import BLOCK_TYPES
from tidings.actors._handle import describe_error
from tidings.actors._questions import checked_approval_request, checked_prompt
from tidings.actors._records import (
    ApprovalDecision,
    ApprovalRequest,
    Outbound,
    Prompt,
    PromptAnswer,
)
from tidings.actors._status import check_session_id
from tidings.errors import RouteMismatchError, RuntimeClosedError, ValidationError
from tidings.supervisor._callables import certainly_sync, wrong_signature

__all__ = ["BindToken", "Binding", "SessionInteractionRouter", "check_ack_window",
           "check_capabilities"]

log = logging.getLogger("tidings.router")

_Q = TypeVar("_Q", Prompt, ApprovalRequest)
_A = TypeVar("_A", PromptAnswer, ApprovalDecision)

_SERIALS = itertools.count(1)
"""Bind serials, one count for every router of the process: a token names its session and
serial only, so with a count per router a token kept from an earlier runtime of the process (an
adapter that outlives a restart) or from another one named the binding this router made with
the same serial, and its ``unbind`` removed it. (``next`` on a count is atomic: a router of a
runtime in another thread shares it safely.)"""


@attrs.frozen
class BindToken:
    """Proof of one bind; ``unbind`` with it removes that binding only."""

    session_id: str
    serial: int


class Binding:
    """A route bound to one session. Rejects outbounds for any other session."""

    __slots__ = ("ack_window", "capabilities", "route", "serial", "session_id")

    def __init__(self, session_id: str, route: Any, serial: int) -> None:
        self.session_id = session_id
        self.route = route
        self.serial = serial
        self.capabilities = check_capabilities(_attribute(route, "capabilities"))
        self.ack_window = check_ack_window(_attribute(route, "ack_window"))

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
        # The waits of the questions being asked through this router (a host's own and a
        # turn's): withdrawn when the runtime stops (withdraw_questions).
        self._asking: set[trio.CancelScope] = set()

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
        deliver = _attribute(route, "deliver")
        if not callable(deliver):
            raise ValidationError("route", "a route needs an async deliver(outbound) method")
        _check_not_a_class(route)
        _check_method("deliver", deliver, "outbound")
        for name, argument in _OPTIONAL.items():  # optional, but one there must be awaitable
            ask = _attribute(route, name)
            if ask is None:
                continue
            if not callable(ask):
                raise ValidationError(name, f"must be an async method, got {ask!r:.80}")
            _check_method(name, ask, argument)
        binding = Binding(session_id, route, next(_SERIALS))
        self._routes[session_id] = binding
        for listener in self._listeners:
            listener(session_id)
        return BindToken(session_id, binding.serial)

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

    def bound_sessions(self) -> list[str]:
        """The ids of the sessions with a route bound now, as a new list. Never blocks."""
        return list(self._routes)

    def __len__(self) -> int:
        return len(self._routes)

    def add_bind_listener(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(session_id)`` (sync) after every bind."""
        self._listeners.append(listener)

    def add_unbind_listener(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(session_id)`` (sync) after every unbind that removed the live
        binding (not after a stale token's, which removes nothing)."""
        self._unbind_listeners.append(listener)

    async def deliver(self, outbound: Outbound) -> bool:
        """Hand *outbound* to the route bound to its ``session_id`` right now, as it is: no
        outbox (nothing durable, no handle), no lane (not in order with the session's
        deliveries, and perhaps while the lane's own ``deliver()`` to that route runs), no
        adaptation to the route's ``capabilities``.

        Returns False when no route is bound to it (an outbound with no session, ``None``,
        never has one: a channel answers a command without a session itself, not through
        the router). The runtime's durable path does not use this. Raises
        :class:`RuntimeClosedError` once the runtime is stopping, as ``bind`` does.
        """
        self._refuse_if_closed()
        binding = self._routes.get(outbound.session_id)
        if binding is None:
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
        binding = self._routes.get(prompt.session_id)
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
        binding = self._routes.get(request.session_id)
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
        turn's question is withdrawn by the same stop through its own, outer, scope, which
        then takes trio's ``Cancelled`` and raises the turn's error instead."""
        scope = trio.CancelScope()
        self._asking.add(scope)  # (no checkpoint since _refuse_if_closed saw it open)
        try:
            with scope:
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


_QUESTIONS = {"prompt_user": "prompt", "request_approval": "request"}
"""A route's optional question methods (without one, its questions fail closed), each with
the name of its argument (for the refusal of a sync one)."""

_OPTIONAL = {**_QUESTIONS, "reconcile": "delivery_ids"}
"""Every optional async method of a route: the questions, and ``reconcile`` (asked by the
recovery scanner about ``unknown`` rows; a sync one failed every ask, and one that raised
when read escaped the scanner's bind listener)."""


_CHECKED: weakref.WeakSet[types.FunctionType] = weakref.WeakSet()
"""Functions whose bound methods passed :func:`_check_method`: what it checks of a bound
method depends on its function alone, so each further route of a class costs a lookup, not
``inspect.signature`` calls (they made up most of a bind: 20,000 routes of one class bound in
about 0.9 s). A function replaced on its class (a new function) is checked again."""


def _check_method(name: str, fn: Any, argument: str) -> None:
    """:func:`_check_not_sync` and :func:`_check_signature`, once per function for bound
    methods (see :data:`_CHECKED`)."""
    func = fn.__func__ if inspect.ismethod(fn) else None
    if func is not None and func in _CHECKED:
        return
    _check_not_sync(name, fn, argument)
    _check_signature(name, fn, argument)
    if isinstance(func, types.FunctionType):
        _CHECKED.add(func)


def _check_not_sync(name: str, fn: Any, argument: str) -> None:
    """Refuse a route method *name* that is :func:`certainly_sync`: every call of it would
    fail at run time (a question closed ``route_failed``, a delivery ``failed``)."""
    if certainly_sync(fn):
        raise TypeError(f"{name}: a route's {name} must be a coroutine function "
                        f"(async def {name}({argument})), got the plain function "
                        f"{getattr(fn, '__qualname__', fn)!r:.80}")


def _check_signature(name: str, fn: Any, argument: str) -> None:
    """Refuse a route method *name* that cannot be called with its one *argument*, as the
    runtime calls it (``deliver(outbound)``): every call of it would fail at run time with a
    ``TypeError`` about its arguments (a delivery ``failed``, a question ``route_failed``). One
    with defaults or ``*args`` is taken; one whose signature cannot be read (a builtin) is
    given the benefit of the doubt, as a channel's agent ``run(turn)`` is
    (:func:`~tidings.supervisor._callables.wrong_signature`)."""
    if (wrong := wrong_signature(fn)) is not None:
        raise TypeError(f"{name}: a route's {name} must take the {argument} as its one "
                        f"argument (async def {name}({argument})), got "
                        f"{name}{wrong!s:.80}")


def _check_not_a_class(route: Any) -> None:
    """Refuse a route class given for a route (``MemoryRoute`` for ``MemoryRoute()``): its
    ``deliver`` is the function its instances bind, so every delivery would call it with the
    outbound as ``self`` and fail (``failed``, "missing 1 required positional argument"). A
    class whose ``deliver`` is a static or class method is called as it is: a route."""
    if isinstance(route, type) and inspect.isfunction(
            inspect.getattr_static(route, "deliver", None)):
        raise ValidationError("route", f"got the class {route.__qualname__!r:.80}, not a "
                                       f"route object: make one ({route.__name__:.80}())")


def _attribute(route: Any, name: str) -> object:
    """``route.<name>``, None when it has none. Read once, at bind: a property that raises
    refuses the route by the attribute's name instead of escaping ``bind`` as it is."""
    try:
        return getattr(route, name, None)
    except Exception as exc:  # any failure to read it refuses the route, by its name
        raise ValidationError(name, f"reading a route's {name} raised "
                                    f"{describe_error(exc, 120)}") from exc


def check_capabilities(caps: object) -> frozenset[str]:
    """A route's block types (text only when it declares none). A string is refused: it would
    read as its letters; so is an iterable that fails while it is read, and a name that is no
    block type (a misspelt ``"images"`` would silently degrade every image). So is a one-shot
    iterator (a generator): read at each bind, it would be empty at the route's next one, and
    every block but text degraded from then on; and a mapping, which reads as its keys: flags
    such as ``{"file": False}`` would hand the route every file it said it cannot render."""
    if caps is None:
        return frozenset({"text"})
    if isinstance(caps, Iterator | Mapping):
        what = "a mapping (its keys, whatever their values)" if isinstance(caps, Mapping) \
            else "a one-shot iterator"
        raise ValidationError("capabilities", f"a route's capabilities must be a collection "
                                              f"of block type names (read at every bind), not "
                                              f"{what}: got {caps!r:.80}")
    try:
        types = frozenset(caps) if not isinstance(caps, str | bytes) else None
    except Exception:  # noqa: BLE001 - not iterable, or its iteration failed: refused below
        types = None
    if types is None or not all(isinstance(t, str) and t for t in types):
        raise ValidationError("capabilities", f"a route's capabilities must be block type "
                                              f"names, got {caps!r:.80}")
    unknown = types.difference(BLOCK_TYPES)
    if unknown:
        raise ValidationError("capabilities", f"not block types: {sorted(unknown)!r:.80} "
                                              f"(block types are {', '.join(BLOCK_TYPES)})")
    return types


def check_ack_window(window: object) -> int:
    """A route's ack window (0: it does not ack). Anything but None or an int >= 0 is
    refused: a negative window would hold the session's deliveries forever."""
    if window is None:
        return 0
    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        raise ValidationError("ack_window", f"a route's ack_window must be None or an int "
                                            f">= 0, got {window!r:.80}")
    return window


def _decision(answer: object) -> ApprovalDecision:
    if isinstance(answer, ApprovalDecision):  # a denial says why, as for False
        return answer if answer.allowed or answer.reason is not None \
            else ApprovalDecision(False, "denied")
    if answer is True or answer == "allow":
        return ApprovalDecision(True)
    return ApprovalDecision(False, "denied")
