"""Gateway questions (prompts, approvals) are kept per conversation: ids of one conversation
never reach, settle or reveal the questions of another."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.actors import Prompt, PromptAnswer
from tidings.channels._gateway_frames import FrameError
from tidings.channels._gateway_interact import Interactions
from tidings.errors import ValidationError

A, B = "gateway:conv:a", "gateway:conv:b"


def _sink() -> tuple[list[dict], object]:
    frames: list[dict] = []
    return frames, frames.append


async def test_one_prompt_id_in_two_conversations_reaches_each_its_own(autojump_clock) -> None:
    interactions = Interactions(timeout=300)
    answers: dict[str, PromptAnswer] = {}
    frames_a, to_a = _sink()
    _frames_b, to_b = _sink()

    async def ask(session_id: str, key: str, broadcast) -> None:
        answers[key] = await interactions.prompt(Prompt(session_id, "ready?", "confirm"), key,
                                                 broadcast)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, "session_a", A, to_a)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(ask, "session_b", B, to_b)
        await trio.testing.wait_all_tasks_blocked()
        interactions.settle("prompt", "confirm", A, "yes from a")
        await trio.testing.wait_all_tasks_blocked()
        interactions.settle("prompt", "confirm", B, "yes from b")
    assert answers == {A: PromptAnswer("yes from a"), B: PromptAnswer("yes from b")}
    assert [f["type"] for f in frames_a] == ["prompt", "prompt_closed"]
    assert frames_a[-1]["reason"] == "answered"


async def test_a_closed_question_of_another_conversation_is_unknown_there(autojump_clock) -> None:
    interactions = Interactions(timeout=300)
    _frames, to_a = _sink()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(interactions.prompt, Prompt("session_a", "ready?", "p1"), A, to_a)
        await trio.testing.wait_all_tasks_blocked()
        interactions.settle("prompt", "p1", A, "yes")
    with pytest.raises(FrameError) as caught:
        interactions.settle("prompt", "p1", B, "me too")
    assert caught.value.code == "unknown_prompt"  # not "already_answered": B never had it
    with pytest.raises(FrameError) as caught:
        interactions.settle("prompt", "p1", A, "again")
    assert caught.value.code == "already_answered"


async def test_an_id_already_waiting_in_the_conversation_is_refused(autojump_clock) -> None:
    interactions = Interactions(timeout=300)
    frames, to_a = _sink()
    answers: list[PromptAnswer] = []

    async def ask() -> None:
        answers.append(await interactions.prompt(Prompt("session_a", "first?", "p1"), A, to_a))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(ValidationError) as caught:
            await interactions.prompt(Prompt("session_a", "second?", "p1"), A, to_a)
        assert caught.value.field == "prompt_id"
        interactions.settle("prompt", "p1", A, "one")
    assert answers == [PromptAnswer("one")]
    assert [f["type"] for f in frames] == ["prompt", "prompt_closed"]


@pytest.mark.parametrize("router_deadline", [False, True])
async def test_an_answer_at_the_expiry_is_refused_or_applied_never_lost(
        mock_clock, router_deadline) -> None:
    """The expiry reached the waiting question (its cancel is on its way) but the question has
    not run yet; the wall clock lags trio's a little. An answer now is either refused
    ``expired`` or is the answer; never accepted and then dropped. Repeated, since which of
    the two runs first after the deadline is up to trio's scheduler."""
    for _ in range(32):
        interactions = Interactions(timeout=300, clock=lambda: 1000.0)  # wall lags
        results: list[PromptAnswer] = []

        async def ask(interactions=interactions, results=results) -> None:
            if router_deadline:  # the router's own bound, as for a prompt with expires_at
                with trio.move_on_after(300):
                    results.append(await interactions.prompt(
                        Prompt("session_a", "q?", "p1", expires_at=1300.0), A, _sink()[1]))
                if not results:
                    results.append(PromptAnswer(None, "expired"))
            else:
                results.append(await interactions.prompt(Prompt("session_a", "q?", "p1"), A,
                                                         _sink()[1]))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask)
            await trio.testing.wait_all_tasks_blocked()
            mock_clock.jump(300)
            await trio.lowlevel.checkpoint()  # the deadline is seen; who runs next is random
            refused = None
            try:
                interactions.settle("prompt", "p1", A, "yes")
            except FrameError as exc:
                refused = exc.code
        assert refused in (None, "expired")
        accepted = refused is None
        assert results == [PromptAnswer("yes") if accepted else PromptAnswer(None, "expired")]
