"""A route whose ``prompt_user`` / ``request_approval`` raises (its platform is down) fails
the question closed, not the turn: the agent gets an empty answer or a denial with
``reason="route_failed"`` and goes on (it may say the same thing as a plain message).

Before, whatever the route raised (a ``ConnectionError``, a platform library's own error)
came out of ``ctx.prompt_user`` as it was: no class of ``tidings.errors`` an agent could
expect, so a channel turn whose agent asked anything failed with it.
"""

from __future__ import annotations

import logging

import pytest

from tidings.actors import ApprovalDecision, PromptAnswer
from tidings.channels import ChannelConfig
from tidings.supervisor._logging import parse_fields
from tidings.testing import MemoryChannel, MemoryRoute

from .conftest import rows


class PlatformDown(MemoryRoute):
    """Delivers, but every question fails in the platform's own way."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    async def prompt_user(self, prompt):  # type: ignore[no-untyped-def]
        raise self.error

    async def request_approval(self, request):  # type: ignore[no-untyped-def]
        raise self.error


@pytest.mark.parametrize(("error", "logged"), [
    (ConnectionError("platform down"), "ConnectionError: platform down"),
    (ExceptionGroup("the route's nursery", [TimeoutError("no answer from the API")]),
     "TimeoutError: no answer from the API"),
], ids=["error", "group"])
async def test_a_route_that_fails_to_ask_fails_the_question_closed(rt, db_path, caplog,
                                                                   error, logged) -> None:
    session_id = await rt.create_session(channel="web")
    route = PlatformDown(error)
    rt.router.bind(session_id, route)
    with caplog.at_level(logging.WARNING, logger="tidings.turns"):
        async with rt.open_turn(session_id) as ctx:
            answer = await ctx.prompt_user("your name?")
            decision = await ctx.request_approval("deploy")
            await ctx.output.send_text("I could not ask; please answer in a message")
    assert answer == PromptAnswer(None, "route_failed")
    assert decision == ApprovalDecision(False, "route_failed")
    assert rows(db_path, "SELECT status FROM turns") == [("completed",)]
    assert [o.text for o in await route.wait_delivered(1)] == [
        "I could not ask; please answer in a message"]
    failures = [r.getMessage() for r in caplog.records if "question_route_failed" in r.message]
    assert ["method=prompt_user" in f for f in failures] == [True, False]
    # The error is one field, JSON-quoted (it holds spaces), as every tidings log value is:
    # a key=value reader (and --log-json) reads it back whole.
    assert [parse_fields(failure)["error"] for failure in failures] == [logged, logged]


class AskingAgent:
    async def run(self, turn) -> None:  # type: ignore[no-untyped-def]
        answer = await turn.prompt_user("your name?", timeout=30)
        decision = await turn.request_approval("deploy", timeout=30)
        await turn.send_chunk(f"answer={answer} allowed={decision.allowed} "
                              f"reason={decision.reason}")


class DownChannel(MemoryChannel):
    async def prompt_user(self, prompt):  # type: ignore[no-untyped-def]
        raise ConnectionError("platform down")

    async def request_approval(self, request):  # type: ignore[no-untyped-def]
        raise ConnectionError("platform down")


async def test_an_agent_whose_channel_cannot_ask_completes_its_turn(rt) -> None:
    channel = DownChannel(rt, ChannelConfig(name="ops"), agent=AskingAgent())
    await channel.say("go", chat_id="c1", sender_id="u1")
    await channel.wait_idle()
    assert [e.type for e in channel.events][-1] == "completed"
    await channel.wait_for(lambda: channel.texts("message"))
    assert channel.texts("message") == ["answer=None allowed=False reason=route_failed"]
