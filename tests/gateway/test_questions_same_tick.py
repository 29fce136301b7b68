"""An answer that comes in the same scheduler tick as the cancel of the turn that asked.

Cancel first, then the answer (before the asking task has run again): before, the answer was
taken, every device was told ``prompt_closed`` ``answered``, and the answer was then dropped,
since the turn was gone. It is now refused ``cancelled`` and never applied. The answer first,
then the cancel: the asker gets the answer (the cancel lands at its next checkpoint).
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.actors import PromptAnswer
from tidings.channels._gateway_frames import FrameError
from tidings.channels._gateway_interact import Interactions

from .test_questions_closing import A, _Asker


@pytest.mark.parametrize("kind", ["prompt", "approval"])
async def test_an_answer_in_the_tick_after_the_cancel_is_refused_not_dropped(autojump_clock,
                                                                              kind) -> None:
    """The turn was cancelled, and the answer comes before the asking task has run again
    (same tick): taking it would tell every device ``answered`` for an answer nobody gets."""
    asker = _Asker(Interactions(timeout=300), kind)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(asker.ask)
        await trio.testing.wait_all_tasks_blocked()
        asker.scope.cancel(reason="steer")
        with pytest.raises(FrameError) as caught:
            asker.interactions.settle(kind, "q1", A, "allow" if kind == "approval" else "yes")
        assert caught.value.code == "cancelled"
    assert asker.results == []
    assert asker.closed() == ["cancelled"]


async def test_an_answer_in_the_tick_before_the_cancel_is_the_answer(autojump_clock) -> None:
    """The other order: the answer was taken first, so the asker gets it (the cancel lands
    at its next checkpoint), and ``answered`` is true."""
    asker = _Asker(Interactions(timeout=300))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(asker.ask)
        await trio.testing.wait_all_tasks_blocked()
        asker.interactions.settle("prompt", "q1", A, "yes")
        asker.scope.cancel(reason="steer")
    assert asker.results == [PromptAnswer("yes")]
    assert asker.closed() == ["answered"]
