"""In-memory routes: what a platform adapter looks like to the runtime, with knobs for tests.

:class:`MemoryRoute` records what it is handed and can be slowed, stalled or made to fail;
:class:`ReconcilingMemoryRoute` also answers the recovery scanner's ``reconcile`` truthfully
from what it accepted (the way a platform with message ids can).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import trio

from tidings.actors import ApprovalDecision, ApprovalRequest, Outbound, Prompt
from tidings.actors._route_checks import check_ack_window, check_capabilities
from tidings.actors._status import check_count, check_seconds, seconds_bound
from tidings.errors import ValidationError
from tidings.supervisor._callables import certainly_async, wrong_signature

__all__ = ["MemoryRoute", "ReconcilingMemoryRoute"]

Failure = BaseException | type[BaseException] | Callable[[Outbound], Any] | None


def _check_fail(fail: object) -> None:
    """A failure is ``None``, a bool, an exception (class or instance) or a predicate: anything
    else would fail every delivery with a ``TypeError`` recorded as the platform's error."""
    if fail is None or isinstance(fail, bool | BaseException):
        return
    if isinstance(fail, type) and issubclass(fail, BaseException):
        return
    if isinstance(fail, type) or not callable(fail):
        raise ValidationError("fail", f"must be an exception (class or instance), a predicate "
                                      f"of the outbound, a bool or None, got {fail!r:.80}")
    # A predicate is called with the outbound and answered at once: an async one answers a
    # coroutine nobody awaits, and one that cannot take the outbound raises, at every delivery.
    if certainly_async(fail):
        raise ValidationError("fail", f"a predicate is called, not awaited: write it def, not "
                                      f"async def, got {fail!r:.80}")
    if (wrong := wrong_signature(fail)) is not None:
        raise ValidationError("fail", f"a predicate must take the outbound as its one "
                                      f"argument, got {fail!r:.60}{wrong!s:.60}")


