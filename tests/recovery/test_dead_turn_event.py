"""A turn an earlier process left ``running`` is ended ``failed`` by the next start's
recovery, and the event feed says so once (``turn.failed``), as for any other turn's end."""

from __future__ import annotations

import trio

import tidings

from .test_recovery_clock_behind import Clock, T, leave_a_running_turn


async def test_a_dead_turn_ended_by_recovery_appends_turn_failed_once(db_path, workspace,
                                                                     quick_autojump_clock) -> None:
    await leave_a_running_turn(db_path, workspace)
    for _ in range(2):  # the second start finds nothing to end
        async with tidings.open_runtime(db_path, workspace=workspace, clock=Clock(T)) as rt:
            feed = rt.events(after_seq=0)
            events = []
            while True:
                with trio.move_on_after(1) as waited:
                    events.append(await feed.__anext__())
                if waited.cancelled_caught:
                    break
    turns = [event for event in events if event.type.startswith("turn.")]
    assert [event.type for event in turns] == ["turn.started", "turn.failed"]
    assert turns[0].data["turn_id"] == turns[1].data["turn_id"]
    assert "stopped before it recorded" in turns[1].data["error"]
