"""``tidings serve`` stopping while a message waits behind a running turn: the gateway said
``accepted`` / ``queued`` and remembers the message id, so the user must hear that it was
not answered. The notice is a delivery in the session, sent while the client is still there.

The stop waits out ``grace`` for the held turn: on ``autojump_clock``, in trio seconds (a
real-time wait of the grace was half of each test); the hang guards count real seconds.
"""

from __future__ import annotations

import functools
import pathlib

import attrs
import trio

from tidings.channels import ChannelConfig, GatewayClient
from tidings.supervisor._config import load_config
from tidings.supervisor._serve import serve
from tidings.supervisor._signals import StopControl

from ..real_time import fail_after_real

TOKEN = "gateway-test-token"
AGENTS = pathlib.Path(__file__).parents[1] / "supervisor" / "agents"
GRACE = 120.0
"""Longer than the hang guards: a stop that waited for it in real seconds fails the test."""


async def test_a_message_queued_when_serve_stops_is_answered_with_a_notice(
        tmp_path, monkeypatch, is_frame, autojump_clock) -> None:
    monkeypatch.syspath_prepend(str(AGENTS))
    config = attrs.evolve(
        load_config(db=str(tmp_path / "serve.db"), port=0, token=TOKEN,
                    workspace=str(tmp_path), agent="serve_agents:GatedAgent", grace=GRACE),
        channel=ChannelConfig("gateway", dispatch_mode="followup"))
    control = StopControl()
    with fail_after_real(60):  # hang guard
        async with trio.open_nursery() as nursery:
            info = await nursery.start(functools.partial(serve, config, control))
            async with GatewayClient.connect(info.url, token=TOKEN,
                                             conversation="alpha") as client:
                held = await client.message("hold:forever")
                await client.receive_until(is_frame("lifecycle", event="text_chunk",
                                                    message_id=held))
                waiting = await client.message("are you there?")
                answers = await client.receive_until(is_frame("accepted", id=waiting))
                assert answers[-1]["outcome"] == "queued"
                control.request("test")
                frames = await client.receive_until(is_frame("delivery", kind="notice"))
    assert any(is_frame("lifecycle", event="cancelled", reason="shutdown",
                        message_id=held)(frame) for frame in frames)
    notice = frames[-1]
    assert '"are you there?"' in notice["text"]
    assert "not answered" in notice["text"]
    assert not any(frame.get("message_id") == waiting and frame.get("event") == "started"
                   for frame in frames)


async def test_a_client_gone_when_serve_stops_gets_the_notice_after_a_restart(
        tmp_path, monkeypatch, is_frame, autojump_clock) -> None:
    monkeypatch.syspath_prepend(str(AGENTS))
    config = attrs.evolve(
        load_config(db=str(tmp_path / "serve.db"), port=0, token=TOKEN,
                    workspace=str(tmp_path), agent="serve_agents:GatedAgent", grace=GRACE),
        channel=ChannelConfig("gateway", dispatch_mode="collect"))
    control = StopControl()
    with fail_after_real(60):  # hang guard
        async with trio.open_nursery() as nursery:
            info = await nursery.start(functools.partial(serve, config, control))
            async with GatewayClient.connect(info.url, token=TOKEN,
                                             conversation="alpha") as client:
                session_id = client.welcome["session_id"]
                held = await client.message("hold:forever")
                await client.receive_until(is_frame("lifecycle", event="text_chunk",
                                                    message_id=held))
                for text, outcome in (("one", "queued"), ("two", "merged")):
                    sent = await client.message(text)
                    answers = await client.receive_until(is_frame("accepted", id=sent))
                    assert answers[-1]["outcome"] == outcome
            control.request("test")  # nobody is connected any more
    control = StopControl()
    with fail_after_real(60):  # hang guard
        async with trio.open_nursery() as nursery:
            info = await nursery.start(functools.partial(serve, config, control))
            async with GatewayClient.connect(info.url, token=TOKEN, conversation="alpha",
                                             session_id=session_id, after_seq=0) as client:
                frames = await client.receive_until(is_frame("delivery", kind="notice"))
            control.request("test")
    assert frames[-1]["session_id"] == session_id
    assert '"one two"' in frames[-1]["text"]
