"""A lane cut off while its ``unrouted`` write commits still ends that delivery's handle.

A lane that finds no route records the row ``unrouted`` and resolved the handle after its wait
for that write. Cut off during the wait (a crash, a fault plan's cancel: the supervisor
restarts it), the write still committed, but nothing resolved the handle: the row was no
longer ``queued`` (the restarted lane's refill does not read it) nor the lane's current row
(nothing settles it), so ``handle.wait()`` waited for good, though ``delivery_status`` said
``unrouted``. Found by a bind/unbind storm with lane restarts."""

from __future__ import annotations

import threading

import trio
import trio.testing

from tidings.store import Call


async def test_a_lane_cut_off_while_its_unrouted_write_commits_still_resolves_the_handle(
        rt) -> None:
    session_id = await rt.create_session(channel="web")
    entered, go = threading.Event(), threading.Event()  # the writer's thread waits for go
    submitted, landed = trio.Event(), trio.Event()
    real_commit, real_read = rt.store.commit, rt.store.read

    def hold_the_writer(conn) -> None:
        entered.set()
        go.wait(30)

    async def commit(ops, *, on_commit=None, on_error=None):
        if any(getattr(op, "to", None) == "unrouted" for op in ops):
            # The writer is busy with another batch until ``go``: the unrouted write waits in
            # its mailbox, and the lane waits for it, when the lane is cut off.
            rt.store.commit_nowait([Call(hold_the_writer)], on_commit=lambda _: None,
                                   on_error=lambda _: None)
            submitted.set()

            def committed(results):
                landed.set()
                if on_commit is not None:
                    on_commit(results)

            return await real_commit(ops, on_commit=committed, on_error=on_error)
        return await real_commit(ops, on_commit=on_commit, on_error=on_error)

    async def read(fn, *args):
        if submitted.is_set():  # the restarted lane reads what the write left
            await landed.wait()
        return await real_read(fn, *args)

    rt.store.commit, rt.store.read = commit, read
    with trio.fail_after(30):  # hang guard
        handle = await rt.notify(session_id, "nobody is bound")  # one write: no turn
        await submitted.wait()
        await trio.to_thread.run_sync(entered.wait, 30)
        lane = rt.dispatcher.lane(session_id)
        assert rt.dispatcher.supervisor.inject_cancel(lane.name)
        await trio.testing.wait_all_tasks_blocked()  # crashed, restarted, waiting to read
        go.set()
        assert await handle.wait() == "unrouted"
    assert (await rt.delivery_status(handle.delivery_id)).status == "unrouted"
    assert [r.action for r in rt.dispatcher.supervisor.restart_log] == ["restart"]
    assert rt.statistics().dispatch.unrouted == 1
