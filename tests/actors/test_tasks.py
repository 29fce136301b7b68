"""Turn tasks in the runtime's supervision tree: started at once, stopped at exit with a grace."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import tidings
from tidings.errors import RuntimeClosedError, ValidationError


async def test_a_task_runs_in_the_runtime_tree_after_the_caller_returned(rt) -> None:
    done = trio.Event()
    seen: list[str] = []

    async def work(word: str) -> None:
        seen.append(word)
        done.set()

    name = rt.start_task("greet", work, "hello")
    assert name.startswith("task:greet:")
    await done.wait()
    assert seen == ["hello"]
    names = [child.name for child in rt.supervisor.statistics().children]
    assert names[-1] == "tasks"  # started last, so it stops first


async def test_task_names_are_unique_and_a_failing_task_is_forgotten(rt) -> None:
    async def boom() -> None:
        raise KeyError("boom")

    first = rt.start_task("x", boom)
    second = rt.start_task("x", boom)
    assert first != second
    await trio.testing.wait_all_tasks_blocked()
    assert len(rt.tasks) == 0
    assert rt.tasks.statistics().started == 2


async def test_running_tasks_get_the_grace_then_are_cancelled_with_reason_shutdown(
        db_path, workspace, quick_autojump_clock) -> None:
    reasons: list[str | None] = []
    cancelled_at: list[float] = []
    quick_done = trio.Event()

    async def slow() -> None:
        try:
            await trio.sleep_forever()
        except trio.Cancelled as cancelled:
            reasons.append(cancelled.reason)
            cancelled_at.append(trio.current_time())
            raise

    async def quick() -> None:
        await trio.sleep(0.5)
        quick_done.set()

    async with tidings.open_runtime(db_path, workspace=workspace, grace=1.0) as rt:
        rt.start_task("slow", slow)
        rt.start_task("quick", quick)
        await trio.testing.wait_all_tasks_blocked()
        started = trio.current_time()
    # Read when the cancel landed, not when the exit ended: the rest of the shutdown waits on
    # the writer's real I/O, during which the autojump clock may move to any later deadline.
    assert cancelled_at[0] - started == pytest.approx(1.0)
    assert quick_done.is_set()  # it finished within the grace
    assert reasons == ["shutdown"]
    with pytest.raises(RuntimeClosedError):
        rt.start_task("late", slow)


async def test_a_task_started_during_the_grace_is_refused(db_path, workspace,
                                                         quick_autojump_clock) -> None:
    refused: list[BaseException] = []

    async def starter(rt) -> None:
        await trio.sleep(0.1)  # inside the grace period
        try:
            rt.start_task("late", trio.sleep_forever)
        except RuntimeClosedError as exc:
            refused.append(exc)

    async with tidings.open_runtime(db_path, workspace=workspace, grace=1.0) as rt:
        rt.start_task("starter", starter, rt)
    assert len(refused) == 1


async def test_bad_task_arguments_name_their_field(rt) -> None:
    with pytest.raises(ValidationError) as caught:
        rt.start_task("", trio.sleep_forever)
    assert caught.value.field == "name"
    with pytest.raises(ValidationError) as caught:
        rt.start_task("x", None)
    assert caught.value.field == "async_fn"
