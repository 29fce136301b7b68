"""``rt.start_task`` refuses, by name and before anything is started: a plain (sync)
function as ``async_fn`` (it was started, called, and failed in the supervisor's log with a
``TypeError`` about awaiting its result), an ``on_abandon`` that is not callable (it was
kept, to fail when the task was abandoned), and a ``name`` that is no id (100,000 characters,
or a lone surrogate, went into every log line about the task)."""

from __future__ import annotations

import functools

import pytest
import trio
import trio.testing

from tidings.actors import MAX_ID_CHARS
from tidings.errors import ValidationError


async def _work(*args) -> None:
    await trio.lowlevel.checkpoint()


@pytest.mark.parametrize(("field", "kwargs"), [
    ("async_fn", {"async_fn": "SYNC"}),
    ("async_fn", {"async_fn": "SYNC_PARTIAL"}),
    ("on_abandon", {"on_abandon": 3}),
    ("name", {"name": "n" * (MAX_ID_CHARS + 1)}),
    ("name", {"name": "task\ud800"}),
], ids=["sync", "sync-partial", "on_abandon", "name-over", "name-surrogate"])
async def test_start_task_refuses_by_name_and_starts_nothing(rt, field, kwargs) -> None:
    called = []

    def sync_job(*args) -> None:
        called.append(args)

    given = {"name": "job", "async_fn": _work, **kwargs}
    if given["async_fn"] == "SYNC":
        given["async_fn"] = sync_job
    elif given["async_fn"] == "SYNC_PARTIAL":
        given["async_fn"] = functools.partial(sync_job, 1)
    with pytest.raises(ValidationError) as caught:
        rt.start_task(given["name"], given["async_fn"], on_abandon=given.get("on_abandon"))
    assert caught.value.field == field
    await trio.testing.wait_all_tasks_blocked()
    assert called == []
    assert rt.tasks.statistics().started == 0


async def test_start_task_still_runs_an_async_function(rt) -> None:
    done = trio.Event()

    async def job(value) -> None:
        assert value == 1
        done.set()

    rt.start_task("job", job, 1, on_abandon=lambda: None)
    with trio.fail_after(30):  # hang guard
        await done.wait()
