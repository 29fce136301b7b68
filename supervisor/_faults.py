"""The fault plan: a seam the kernel consults at named points, so tests inject faults on purpose.

A plan holds rules; at each seam the kernel asks :meth:`FaultPlan.consult` whether to inject a
fault for that child there, and acts on the answer: ``"raise"`` raises :class:`InjectedFault` at
that point, ``"cancel"`` cancels the child's *fault scope*, so trio delivers ``Cancelled`` at its
next checkpoint and the kernel turns that, at the child boundary, into an :class:`InjectedFault`
crash. A supervisor without a plan never consults anything.
"""

from __future__ import annotations

import enum
import fnmatch
import logging
import random
from collections.abc import Callable, Iterable
from typing import Literal, final

import attrs

from tidings.errors import InjectedFault, ValidationError
from tidings.supervisor._log import log_event

__all__ = ["CancelFault", "FaultAction", "FaultPlan", "FaultRule", "InjectionRecord", "Seam",
           "act_at", "injected_fault"]

FaultAction = Literal["raise", "cancel"]
_ACTIONS = ("raise", "cancel")


class Seam(enum.StrEnum):
    """The named points where the kernel consults a fault plan."""

    CHILD_START = "child_start"
    """Before each incarnation's function runs."""
    BEFORE_MESSAGE = "before_message"
    """Just before a received message is handed to the child."""
    AFTER_MESSAGE = "after_message"
    """When the child asks for the next message, or leaves its function, after handling one."""
    SEND = "send"
    """In :meth:`Mailbox.send` / :meth:`Mailbox.send_nowait`, for the target child's name."""
    RECEIVE = "receive"
    """When a message is taken from the mailbox."""
    SHUTDOWN = "shutdown"
    """When the shutdown ladder begins for the child."""
    DELIVER = "deliver"
    """Not consulted by the kernel: an actor consults it with :meth:`Supervisor.fault_point`
    around its platform I/O (the runtime's session lanes, right before a route's
    ``deliver()``, once the row's claim is durable)."""


def _to_seam(value: Seam | str) -> Seam:
    try:
        return Seam(value)
    except ValueError:
        seams = ", ".join(seam.value for seam in Seam)
        raise ValidationError("seam", f"must be one of {seams}, got {value!r}") from None


def _positive(field: str, value: int | None) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ValidationError(field, f"must be an int >= 1, got {value!r}")


@final
@attrs.frozen
class FaultRule:
    """Inject ``action`` at ``seam`` for children whose name matches ``child``.

    ``child`` is a name or an :mod:`fnmatch` pattern (``"*"``: every child). At most one trigger:
    ``nth=N`` fires on the N-th time that seam is hit for that child, ``every=N`` on every N-th
    hit, ``probability=p`` on each hit with probability ``p`` (drawn from the plan's seeded
    random source); none of them fires on every hit. ``times`` caps how often this rule fires in
    all (``None``: no cap).
    """

    seam: Seam = attrs.field(converter=_to_seam)
    child: str = "*"
    action: FaultAction = "raise"
    nth: int | None = None
    every: int | None = None
    probability: float | None = None
    times: int | None = None

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.child, str) or not self.child:
            raise ValidationError("child", f"must be a child name or pattern, got {self.child!r}")
        if self.action not in _ACTIONS:
            raise ValidationError("action", f"must be 'raise' or 'cancel', got {self.action!r}")
        _positive("nth", self.nth)
        _positive("every", self.every)
        _positive("times", self.times)
        p = self.probability
        if p is not None and (isinstance(p, bool) or not isinstance(p, int | float)
                              or not 0 <= p <= 1):
            raise ValidationError("probability", f"must be in [0, 1], got {p!r}")
        if sum(trigger is not None for trigger in (self.nth, self.every, p)) > 1:
            raise ValidationError("nth", "give at most one of nth, every and probability")

    def _fires(self, hit: int, rng: random.Random) -> bool:
        if self.nth is not None:
            return hit == self.nth
        if self.every is not None:
            return hit % self.every == 0
        if self.probability is not None:
            return rng.random() < self.probability
        return True


