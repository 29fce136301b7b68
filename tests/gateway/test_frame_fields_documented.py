"""The server frames carry exactly the fields README's "The websocket protocol (version 1)"
lists, with its defaults: a client written from the README reads these names. Each test fails
when a field is renamed, dropped or added without the README."""

from __future__ import annotations

import trio

from tidings.channels import ChannelConfig, EchoAgent, GatewayChannel, GatewayConfig

from .conftest import TOKEN


async def test_welcome_has_the_documented_fields_and_defaults(
        rt, serve_gateway, connect) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        before = rt.store.clock()
        async with connect(url, "fields") as client:
            welcome = dict(client.welcome)
        after = rt.store.clock()
    server_time = welcome.pop("server_time")  # the store's clock, as a row's created_at
    assert isinstance(server_time, float)
    assert before <= server_time <= after
    assert welcome == {"type": "welcome", "protocol": 1, "conversation": "fields",
                       "session_id": client.session_id, "last_seq": 0, "heartbeat_s": 20,
                       "max_frame_bytes": 65536, "ack_window": 32, "rate": 20.0,
                       "burst": 60, "replay": False, "history_seq": 0, "running": []}


async def test_a_turn_s_frames_have_the_documented_fields(
        rt, serve_gateway, connect, is_frame) -> None:
    async with serve_gateway(rt, agent=EchoAgent()) as (_gateway, url), \
            connect(url, "fields") as client:
        message_id = await client.message("hello there")
        seen: list[dict] = []

        def both(frame: dict) -> bool:  # the reply and the end, in either order
            seen.append(frame)
            return (any(is_frame("delivery", kind="message")(f) for f in seen)
                    and any(is_frame("lifecycle", event="completed")(f) for f in seen))

        with trio.fail_after(20):
            frames = await client.receive_until(both)
    by_type: dict[str, list[dict]] = {}
    for frame in frames:
        by_type.setdefault(frame["type"], []).append(frame)
    assert by_type["accepted"] == [{"type": "accepted", "id": message_id,
                                    "outcome": "started"}]
    [delivery] = by_type["delivery"]
    assert set(delivery) == {"type", "session_id", "seq", "delivery_id", "kind", "text",
                             "blocks"}
    assert (delivery["session_id"], delivery["seq"], delivery["text"]) == (
        client.session_id, 1, "hello there")
    events = [(frame["event"], set(frame)) for frame in by_type["lifecycle"]]
    base = {"type", "event", "session_id", "message_id"}
    assert events[0] == ("started", base)
    assert events[-1] == ("completed", base)
    assert {event for event, _ in events[1:-1]} == {"text_chunk"}
    assert all(keys == base | {"chunk"} for _, keys in events[1:-1])
    assert all(frame["message_id"] == message_id for frame in by_type["lifecycle"])


async def test_command_answers_name_the_command(rt, serve_gateway, connect, is_frame) -> None:
    """A command answer is a notice delivery with ``command``; with no session (after
    ``/clear``) an ephemeral ``{"type": "notice", "text", "command"}``."""
    async with serve_gateway(rt) as (_gateway, url), connect(url, "fields") as client:
        with trio.fail_after(20):
            await client.message("/clear")
            [*_, cleared] = await client.receive_until(is_frame("delivery"))
            await client.message("/help")
            [*_, helped] = await client.receive_until(is_frame("notice"))
            await client.sync(client.session_id)
            [*_, synced] = await client.receive_until(is_frame("synced"))
    assert cleared["kind"] == "notice"
    assert cleared["command"] == "clear"
    assert set(cleared) == {"type", "session_id", "seq", "delivery_id", "kind", "text",
                            "blocks", "command"}
    assert set(helped) == {"type", "text", "command"}
    assert helped["command"] == "help"
    assert synced == {"type": "synced", "session_id": client.session_id,
                      "last_seq": cleared["seq"]}


async def test_a_refused_message_gets_an_ephemeral_notice_then_refused(
        rt, connect, is_frame) -> None:
    gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, port=0),
                             ChannelConfig("gateway", access=["alice"]))
    try:
        async with gateway.serving() as port, \
                connect(f"ws://127.0.0.1:{port}", "fields", client="mallory") as client:
            message_id = await client.message("hi")
            with trio.fail_after(20):
                frames = await client.receive_until(is_frame("accepted"))
    finally:
        with trio.CancelScope(shield=True):
            await gateway.aclose()
    assert frames[-2:] == [
        {"type": "notice", "text": "Sorry, you are not allowed to use this channel.",
         "command": None},
        {"type": "accepted", "id": message_id, "outcome": "refused"}]


class _Held:
    """An agent whose turn replies ``done`` once :attr:`release` is set."""

    def __init__(self) -> None:
        self.release = trio.Event()

    async def run(self, turn) -> None:  # type: ignore[no-untyped-def]
        await self.release.wait()
        await turn.send_chunk("done")


async def test_running_turns_are_named_by_welcome_and_by_a_duplicate(
        rt, serve_gateway, connect, is_frame) -> None:
    """A client that connects while a turn runs, or sends again a message whose turn has not
    ended, is told so: ``welcome``'s ``running`` lists the message ids of the turns running
    (their ``started`` went to connections before), ``accepted`` of a duplicate says
    ``running``. A client that waits for a turn's end before its next message (which would
    steer it) waits on."""
    agent = _Held()
    async with serve_gateway(rt, agent=agent) as (_gateway, url), \
            connect(url, "fields") as client:
        with trio.fail_after(20):
            await client.message("hold on", message_id="m1")
            await client.receive_until(is_frame("lifecycle", event="started"))
            async with connect(url, "fields") as other:
                assert other.welcome["running"] == ["m1"]
                await other.message("hold on", message_id="m1")
                [*_, again] = await other.receive_until(is_frame("accepted"))
            assert again == {"type": "accepted", "id": "m1", "outcome": "started",
                             "duplicate": True, "running": True}
            agent.release.set()
            await client.receive_until(is_frame("lifecycle", event="completed"))
            await client.message("hold on", message_id="m1")
            [*_, ended] = await client.receive_until(is_frame("accepted"))
            async with connect(url, "fields") as late:
                assert late.welcome["running"] == []
    assert ended == {"type": "accepted", "id": "m1", "outcome": "started", "duplicate": True,
                     "running": False}


async def test_a_duplicate_of_a_message_waiting_for_its_turn_is_running(
        rt, connect, is_frame) -> None:
    """``running`` holds for a message whose turn waits to run too (queued behind another,
    ``followup``): its end has not come yet. ``welcome`` names only the turn running."""
    agent = _Held()
    gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, port=0),
                             ChannelConfig("gateway", dispatch_mode="followup"), agent=agent)
    try:
        async with gateway.serving() as port, \
                connect(f"ws://127.0.0.1:{port}", "fields") as client:
            with trio.fail_after(20):
                await client.message("first", message_id="m1")
                await client.receive_until(is_frame("lifecycle", event="started"))
                await client.message("second", message_id="m2")
                [*_, queued] = await client.receive_until(is_frame("accepted", id="m2"))
                await client.message("second", message_id="m2")
                [*_, again] = await client.receive_until(is_frame("accepted", id="m2"))
                async with connect(f"ws://127.0.0.1:{port}", "fields") as other:
                    running = other.welcome["running"]
                agent.release.set()
    finally:
        with trio.CancelScope(shield=True):
            await gateway.aclose()
    assert queued["outcome"] == "queued"
    assert again == {"type": "accepted", "id": "m2", "outcome": "queued", "duplicate": True,
                     "running": True}
    assert running == ["m1"]
