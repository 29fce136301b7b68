"""An answer that comes before the asking task has first waited on its question.

The ``cancelled`` refusal of 49cc66d reads "the asker no longer waits" from the question's
event (no task parked on it); but an asker that has not parked *yet* does not wait either,
and an answer it will find on arriving at its wait is not one nobody gets. Such an answer
(here: one given while the question is being sent out, as a sync broadcast may) must be taken,
as before 49cc66d, and the asker gets it; only an asker that waited and was unparked by a
cancel makes an answer ``cancelled``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tidings.actors import ApprovalDecision, ApprovalRequest, Prompt, PromptAnswer
from tidings.channels._gateway_frames import FrameError
from tidings.channels._gateway_interact import Interactions

A = "gateway:conv:a"


@pytest.mark.parametrize("kind", ["prompt", "approval"])
async def test_an_answer_before_the_asker_first_waits_is_taken(autojump_clock, kind) -> None:
    interactions = Interactions(timeout=300)
    frames: list[dict[str, Any]] = []
    refused: list[str] = []

    def broadcast(frame: dict[str, Any]) -> None:
        frames.append(frame)
        if frame["type"] in ("prompt", "approval_request"):  # answered as it goes out
            try:
                interactions.settle(kind, "q1", A, "allow" if kind == "approval" else "yes")
            except FrameError as exc:
                refused.append(exc.code)

    if kind == "prompt":
        result: object = await interactions.prompt(Prompt("session_a", "q?", "q1"), A,
                                                   broadcast)
        assert result == PromptAnswer("yes")
    else:
        result = await interactions.approval(ApprovalRequest("session_a", "deploy", "q1"), A,
                                             broadcast)
        assert result == ApprovalDecision(True)
    assert refused == []
    assert [f.get("reason") for f in frames if f["type"] == "prompt_closed"] == ["answered"]
    assert interactions.pending == {}
