"""A question whose first broadcast raises is not left pending.

The gateway's broadcast does not raise (``Connection.push`` closes a client whose queue is full
and ignores a closed one); but a question was put in ``pending`` before it went out, outside
the block that removes it, so anything raising there (an error in a broadcast, a
``KeyboardInterrupt`` landing in it) left it pending for good: its id refused as already
waiting, its frame re-sent to every client that connects. It is now removed and closed like
any question that ends unanswered, and the error reaches the asker (whose route failure the
runtime turns into a fail-closed answer)."""

from __future__ import annotations

import pytest

from tidings.actors import ApprovalRequest, Prompt, PromptAnswer
from tidings.channels._gateway_frames import FrameError
from tidings.channels._gateway_interact import Interactions

KEY = "gateway:conv:a"


class _Broken(Exception):
    pass


def _failing_first(frames: list[dict]):
    def broadcast(frame: dict) -> None:
        frames.append(frame)
        if len(frames) == 1:
            raise _Broken("the first broadcast fails")
    return broadcast


@pytest.mark.parametrize("kind", ["prompt", "approval"])
async def test_a_question_whose_broadcast_raises_is_not_left_pending(autojump_clock,
                                                                      kind) -> None:
    interactions = Interactions(timeout=300)
    frames: list[dict] = []
    if kind == "prompt":
        ask = interactions.prompt(Prompt("session_a", "ready?", "q1"), KEY,
                                  _failing_first(frames))
    else:
        ask = interactions.approval(ApprovalRequest("session_a", "deploy", "q1"), KEY,
                                    _failing_first(frames))
    with pytest.raises(_Broken):
        await ask
    assert interactions.pending == {}
    assert interactions.waiting_in(KEY) == []  # not re-sent to a client that connects
    assert frames[-1] == {"type": "prompt_closed", "id": "q1", "reason": "cancelled"}
    with pytest.raises(FrameError) as caught:  # an answer to it is refused, by name
        interactions.settle(kind, "q1", KEY, "yes" if kind == "prompt" else "allow")
    assert caught.value.code == "cancelled"
    # The same id can be asked again (it is not "already waiting").
    later: list[dict] = []
    answer = await interactions.prompt(Prompt("session_a", "again?", "q1", expires_at=0.0),
                                       KEY, later.append)
    assert answer == PromptAnswer(None, "expired")
