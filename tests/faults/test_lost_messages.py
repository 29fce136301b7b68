"""A message a fault takes from a mailbox is never silently lost: its sender is told."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.errors import MailboxClosedError, RestartIntensityExceeded, StoreError
from tidings.supervisor import ChildSpec, Intensity, open_supervisor
from tidings.testing import FaultPlan, FaultRule, Seam


@pytest.mark.parametrize("seam", [Seam.RECEIVE, Seam.BEFORE_MESSAGE])
@pytest.mark.parametrize("action", ["raise", "cancel"])
async def test_a_write_taken_by_a_crashing_writer_fails_instead_of_hanging(
        db_path, workspace, seam, action) -> None:
    plan = FaultPlan([FaultRule(seam, child="writer", action=action, nth=3)])
    async with tidings.open_runtime(db_path, workspace=workspace, fault_plan=plan) as rt:
        outcomes = []
        for _ in range(4):
            try:
                outcomes.append(await rt.create_session(channel="web"))
            except StoreError as exc:
                outcomes.append(exc)
        [lost] = [o for o in outcomes if isinstance(o, StoreError)]
        assert "writer" in str(lost)
        assert len(plan.injected) == 1
        assert [r.error_type for r in rt.supervisor.restart_log] == ["InjectedFault"]


async def test_messages_left_in_a_closed_mailbox_go_to_the_dead_letter_hook() -> None:
    lost: list[tuple[object, type[BaseException]]] = []
    release = trio.Event()

    async def slow(ctx, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        await release.wait()
        await trio.sleep_forever()

    spec = ChildSpec("slow", slow, shutdown_timeout=0, mailbox_size=4,
                     dead_letter=lambda message, error: lost.append((message, type(error))))
    async with open_supervisor([spec]) as sup:
        sup.mailbox("slow").send_nowait("a")
        sup.mailbox("slow").send_nowait("b")
    assert lost == [("a", MailboxClosedError), ("b", MailboxClosedError)]



async def test_a_shielded_write_during_an_escalation_fails_instead_of_hanging(db_path,
                                                                              workspace) -> None:
    """The writer exceeds its restart intensity while a turn is open: the turn's shielded
    end-of-turn write must not wait for a writer that will never run again."""
    async def escalate_during_a_turn() -> None:
        async with tidings.open_runtime(db_path, workspace=workspace,
                                        intensity=Intensity(max_restarts=1, period=60)) as rt:
            session_id = await rt.create_session(channel="web")
            async with rt.open_turn(session_id):
                assert rt.supervisor.inject_cancel("writer")
                await rt.create_session(channel="web")  # the writer is back
                assert rt.supervisor.inject_cancel("writer")
                await trio.sleep_forever()

    with pytest.raises(RestartIntensityExceeded) as raised:
        await escalate_during_a_turn()
    assert raised.value.child == "writer"
