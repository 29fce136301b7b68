"""``gateway.prompt_timeout`` is the expiry of the prompts and approval requests that have none
(README, GatewayConfig's docstring). The gateway took it as a cap on every question: an agent
that gave the person an hour (``turn.prompt_user(text, timeout=3600)``, an ``expires_at`` of a
host's own ``Prompt``) had its question closed ``expired`` after the default 300 s, and an
answer given after that refused, though nothing had expired. A question's own expiry is now
its expiry, longer or shorter; one that never expires (``inf``) is sent with
``expires_at: null``, as an approval request already was, not as a bare ``Infinity``."""

from __future__ import annotations

import math

import pytest
import trio
import trio.testing

from tidings.actors import ApprovalRequest, Prompt, PromptAnswer
from tidings.channels._gateway_frames import encode
from tidings.channels._gateway_interact import Interactions

A = "gateway:conv:a"
WALL = 1_000_000.0


def _interactions() -> Interactions:
    """The default 300 s, on a wall clock that follows trio's (the mock clock's)."""
    return Interactions(timeout=300, clock=lambda: WALL + trio.current_time())


@pytest.mark.parametrize("kind", ["prompt", "approval"])
async def test_a_question_s_own_longer_expiry_is_kept(autojump_clock, kind) -> None:
    interactions = _interactions()
    frames: list[dict] = []
    results: list[object] = []
    expires_at = WALL + trio.current_time() + 3600

    async def ask() -> None:
        if kind == "prompt":
            results.append(await interactions.prompt(
                Prompt("session_a", "q?", "q1", expires_at=expires_at), A, frames.append))
        else:
            results.append(await interactions.approval(
                ApprovalRequest("session_a", "deploy", "q1", expires_at=expires_at), A,
                frames.append))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask)
        await trio.testing.wait_all_tasks_blocked()
        assert frames[0]["expires_at"] == expires_at
        await trio.sleep(600)  # past the default, well within the question's own hour
        interactions.settle(kind, "q1", A, "yes" if kind == "prompt" else "allow")
    assert frames[-1]["reason"] == "answered"
    [result] = results
    assert result == PromptAnswer("yes") if kind == "prompt" else result.allowed


async def test_a_question_without_expiry_still_expires_at_the_default(autojump_clock) -> None:
    interactions = _interactions()
    frames: list[dict] = []
    start = trio.current_time()
    answer = await interactions.prompt(Prompt("session_a", "q?", "q1"), A, frames.append)
    assert answer == PromptAnswer(None, "expired")
    assert trio.current_time() - start == pytest.approx(300)
    assert frames[0]["expires_at"] == pytest.approx(WALL + start + 300)


async def test_a_question_that_never_expires_is_sent_with_a_null_expiry(autojump_clock) -> None:
    interactions = _interactions()
    frames: list[dict] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(interactions.prompt,
                           Prompt("session_a", "q?", "q1", expires_at=math.inf), A,
                           frames.append)
        await trio.testing.wait_all_tasks_blocked()
        await trio.sleep(10 ** 6)
        assert frames[0]["expires_at"] is None
        assert '"expires_at":null' in encode(frames[0])
        interactions.settle("prompt", "q1", A, "still here")
    assert frames[-1]["reason"] == "answered"
