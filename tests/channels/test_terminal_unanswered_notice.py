"""The "not answered" notice of a ``tidings chat --local`` message says the chat stopped: it
said "the server stopped", and with ``--local`` there is no server (the terminal channel runs
in the chat's own process). The gateway's notice still names the server."""

from __future__ import annotations

import io

import tidings
from tidings.channels import ChannelConfig, Inbound
from tidings.channels._terminal import TerminalChannel

from .conftest import GatedAgent, RecordingChannel, rows


def _notices(db_path) -> list[str]:
    """The texts of the "not answered" notices, queued in the outbox or held for recovery."""
    queued = [text for (text,) in rows(db_path, "SELECT text FROM outbox WHERE kind = "
                                                "'notice' ORDER BY seq")]
    return [text for text in queued if "not answered" in text]


async def test_a_local_chat_s_notice_says_the_chat_stopped(db_path, workspace) -> None:
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = TerminalChannel(rt, ChannelConfig(name="terminal", dispatch_mode="followup"),
                                  agent=agent, out=io.StringIO())
        ids = {"chat_id": channel.chat_id, "sender_id": channel.sender_id}
        assert await channel.handle_inbound(Inbound(text="first", **ids)) == "started"
        await agent.wait_turns(1)
        assert await channel.handle_inbound(Inbound(text="second", **ids)) == "queued"
    [notice] = _notices(db_path)
    assert '"second"' in notice
    assert "because the chat stopped before it got to it" in notice, notice
    assert "server" not in notice, notice


async def test_another_channel_s_notice_still_says_the_server_stopped(db_path,
                                                                      workspace) -> None:
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="followup"),
                                   agent=agent)
        assert await channel.say("first") == "started"
        await agent.wait_turns(1)
        assert await channel.say("second") == "queued"
    [notice] = _notices(db_path)
    assert "because the server stopped before it got to it" in notice, notice
