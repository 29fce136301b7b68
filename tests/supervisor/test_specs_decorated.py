"""``ChildSpec`` reads its ``fn``'s signature to refuse one it cannot call as
``fn(ctx, task_status=...)``; ``inspect.signature`` follows ``functools.wraps`` to the wrapped
function, whose signature a decorator may change (one that passes the child a dependency). Such
a child starts and runs, and was refused, naming a signature the supervisor never calls."""

from __future__ import annotations

import functools
from typing import Any

import trio

from tidings.supervisor import ChildSpec, open_supervisor


def with_db(fn: Any) -> Any:
    """A decorator that hands the child its dependency: the wrapper is what is called."""
    @functools.wraps(fn)
    async def wrapper(ctx: Any, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        await fn(ctx, "the db", task_status=task_status)
    return wrapper


@with_db
async def child(ctx: Any, db: str, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    task_status.started(db)
    async for _ in ctx.mailbox:
        pass


async def test_a_child_whose_decorator_changes_its_signature_is_taken_and_runs() -> None:
    spec = ChildSpec("a", child)
    async with open_supervisor([spec]) as sup:
        assert sup.child_task("a") is not None
