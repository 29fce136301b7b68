"""How a gateway question closes, and what ``prompt_closed`` (and a late answer's ``error``)
says about it: ``answered``, ``expired`` (its time, or a nearer bound of the asker, ran out) or
``cancelled`` (the turn that asked was cancelled: ``/cancel``, ``/clear``, steer, the stop).

Before, every question that closed unanswered said ``expired``, also when its turn was
cancelled, and a late answer to it was refused ``expired``.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.actors import ApprovalRequest, Prompt, PromptAnswer
from tidings.channels._gateway_frames import ERROR_CODES, FrameError
from tidings.channels._gateway_interact import Interactions

from .test_messages import GatedAgent, _all, _until

A = "gateway:conv:a"


class _Asker:
    """One question asked in a cancel scope of its own (the turn's, as tests see it)."""

    def __init__(self, interactions: Interactions, kind: str = "prompt") -> None:
        self.interactions = interactions
        self.kind = kind
        self.scope = trio.CancelScope()
        self.frames: list[dict] = []
        self.results: list[object] = []

    async def ask(self) -> None:
        with self.scope:
            if self.kind == "prompt":
                result: object = await self.interactions.prompt(
                    Prompt("session_a", "q?", "q1"), A, self.frames.append)
            else:
                result = await self.interactions.approval(
                    ApprovalRequest("session_a", "deploy", "q1"), A, self.frames.append)
            self.results.append(result)  # no checkpoint since the answer came back

    def closed(self) -> list[object]:
        return [f.get("reason") for f in self.frames if f["type"] == "prompt_closed"]


@pytest.mark.parametrize("kind", ["prompt", "approval"])
async def test_a_question_whose_turn_is_cancelled_closes_cancelled(autojump_clock,
                                                                   kind) -> None:
    asker = _Asker(Interactions(timeout=300), kind)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(asker.ask)
        await trio.testing.wait_all_tasks_blocked()
        asker.scope.cancel(reason="cancel_command")
    assert asker.closed() == ["cancelled"]
    assert asker.results == []
    with pytest.raises(FrameError) as caught:  # a late answer is told what became of it
        asker.interactions.settle(kind, "q1", A, "allow" if kind == "approval" else "yes")
    assert caught.value.code == "cancelled"
    assert "cancelled" in ERROR_CODES


async def test_a_question_the_agent_stops_waiting_for_is_not_said_to_be_a_cancelled_turn(
        autojump_clock) -> None:
    # The agent's own cancel scope around the question (its turn goes on): a late answer is
    # refused ``cancelled``, and its words must not claim the turn was cancelled.
    interactions = Interactions(timeout=300)
    frames: list[dict] = []
    with trio.CancelScope() as own:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(interactions.prompt, Prompt("session_a", "q?", "q1"), A,
                               frames.append)
            await trio.testing.wait_all_tasks_blocked()
            own.cancel(reason="the agent stopped waiting")
    assert [f["reason"] for f in frames if f["type"] == "prompt_closed"] == ["cancelled"]
    with pytest.raises(FrameError) as caught:
        interactions.settle("prompt", "q1", A, "yes")
    assert caught.value.code == "cancelled"
    assert "or the agent stopped waiting" in str(caught.value)
    assert "or the agent stopped waiting" in ERROR_CODES["cancelled"]


async def test_a_question_past_its_expiry_still_closes_expired(autojump_clock) -> None:
    asker = _Asker(Interactions(timeout=300))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(asker.ask)
    assert asker.closed() == ["expired"]
    assert asker.results == [PromptAnswer(None, "expired")]


async def test_a_bound_of_the_asker_that_ran_out_closes_it_expired(autojump_clock) -> None:
    # The router's move_on_after (a prompt's own expires_at), or the turn's timeout: the wait
    # ran out of time; settle already refuses an answer then as ``expired``.
    interactions = Interactions(timeout=300)
    frames: list[dict] = []
    with trio.move_on_after(10):
        await interactions.prompt(Prompt("session_a", "q?", "q1"), A, frames.append)
    assert [f["reason"] for f in frames if f["type"] == "prompt_closed"] == ["expired"]


@pytest.mark.parametrize(("how", "why"), [("/cancel", "cancel_command"), ("/clear", "clear"),
                                          ("hello again", "steer")])
async def test_a_client_is_told_the_question_of_a_cancelled_turn_was_cancelled(
        rt, serve_gateway, connect, is_frame, how, why) -> None:
    async with serve_gateway(rt, agent=GatedAgent()) as (_gateway, url), \
            connect(url, "alpha") as client:
        await client.message("ask:your name?")
        prompt = (await _until(client, is_frame("prompt")))[-1]
        await client.message(how)
        frames = await _all(client, is_frame("prompt_closed"),
                            is_frame("lifecycle", event="cancelled"))
        [closed] = [f for f in frames if f["type"] == "prompt_closed"]
        assert closed == {"type": "prompt_closed", "id": prompt["prompt_id"],
                          "reason": "cancelled"}
        # which cancel it was, the turn's lifecycle frame says
        assert [f["reason"] for f in frames if f["type"] == "lifecycle"] == [why]
        await client.send({"type": "answer", "prompt_id": prompt["prompt_id"], "text": "Ada"})
        error = (await _until(client, is_frame("error")))[-1]
        assert error["code"] == "cancelled"