class MemoryRoute:
    """An in-memory route with controllable latency, stalls and failures.

    ``attempted`` lists every outbound ``deliver`` was called with and ``delivered`` what it
    accepted, both in order; ``delivered_at`` maps a delivery id to the trio time it was
    accepted. ``stall()`` makes ``deliver`` block until ``release()``; ``latency`` (trio
    seconds) delays each delivery; ``fail`` is an exception (class or instance) raised by every
    delivery, or a predicate ``fail(outbound)`` (a plain ``def``) answering an exception
    (class or instance) to raise, ``True`` (a ``ConnectionError``: the platform refused it)
    or ``None`` / ``False`` (accept it); ``fail=True`` refuses every delivery that way,
    ``None`` / ``False`` accepts them all. Tests wait with :meth:`wait_attempted` /
    :meth:`wait_delivered` instead of sleeping. ``capabilities`` that a bind would refuse (a
    string, a misspelt block type, a mapping) are refused naming it when the route is made,
    and so is an ``ack_window`` that is not an int >= 0 (``None``: it does not ack, as ``0``).
    A ``latency`` that is not seconds >= 0, or a ``fail`` that is none of these, given or set
    later (``route.fail = False`` stops failing), raises
    :class:`~tidings.errors.ValidationError` naming it; ``inf`` (or an integer past a float's
    range) holds every delivery.
    """

    def __init__(self, *, capabilities: Iterable[str] | None = None, latency: float = 0.0,
                 fail: Failure = None, ack_window: int | None = None) -> None:
        if capabilities is not None:  # checked as a bind checks it, here where it is given
            self.capabilities = check_capabilities(capabilities)
        if ack_window is not None:  # checked as a bind checks it, here where it is given
            self.ack_window = check_ack_window(ack_window)
        self.latency = latency  # checked by the setter, as a later route.latency = ... is
        self.fail = fail  # checked by the setter, as a later route.fail = ... is
        self.delivered: list[Outbound] = []
        self.attempted: list[Outbound] = []
        self.delivered_at: dict[str, float] = {}
        self.prompts: list[Prompt] = []
        self.approvals: list[ApprovalRequest] = []
        self.answers: collections.deque[str | None] = collections.deque()
        self.decisions: collections.deque[bool | str | ApprovalDecision] = collections.deque()
        self._gate: trio.Event | None = None
        self._token: trio.lowlevel.TrioToken | None = None  # the run a stalled delivery is in
        self._changed = trio.Event()
        self._refused: collections.Counter[str] = collections.Counter()  # attempts it failed

    @property
    def stalled(self) -> bool:
        """Whether deliveries block now (:meth:`stall` was called, :meth:`release` not yet)."""
        return self._gate is not None

    def stall(self) -> None:
        """Make every delivery block until :meth:`release`."""
        if self._gate is None:
            self._gate = trio.Event()

    def release(self) -> None:
        """Let stalled deliveries go on (and later ones run without blocking).

        From any thread: outside the run they wait in (a sync test driving a
        :class:`~tidings.testing.RuntimeThread`, or another trio run) it wakes them there."""
        gate, self._gate = self._gate, None
        if gate is None:
            return
        token = self._token
        if token is None or (trio.lowlevel.in_trio_run()
                             and trio.lowlevel.current_trio_token() is token):
            # In the waiters' run. With no token nothing ever waited on it.
            gate.set()
            return
        try:  # never blocks, so it serves from inside another trio run too
            token.run_sync_soon(gate.set)
        except trio.RunFinishedError:  # that run ended: nothing waits on the gate any more
            gate.set()

    async def wait_attempted(self, n: int) -> list[Outbound]:
        """Block until *n* deliveries have started; return them. *n* is an int >= 0
        (:class:`~tidings.errors.ValidationError` naming ``n`` otherwise)."""
        check_count("n", n)  # a negative n sliced from the end; a bool or float was taken
        while len(self.attempted) < n:
            await self._changed.wait()
        await trio.lowlevel.checkpoint()
        return self.attempted[:n]

    async def wait_delivered(self, n: int) -> list[Outbound]:
        """Block until *n* deliveries have been accepted; return them. *n* is an int >= 0
        (:class:`~tidings.errors.ValidationError` naming ``n`` otherwise)."""
        check_count("n", n)
        while len(self.delivered) < n:
            await self._changed.wait()
        await trio.lowlevel.checkpoint()
        return self.delivered[:n]

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def deliver(self, outbound: Outbound) -> None:
        """Record *outbound* in :attr:`attempted`, wait while stalled and :attr:`latency`
        (trio seconds), then raise what :attr:`fail` says or record it in :attr:`delivered`
        (a checkpoint first)."""
        self.attempted.append(outbound)
        self._notify()
        gate = self._gate
        if gate is not None:
            self._token = trio.lowlevel.current_trio_token()  # where release() must wake it
            await gate.wait()
        if self._latency:
            await trio.sleep(self._latency)
        error = self._failure(outbound)
        if error is not None:
            self._refused[outbound.delivery_id] += 1
            raise error
        await trio.lowlevel.checkpoint()
        self.delivered.append(outbound)
        self.delivered_at[outbound.delivery_id] = trio.current_time()
        self._notify()

    @property
    def latency(self) -> float:
        """Trio seconds each delivery waits first; a later set is checked as one given is."""
        return self._latency

    @latency.setter
    def latency(self, latency: float) -> None:
        check_seconds("latency", latency)
        self._latency = seconds_bound(latency)  # an int no float holds: as inf

    @property
    def fail(self) -> Failure:
        """What each delivery does (see the class docstring); a test sets it to start or stop
        failing, and what is no failure is refused naming ``fail`` then too."""
        return self._fail

    @fail.setter
    def fail(self, fail: Failure) -> None:
        _check_fail(fail)
        self._fail = fail

    def _failure(self, outbound: Outbound) -> BaseException | None:
        fail = self._fail
        if fail is None or fail is False:
            return None
        if fail is True:
            return ConnectionError(f"delivery {outbound.delivery_id} refused")
        if isinstance(fail, BaseException):
            return fail
        if isinstance(fail, type) and issubclass(fail, BaseException):
            return fail(f"delivery {outbound.delivery_id} refused")
        result = fail(outbound)
        if result is None or result is False:
            return None
        if result is True:
            result = ConnectionError
        if isinstance(result, type) and issubclass(result, BaseException):
            return result(f"delivery {outbound.delivery_id} refused")
        if isinstance(result, BaseException):
            return result
        return TypeError(f"MemoryRoute.fail: must answer an exception, a bool or None, "
                         f"got {result!r}")

    async def prompt_user(self, prompt: Prompt) -> str | None:
        """Record *prompt*; answer with the next of :attr:`answers`, or None (unanswered) when
        none is left. Always a checkpoint."""
        self.prompts.append(prompt)
        await trio.lowlevel.checkpoint()
        return self.answers.popleft() if self.answers else None

    async def request_approval(self, request: ApprovalRequest) -> bool | str | ApprovalDecision:
        """Record *request*; answer with the next of :attr:`decisions`, or False (denied)
        when none is left. Always a checkpoint."""
        self.approvals.append(request)
        await trio.lowlevel.checkpoint()
        return self.decisions.popleft() if self.decisions else False

    def texts(self) -> list[str]:
        """The texts of the deliveries it accepted, in order."""
        return [outbound.text for outbound in self.delivered]


class ReconcilingMemoryRoute(MemoryRoute):
    """A :class:`MemoryRoute` that can reconcile ``unknown`` rows, truthfully.

    For each id it answers ``"sent"`` when it accepted that delivery, ``"missing"`` when
    ``deliver`` was never called with it or every call raised the route's ``fail`` (the
    platform provably does not have it), and ``None`` (undecided) when a call started but did
    not finish (cut by a cancel, or still running). ``reconciled`` lists the ids it was asked
    about, in order.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reconciled: list[str] = []

    async def reconcile(self, delivery_ids: list[str]) -> Mapping[str, str | None]:
        """Answer each id truthfully (see the class docstring). Always a checkpoint."""
        await trio.lowlevel.checkpoint()
        self.reconciled.extend(delivery_ids)
        accepted = {outbound.delivery_id for outbound in self.delivered}
        started = collections.Counter(outbound.delivery_id for outbound in self.attempted)
        return {delivery_id: "sent" if delivery_id in accepted
                else None if started[delivery_id] > self._refused[delivery_id] else "missing"
                for delivery_id in delivery_ids}
