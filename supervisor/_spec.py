"""What a supervisor is told about a child (:class:`ChildSpec`) and what a child is given."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Literal, final

import attrs

from tidings.errors import ValidationError
from tidings.supervisor._backoff import Backoff
from tidings.supervisor._callables import certainly_async, certainly_sync, wrong_signature
from tidings.supervisor._seconds import past_float_as_inf

if TYPE_CHECKING:
    from tidings.supervisor._mailbox import MailboxReceiver
    from tidings.supervisor._supervisor import Supervisor

__all__ = ["RESTART_TYPES", "STRATEGIES", "ChildContext", "ChildFunction", "ChildSpec",
           "DeadLetter", "Restart", "Strategy", "check_unique_names", "child_specs"]

Restart = Literal["permanent", "transient", "temporary"]
"""``permanent``: restarted whenever it ends; ``transient``: only when it ends with an exception;
``temporary``: never restarted (its failure is logged and recorded, then it is forgotten)."""
RESTART_TYPES: tuple[Restart, ...] = ("permanent", "transient", "temporary")

Strategy = Literal["one_for_one", "one_for_all", "rest_for_one"]
"""``one_for_one``: restart the child that ended; ``one_for_all``: stop all the others (reverse
start order) and restart all (start order); ``rest_for_one``: the same for the child and those
started after it."""
STRATEGIES: tuple[Strategy, ...] = ("one_for_one", "one_for_all", "rest_for_one")

ChildFunction = Callable[..., Awaitable[object]]
"""``async def fn(ctx: ChildContext, *, task_status=trio.TASK_STATUS_IGNORED) -> None``."""

DeadLetter = Callable[[object, BaseException], object]
"""``dead_letter(message, error)``: told of a message its child will never get (sync)."""


def _timeout(name: str, field: str, value: object, *, zero_ok: bool) -> None:
    if value is None:
        return
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not (value >= 0 if zero_ok else value > 0)):
        bound = ">= 0" if zero_ok else "> 0"
        raise ValidationError(field, f"child {name!r}: must be None or seconds {bound}, "
                                     f"got {value!r}")


@final
@attrs.frozen
class ChildSpec:
    """How to run and supervise one child.

    ``fn(ctx, task_status=...)`` runs one incarnation: it sets up, calls
    ``task_status.started()`` when ready, then usually serves ``async for msg in ctx.mailbox``.
    A function that cannot be called so (its signature read with ``inspect``; one that cannot
    be read is taken on trust) is refused here, naming ``fn``: every start would fail.
    ``start_timeout`` bounds the time to readiness and ``shutdown_timeout`` the time the shutdown
    ladder waits after closing the mailbox before it cancels the child (``None``: no limit, the
    right choice for a nested supervisor; ``0``: cancel at once; ``inf``, or an integer past a
    float's range, is no limit as ``None`` is). ``mailbox_size`` bounds the
    mailbox (``0``: a rendezvous). ``backoff`` delays its restarts (after a crash,
    or a ``permanent`` child's return).

    ``on_exit()`` (sync; optional) is called once the child's task has ended for good: it
    returned or crashed and is not restarted, or it was stopped, also when its function never
    ran (a failure at child start, or stopped before it began). A child that a
    ``one_for_all`` / ``rest_for_one`` group restart stops (or that fails into one) runs again,
    so it is not called then; if the group restart never comes (its supervisor stops first),
    it is. A child that ``start_child`` / ``start_child_soon`` refuses (its supervisor is
    stopping) is never added: not called. What it raises is logged.

    ``dead_letter(message, error)`` (sync; optional) is told of every message the child will
    never get: one a fault plan took at the ``receive`` / ``before_message`` seams, and what is
    still buffered when the mailbox is closed for good. A request/reply child (the store
    writer) answers its sender there, so nobody waits forever for a lost message. It must not
    block; what it raises is logged and dropped.
    """

    name: str
    fn: ChildFunction = attrs.field(repr=False)
    restart: Restart = "permanent"
    shutdown_timeout: float | None = attrs.field(default=5.0, converter=past_float_as_inf)
    start_timeout: float | None = attrs.field(default=10.0, converter=past_float_as_inf)
    mailbox_size: int = 64
    backoff: Backoff | None = None
    dead_letter: DeadLetter | None = attrs.field(default=None, repr=False)
    on_exit: Callable[[], object] | None = attrs.field(default=None, repr=False)

    def __attrs_post_init__(self) -> None:
        name = self.name
        if not isinstance(name, str) or not name:
            raise ValidationError("name", f"must be a non-empty string, got {name!r}")
        if not callable(self.fn) or certainly_sync(self.fn):
            raise ValidationError("fn", f"child {name!r}: must be an async function "
                                        f"(async def), got {self.fn!r:.80}")
        if (wrong := wrong_signature(self.fn, "task_status")) is not None:
            # called so at every start: each one failed, a ChildStartError naming no field
            raise ValidationError("fn", f"child {name!r}: must take the context and a "
                                        f"task_status keyword (async def fn(ctx, *, "
                                        f"task_status)), got fn{wrong!s:.80}")
        if self.restart not in RESTART_TYPES:
            raise ValidationError("restart", f"child {name!r}: must be one of "
                                             f"{', '.join(RESTART_TYPES)}, got {self.restart!r}")
        _timeout(name, "shutdown_timeout", self.shutdown_timeout, zero_ok=True)
        _timeout(name, "start_timeout", self.start_timeout, zero_ok=False)
        size = self.mailbox_size
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ValidationError("mailbox_size", f"child {name!r}: must be an int >= 0, "
                                                  f"got {size!r}")
        for field in ("on_exit", "dead_letter"):  # called, never awaited
            hook = getattr(self, field)
            if hook is not None and (not callable(hook) or certainly_async(hook)):
                raise ValidationError(field, f"child {name!r}: must be a plain (sync) callable "
                                             f"or None, got {hook!r:.80}")
        if self.backoff is not None and not isinstance(self.backoff, Backoff):
            raise ValidationError("backoff", f"child {name!r}: must be a Backoff or None, "
                                             f"got {self.backoff!r}")


@final
@attrs.frozen
class ChildContext:
    """What one incarnation of a child is given: its name, incarnation number (1, 2, ...), the
    receive side of its mailbox and the supervisor that runs it."""

    name: str
    incarnation: int
    mailbox: MailboxReceiver
    supervisor: Supervisor = attrs.field(repr=False)


def child_specs(children: Iterable[ChildSpec]) -> tuple[ChildSpec, ...]:
    """``children`` as a tuple, refused by name when it is no iterable: ``None``, or one
    :class:`ChildSpec` given where a list of them is (``tuple()`` raised a bare TypeError)."""
    try:
        iterator = iter(children)
    except TypeError:
        raise ValidationError("children", f"must be an iterable of ChildSpec objects, "
                                          f"got {children!r:.80}") from None
    return tuple(iterator)


def check_unique_names(specs: tuple[ChildSpec, ...]) -> None:
    """Raise :class:`ValidationError` unless every item is a ChildSpec with a unique name."""
    seen: set[str] = set()
    for spec in specs:
        if not isinstance(spec, ChildSpec):
            raise ValidationError("children", f"must hold ChildSpec objects, got {spec!r}")
        if spec.name in seen:
            raise ValidationError("children", f"duplicate child name {spec.name!r}")
        seen.add(spec.name)

