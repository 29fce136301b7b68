"""Test children for the failure matrix's moments: they fail how and when they are told.

Each journals ``start`` / ``ready`` / ``stop`` (its mailbox was closed) / ``cancelled`` (with
trio's reason) / ``ended``. A message ``"raise"``, ``"return"`` or ``"halt"`` ends it that way.
:func:`crash_run` is the supervisor run the moments that crash children while all run share.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping, Sequence

import trio

from tidings.supervisor import ChildSpec, Intensity, open_supervisor

__all__ = ["Boom", "Halt", "child", "crash_run", "later_starts"]


class Halt(BaseException):
    """A BaseException that is no Exception (KeyboardInterrupt-like): it is no crash."""


class Boom(Exception):
    """What these children raise when told to fail."""


class _Return(Exception):
    """No error: :func:`child` turns it into a plain return."""


def _end(how: str, name: str) -> None:
    if how == "raise":
        raise Boom(f"{name} failed")
    if how == "halt":
        raise Halt
    if how == "return":
        raise _Return
    if how == "never ready":
        return
    raise AssertionError(f"no such ending: {how}")


def child(journal, *, ready_after: Mapping[int, float] | None = None,
          fails: Mapping[int, tuple[float, str]] | None = None,
          fails_at_start: Mapping[int, str] | None = None, stops_in: float = 0.0,
          stubborn: float = 0.0, fails_when_stopped: str | None = None) -> Callable[..., object]:
    """A child function. By incarnation: ``ready_after`` seconds before it is ready;
    ``fails`` ``(after, how)``: it ends so that long after it is ready; ``fails_at_start``:
    it ends so before it is ready (``"never ready"``: it waits for ever instead). Once its
    mailbox is closed: ``stops_in`` seconds of cleanup, then it ends as ``fails_when_stopped``
    says; ``stubborn``: it waits for ever, and when cancelled goes on for that long,
    shielded."""
    ready_after = ready_after or {}
    fails = fails or {}
    fails_at_start = fails_at_start or {}

    async def run(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        journal.add("start", ctx)
        try:
            await trio.sleep(ready_after.get(ctx.incarnation, 0.0))
            if ctx.incarnation in fails_at_start:
                _end(fails_at_start[ctx.incarnation], ctx.name)
                await trio.sleep_forever()
            journal.add("ready", ctx)
            task_status.started()
            after, how = fails.get(ctx.incarnation, (math.inf, ""))
            with trio.move_on_after(after) as timer:
                async for message in ctx.mailbox:
                    _end(message, ctx.name)
            if timer.cancelled_caught:
                _end(how, ctx.name)
            journal.add("stop", ctx)
            await trio.sleep(stops_in)
            if fails_when_stopped is not None:
                _end(fails_when_stopped, ctx.name)
            if stubborn:
                try:
                    await trio.sleep_forever()
                finally:
                    with trio.CancelScope(shield=True):
                        await trio.sleep(stubborn)
        except trio.Cancelled as exc:
            journal.add("cancelled", ctx, exc.reason)
            raise
        except _Return:
            return
        finally:
            journal.add("ended", ctx)

    return run


def later_starts(journal, initial: int = 3) -> list[tuple[object, ...]]:
    """The starts after the first ``initial``, with their times: ``(name, incarnation, time)``."""
    return [(*event[1:3], journal.times[("start", *event[1:3])])
            for event in journal.of("start")][initial:]


def crash_run(specs: Sequence[ChildSpec], strategy: str, opened: list[object],
              crashes: Sequence[tuple[float, str, str]], *,
              settle: float) -> Callable[[], Awaitable[None]]:
    """A run of a supervisor of a, b and c (``strategy``, at most 5 restarts in 60 s): each
    crash ``(pause, name, message)`` is sent ``pause`` seconds after the one before; ``settle``
    seconds after the last, a, b and c all run. The supervisor is appended to ``opened``, for
    the checks after the run (or after the halt that ended it)."""

    async def run() -> None:
        async with open_supervisor(specs, strategy=strategy,
                                   intensity=Intensity(max_restarts=5, period=60.0)) as sup:
            opened.append(sup)
            for pause, name, message in crashes:
                if pause:
                    await trio.sleep(pause)
                await sup.mailbox(name).send(message)
            await trio.sleep(settle)
            assert [(c.name, c.state) for c in sup.statistics().children] == [
                (name, "running") for name in "abc"]

    return run
