"""A command that takes no argument refuses text typed after it, as ``/resume a b`` is refused:
with its usage, doing nothing, so nothing the user typed is silently lost."""

from __future__ import annotations

import pytest

from tidings.channels import ChannelConfig, Command, InvalidCommand, parse_command

from .conftest import GatedAgent, RecordingChannel, rows


@pytest.mark.parametrize(("text", "refusal"), [
    ("/new hello", InvalidCommand("new", "Usage: /new")),
    ("/clear confirm", InvalidCommand("clear", "Usage: /clear")),
    ("/reset now", InvalidCommand("clear", "Usage: /reset")),
    ("/RESET now", InvalidCommand("clear", "Usage: /reset")),
    ("/cancel it", InvalidCommand("cancel", "Usage: /cancel")),
    ("/help   me\nplease ", InvalidCommand("help", "Usage: /help")),
    ("/who am i", InvalidCommand("who", "Usage: /who")),
    ("/status?? x", None),  # not a command at all: text for the agent
    ("/status@ops_bot full", InvalidCommand("status", "Usage: /status")),
    ("/new\u00a0fresh", InvalidCommand("new", "Usage: /new")),
])
def test_an_argument_to_a_command_that_takes_none_is_a_usage_error(text, refusal) -> None:
    assert parse_command(text) == refusal


@pytest.mark.parametrize("text", ["/new", "/new  ", "/clear\u200b", "/cancel@ops_bot",
                                  "\u3000/help\u00a0"])
def test_the_bare_commands_are_still_commands(text) -> None:
    assert isinstance(parse_command(text), Command)


async def test_new_with_text_after_it_starts_nothing_and_says_how_to_use_it(
        rt, db_path) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    await channel.say("hello")
    await channel.wait_idle()
    first = channel.events[0].session_id
    assert await channel.say("/new hello there") == "command"
    assert await channel.say("/clear everything") == "command"
    await channel.wait_for(lambda: len(channel.notices()) == 2)
    assert channel.notices() == ["Usage: /new", "Usage: /clear"]
    assert {o.session_id for o in channel.outbounds if o.kind == "notice"} == {first}
    assert rows(db_path, "SELECT count(*) FROM sessions") == [(1,)]
    await channel.say("still here")
    await channel.wait_idle()
    assert channel.events[-1].session_id == first  # neither /new nor /clear happened


async def test_cancel_with_text_after_it_cancels_nothing(rt) -> None:
    agent = GatedAgent()
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
    await channel.say("work")
    await agent.wait_turns(1)
    assert await channel.say("/cancel that please") == "command"
    await channel.wait_for(lambda: channel.notices())
    assert channel.notices() == ["Usage: /cancel"]
    agent.release()
    await channel.wait_idle()
    assert [e.type for e in channel.events if e.terminal] == ["completed"]


@pytest.mark.parametrize("text", ["/clear@ops_bot\u200beverything", "/new@ops_bot\u2060hello",
                                  "/cancel@ops_bot\u00ad!"])
def test_text_run_into_the_botname_is_not_dropped_with_it(text) -> None:
    """A ``@botname`` is letters, digits and ``_``: what an invisible character (zero width
    space, word joiner, soft hyphen) joins to it is not part of it. It was taken for the name
    and dropped, the command run bare (``/clear`` cleared the session) though text followed,
    where the same without the name is text for the agent."""
    assert parse_command(text) == parse_command(text.replace("@ops_bot", ""))


async def test_clear_with_text_run_into_the_botname_clears_nothing(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    await channel.say("hello")
    await channel.wait_idle()
    first = channel.events[0].session_id
    assert await channel.say("/clear@ops_bot\u200beverything") != "command"
    await channel.wait_idle()
    assert channel.events[-1].session_id == first  # a message in the same session
    assert "Cleared. Your next message starts a new session." not in channel.notices()
