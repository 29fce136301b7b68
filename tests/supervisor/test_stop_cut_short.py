"""A graceful stop cut short by an outer cancellation: strategy x where the cancellation lands.

Whether the deadline hits while the body runs (the graceful stop never starts) or while the
shutdown ladder waits for a slow child (it stops half way), once ``open_supervisor`` has
exited every mailbox must be closed for good: a sender blocked on a full one is released with
MailboxClosedError, what was buffered goes to the dead-letter hook, later sends fail, and the
statistics say every child (and the supervisor) stopped.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.errors import MailboxClosedError, RestartIntensityExceeded
from tidings.supervisor import ChildSpec, Intensity, open_supervisor

STRATEGIES = ("one_for_one", "one_for_all", "rest_for_one")
WHERE = ("body", "ladder", "ladder_after_body_error")
NAMES = ("deaf", "mid", "slow")


async def _deaf(ctx, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """A child that never reads its mailbox, so a sender can be left blocked on it."""
    task_status.started()
    await trio.sleep_forever()


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_a_stop_cut_short_still_closes_every_mailbox_and_reports_stopped(
        journal, autojump_clock, live_tasks, strategy, where) -> None:
    before = live_tasks()
    dead: list[tuple[str, object, str]] = []

    def hook(name: str):
        return lambda message, error: dead.append((name, message, type(error).__name__))

    specs = [ChildSpec("deaf", _deaf, mailbox_size=1, shutdown_timeout=1.0,
                       dead_letter=hook("deaf")),
             ChildSpec("mid", journal.worker(), dead_letter=hook("mid")),
             # stopped first (reverse order) and never ends by itself: the ladder waits
             ChildSpec("slow", journal.worker(stuck_at_shutdown=True), shutdown_timeout=None,
                       dead_letter=hook("slow"))]
    released: list[str] = []

    async def blocked_send(mailbox) -> None:
        try:
            await mailbox.send("blocked")
        except MailboxClosedError as exc:
            released.append(exc.child)

    body_error = ValueError("from the body")
    raised: list[ValueError] = []
    async with trio.open_nursery() as senders:  # outside the supervisor: nobody cancels them
        with trio.move_on_after(5.0) as deadline:
            try:
                async with open_supervisor(specs, strategy=strategy) as sup:
                    mailboxes = {name: sup.mailbox(name) for name in NAMES}
                    mailboxes["deaf"].send_nowait("buffered")  # now full
                    senders.start_soon(blocked_send, mailboxes["deaf"])
                    await trio.testing.wait_all_tasks_blocked()
                    assert mailboxes["deaf"].statistics().senders_waiting == 1
                    if where == "body":
                        await trio.sleep_forever()
                    if where == "ladder_after_body_error":
                        raise body_error
            except ValueError as exc:
                raised.append(exc)
        # a body error is never lost to the cancellation of the stop
        assert raised == ([body_error] if where == "ladder_after_body_error" else [])
        assert trio.current_time() == 5.0
        assert deadline.cancelled_caught == (where != "ladder_after_body_error")
        if where != "body":  # the ladder had begun: "slow" left its loop, then was stuck
            assert [event[:2] for event in journal.of("stop")] == [("stop", "slow")]
        await trio.testing.wait_all_tasks_blocked()
        assert released == ["deaf"], "a sender is still blocked on a mailbox nobody reads"
        senders.cancel_scope.cancel()  # (so a failure above cannot hang the test)

    assert dead == [("deaf", "buffered", "MailboxClosedError")]
    for name, mailbox in mailboxes.items():
        assert mailbox.statistics().closed, name
        with pytest.raises(MailboxClosedError):
            mailbox.send_nowait("late")
    stats = sup.statistics()
    assert {child.name: child.state for child in stats.children} == dict.fromkeys(
        NAMES, "stopped")
    assert stats.state == ("failed" if where == "ladder_after_body_error" else "stopped")
    assert sup.restart_log == ()  # an outer cancellation is no crash
    assert live_tasks() == before


async def test_a_sender_is_released_when_the_stop_is_cut_short_not_after_slow_cleanups(
        journal, autojump_clock) -> None:
    async def deaf_with_slow_cleanup(ctx, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        try:
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):  # e.g. a flush that must finish
                await trio.sleep(2.0)

    specs = [ChildSpec("deaf", deaf_with_slow_cleanup, mailbox_size=0),
             ChildSpec("slow", journal.worker(stuck_at_shutdown=True), shutdown_timeout=None)]
    released_at: list[float] = []

    async def blocked_send(mailbox) -> None:
        try:
            await mailbox.send("blocked")
        except MailboxClosedError:
            released_at.append(trio.current_time())

    async with trio.open_nursery() as senders:
        with trio.move_on_after(5.0):
            async with open_supervisor(specs) as sup:
                senders.start_soon(blocked_send, sup.mailbox("deaf"))
                await trio.testing.wait_all_tasks_blocked()
            # the ladder of "slow" waits until the deadline; "deaf" was never reached
        assert trio.current_time() == 7.0  # the supervisor waited for deaf's cleanup
    assert released_at == [5.0]  # but its sender was told at once, when the stop was cut short


async def test_a_stop_child_cut_short_cancels_the_child_it_had_forgotten(
        journal, autojump_clock, live_tasks) -> None:
    """stop_child forgets the child before its ladder; a caller cancelled during the ladder
    must not leave it running unsupervised (the supervisor's exit then waited forever)."""
    before = live_tasks()
    specs = [ChildSpec("stuck", journal.worker(stuck_at_shutdown=True), shutdown_timeout=100.0)]
    async with open_supervisor(specs) as sup:
        with trio.move_on_after(1.0):
            await sup.stop_child("stuck")
        await trio.testing.wait_all_tasks_blocked()
        assert [event[0] for event in journal.of("stop", "cancelled")] == ["stop", "cancelled"]
        assert journal.of("cancelled")[0][3] == "stop of stuck cut short"
        stopped_at = trio.current_time()
    assert trio.current_time() == stopped_at == 1.0
    assert live_tasks() == before


class _Interrupt(BaseException):
    """A ``BaseException`` that is not an ``Exception`` (a Ctrl-C): it ends the supervisor."""


async def _interrupts(ctx, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    await trio.lowlevel.checkpoint()
    raise _Interrupt("stop everything")


async def test_a_child_cancelled_by_a_siblings_interrupt_closes_its_mailbox_at_once(
        autojump_clock) -> None:
    """A sibling's interrupt cancels every child, and none will be restarted. The body's
    shielded cleanup may then send to a child and wait for the answer (a turn recording its
    end with the store's writer). The child's mailbox is closed as the child's task ends, not
    only once the whole supervisor has exited (which waits for that very cleanup): a message
    it buffered goes to its dead-letter hook at once, so such a wait is answered instead of
    lasting forever, and a later send fails."""
    dead: list[object] = []
    seen: list[object] = []
    # busy, not reading (a writer in the middle of a commit): a send is buffered
    specs = [ChildSpec("worker", _deaf, mailbox_size=4,
                       dead_letter=lambda message, error: dead.append(message)),
             ChildSpec("interrupts", _interrupts)]

    async def run() -> None:
        async with open_supervisor(specs) as sup:
            mailbox = sup.mailbox("worker")
            try:
                await trio.sleep_forever()
            finally:
                with trio.CancelScope(shield=True):
                    try:
                        mailbox.send_nowait("end of the turn")
                    except MailboxClosedError:
                        seen.append("refused")
                    await trio.testing.wait_all_tasks_blocked()  # every child has ended
                    seen.append(list(dead))
                    try:
                        mailbox.send_nowait("after the child ended")
                    except MailboxClosedError:
                        seen.append("refused")

    with pytest.raises(_Interrupt):  # (an error raised in the cleanup would be lost to it)
        await run()
    assert seen in (["refused", [], "refused"], [["end of the turn"], "refused"])


async def test_a_child_that_crashes_while_its_supervisor_stops_closes_its_mailbox(
        journal, autojump_clock) -> None:
    """A sibling's escalation stops the supervisor; the body's shielded cleanup still talks to
    a child (a turn recording its end with the store's writer), and that child crashes now
    (seen in a seeded chaos run: a fault on the writer). It will not be restarted, so its
    mailbox is closed at once: what it buffered goes to its dead-letter hook and a later send
    fails. It stayed open, so the cleanup's write waited forever, with no timer left: a hang."""
    dead: list[object] = []
    seen: list[object] = []
    specs = [ChildSpec("writer", journal.worker(), mailbox_size=4,
                       dead_letter=lambda message, error: dead.append(message)),
             ChildSpec("boom", journal.worker())]

    async def run() -> None:
        async with open_supervisor(specs, intensity=Intensity(max_restarts=0, period=60.0)
                                   ) as sup:
            writer = sup.mailbox("writer")
            try:
                await sup.mailbox("boom").send("crash")  # escalates: the body is cancelled
                await trio.sleep_forever()
            finally:
                with trio.CancelScope(shield=True):
                    writer.send_nowait("crash")  # the writer crashes while stopping
                    await trio.testing.wait_all_tasks_blocked()
                    try:
                        writer.send_nowait("end of the turn")
                    except MailboxClosedError:
                        seen.append("refused")
                    seen.append(list(dead))

    with trio.fail_after(1000), pytest.raises(RestartIntensityExceeded):  # hang guard
        await run()
    assert seen == ["refused", []]