@final
@attrs.frozen
class InjectionRecord:
    """One fault a plan injected: ``action`` at ``seam`` for ``child``, on that seam's ``hit``."""

    child: str
    seam: str
    action: FaultAction
    hit: int


@final
class FaultPlan:
    """Rules the kernel consults at its seams, with per-child hit counters and a seeded RNG.

    ``injected`` lists every :class:`InjectionRecord` in order; :meth:`hits` reads the counters.
    The same rules, seed and sequence of hits inject the same faults. ``rules`` is a collection
    of :class:`FaultRule` (a list of one for a single rule) and ``seed`` an int; anything else
    is refused with :class:`ValidationError` naming them.
    """

    __slots__ = ("_fired", "_hits", "_rng", "injected", "rules", "seed")

    def __init__(self, rules: tuple[FaultRule, ...] | list[FaultRule] = (), seed: int = 0) -> None:
        # One rule or a string is no collection of rules (a string was taken letter by letter);
        # a seed that is no int (None: from the OS) would not replay the plan's probabilities.
        if isinstance(rules, FaultRule | str | bytes) or not isinstance(rules, Iterable):
            raise ValidationError("rules", f"must be a collection of FaultRule objects (a list "
                                           f"of one for a single rule), got {rules!r:.80}")
        self.rules = tuple(rules)
        for rule in self.rules:
            if not isinstance(rule, FaultRule):
                raise ValidationError("rules", f"must hold FaultRule objects, got {rule!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValidationError("seed", f"must be an int (to replay), got {seed!r:.80}")
        self.seed = seed
        self._rng = random.Random(seed)
        self._hits: dict[tuple[str, str], int] = {}
        self._fired = [0] * len(self.rules)
        self.injected: list[InjectionRecord] = []

    def __repr__(self) -> str:
        return f"FaultPlan(rules={self.rules!r}, seed={self.seed!r})"

    def hits(self, child: str, seam: Seam | str) -> int:
        """How many times ``seam`` has been hit for ``child`` so far."""
        return self._hits.get((child, str(seam)), 0)

    def consult(self, child: str, seam: Seam | str) -> FaultAction | None:
        """Count a hit of ``seam`` for ``child``; return the action to inject, or ``None``.

        The first matching rule that fires wins. Never blocks; never raises.
        """
        key = (child, str(seam))
        hit = self._hits.get(key, 0) + 1
        self._hits[key] = hit
        for index, rule in enumerate(self.rules):
            if rule.seam != key[1] or not fnmatch.fnmatchcase(child, rule.child):
                continue
            if rule.times is not None and self._fired[index] >= rule.times:
                continue
            if not rule._fires(hit, self._rng):
                continue
            self._fired[index] += 1
            self.injected.append(InjectionRecord(child, key[1], rule.action, hit))
            log_event(logging.INFO, "fault_injected", child=child, seam=key[1],
                      action=rule.action, hit=hit)
            return rule.action
        return None


def injected_fault(child: str, seam: Seam | str | None, action: FaultAction) -> InjectedFault:
    """The :class:`InjectedFault` the kernel raises (or converts a fault-scope cancel into)."""
    where = "" if seam is None else f" at {seam}"
    verb = "cancel" if action == "cancel" else "fault"
    return InjectedFault(f"injected {verb}{where} of {child}", child=child,
                         seam=None if seam is None else str(seam))


CancelFault = Callable[[Seam], bool]
"""Cancels the target child's current fault scope, so a ``"cancel"`` lands in that child."""


def act_at(plan: FaultPlan, child: str, seam: Seam, cancel_fault: CancelFault) -> bool:
    """Consult ``plan`` at ``seam``: raise for ``"raise"``; for ``"cancel"``, cancel the child's
    fault scope and return True (the caller then checkpoints, if it can, to deliver it). A
    cancel that finds no incarnation running (the child is starting, restarting or gone) has
    nothing to land in: it is logged as ``fault_missed``."""
    action = plan.consult(child, seam)
    if action == "raise":
        raise injected_fault(child, seam, "raise")
    if action == "cancel":
        if not cancel_fault(seam):
            log_event(logging.INFO, "fault_missed", child=child, seam=seam,
                      reason="no incarnation is running")
        return True
    return False
