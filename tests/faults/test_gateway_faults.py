"""The websocket gateway under seeded random faults: clients connect, send messages and ack
what they receive while the runtime's actors (writer, lanes, recovery, turn tasks) fail at
random. The gateway stays up (or the runtime escalates with one clear error), nothing leaks,
every turn reports exactly one end, and after a restart without faults every delivery ends in
a terminal state."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import tidings
from tidings.channels import GatewayChannel, GatewayClient, GatewayClosed, GatewayConfig
from tidings.errors import RestartIntensityExceeded
from tidings.testing import InvariantChecker, random_fault_plan

TOKEN = "gateway-faults-token"


class RecordingGateway(GatewayChannel):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.events: list = []

    def on_task_lifecycle(self, event) -> None:
        self.events.append(event)
        super().on_task_lifecycle(event)


async def client(url: str, n: int, messages: int, seen: dict[str, int]) -> None:
    """Send *messages*, acking every delivery; reconnect once (with ``after_seq``) if the
    server drops the connection. Ends once every message is accepted, refused or lost."""
    after_seq = None
    for _attempt in range(2):
        try:
            async with GatewayClient.connect(url, token=TOKEN, conversation=f"chat-{n}",
                                             after_seq=after_seq) as conn:
                for i in range(messages):
                    await conn.message(f"client {n} message {i}", message_id=f"{n}-{i}")
                answered = 0
                while answered < messages:
                    frame = await conn.receive()
                    kind = frame.get("type")
                    if kind == "delivery":
                        await conn.ack(frame["delivery_id"])
                        seen["deliveries"] = seen.get("deliveries", 0) + 1
                    elif kind in ("accepted", "error"):
                        answered += 1
                        seen[kind] = seen.get(kind, 0) + 1
                await conn.aclose()
                return
        except (GatewayClosed, OSError) as exc:
            seen[type(exc).__name__] = seen.get(type(exc).__name__, 0) + 1
            after_seq = 0


@pytest.mark.parametrize("rate", [0.003, 0.01])
@pytest.mark.parametrize("seed", [1, 2])
async def test_the_gateway_under_random_faults_keeps_every_invariant(tmp_path, workspace,
                                                                     seed: int,
                                                                     rate: float) -> None:
    db_path = tmp_path / "state" / "gateway.db"
    plan = random_fault_plan(seed, rate)
    checker = InvariantChecker()
    seen: dict[str, int] = {}
    gateway = None
    with checker.watch(), trio.fail_after(60):  # a watchdog: a hang is the failure
        error = None
        try:
            async with tidings.open_runtime(db_path, workspace=workspace, fault_plan=plan,
                                            grace=0.2) as rt:
                gateway = RecordingGateway(rt, GatewayConfig(token=TOKEN, port=0,
                                                             ack_window=4))
                try:
                    async with gateway.serving() as port:
                        async with trio.open_nursery() as nursery:
                            for n in range(3):
                                nursery.start_soon(client, f"ws://127.0.0.1:{port}", n, 3,
                                                   seen)
                        with trio.move_on_after(10):
                            await gateway.wait_idle()
                finally:
                    with trio.CancelScope(shield=True):
                        await gateway.aclose()
                checker.check_running(rt)
        except RestartIntensityExceeded as exc:
            error = exc
        checker.ended(error)
    assert gateway is not None
    checker.check_lifecycles(gateway.events)
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        await rt.recover()  # no route: what was queued ends unrouted
        # Once its lane wrote it: every task blocked is no sign of that (the write may be in
        # the writer's thread), and a lane that has not taken its row by the stop leaves it
        # queued (as any stop does).
        with trio.fail_after(30):  # hang guard
            while await rt.deliveries(status="queued"):
                await trio.testing.wait_all_tasks_blocked()
                await trio.lowlevel.checkpoint()
    checker.check_database(db_path)
    checker.assert_ok()
    assert seen.get("accepted", 0) + seen.get("error", 0) > 0, seen


async def test_closing_the_gateway_survives_a_writer_crash_on_the_way(tmp_path,
                                                                      workspace) -> None:
    """aclose() turns what clients left unacked unknown; if the writer loses that write
    (it crashed just then, and restarts), closing goes on: the rows stay sending, and become
    unknown at the next start, as after any crash."""
    db_path = tmp_path / "state" / "gateway.db"
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        gateway = RecordingGateway(rt, GatewayConfig(token=TOKEN, port=0, ack_window=4))
        async with gateway.serving() as port:  # noqa: SIM117 - the client needs the port
            async with GatewayClient.connect(f"ws://127.0.0.1:{port}", token=TOKEN,
                                             conversation="c") as conn:
                await conn.message("hello", message_id="m1")
                while (await conn.receive()).get("type") != "delivery":
                    pass  # received, never acked
                rt.store.attach(None)  # the writer is unreachable for a moment
                await gateway.aclose()
                rt.store.attach(rt.supervisor.mailbox("writer").send,
                                rt.supervisor.mailbox("writer").send_nowait)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        statuses = {d.status for d in await rt.deliveries()}
    assert "sending" not in statuses
