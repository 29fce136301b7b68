"""A prompt or approval request whose frame is over ``MAX_SERVER_FRAME_BYTES`` could reach no
client (``Connection.push`` drops such a frame): it used to wait, unseen, for its whole
``prompt_timeout`` and then come back ``expired``. It is answered at once instead, fail-closed,
with ``reason="frame_too_big"``, and nothing is broadcast or left pending."""

from __future__ import annotations

import trio
import trio.testing

from tidings.actors import ApprovalDecision, ApprovalRequest, Prompt, PromptAnswer
from tidings.channels._gateway_frames import MAX_SERVER_FRAME_BYTES
from tidings.channels._gateway_interact import Interactions

A = "gateway:conv:a"


async def test_a_prompt_too_big_for_a_frame_is_closed_at_once(autojump_clock) -> None:
    interactions = Interactions(timeout=300)
    frames: list[dict] = []
    start = trio.current_time()
    answer = await interactions.prompt(
        Prompt("session_a", "x" * MAX_SERVER_FRAME_BYTES, "p1"), A, frames.append)
    assert answer == PromptAnswer(None, "frame_too_big")
    assert trio.current_time() == start  # not after prompt_timeout
    assert frames == []
    assert interactions.pending == {}
    assert interactions.waiting_in(A) == []
    # the id is free again: a prompt that fits is asked as usual
    async with trio.open_nursery() as nursery:
        nursery.start_soon(interactions.prompt, Prompt("session_a", "short?", "p1"), A,
                           frames.append)
        await trio.testing.wait_all_tasks_blocked()
        interactions.settle("prompt", "p1", A, "yes")
    assert [f["type"] for f in frames] == ["prompt", "prompt_closed"]


async def test_an_approval_too_big_for_a_frame_is_denied_at_once(autojump_clock) -> None:
    interactions = Interactions(timeout=300)
    frames: list[dict] = []
    start = trio.current_time()
    # control characters are escaped 6 bytes each: under the size in characters, over in bytes
    details = {"diff": "\x01" * (MAX_SERVER_FRAME_BYTES // 5)}
    decision = await interactions.approval(
        ApprovalRequest("session_a", "deploy", "r1", details), A, frames.append)
    assert decision == ApprovalDecision(False, "frame_too_big")
    assert trio.current_time() == start
    assert frames == []
    assert interactions.pending == {}


async def test_a_prompt_that_just_fits_is_sent(autojump_clock) -> None:
    interactions = Interactions(timeout=300)
    frames: list[dict] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(interactions.prompt,
                           Prompt("session_a", "x" * (MAX_SERVER_FRAME_BYTES - 200), "p1"), A,
                           frames.append)
        await trio.testing.wait_all_tasks_blocked()
        interactions.settle("prompt", "p1", A, "ok")
    assert [f["type"] for f in frames] == ["prompt", "prompt_closed"]
