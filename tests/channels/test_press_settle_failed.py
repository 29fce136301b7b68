"""A stop-button press whose second write (its outcome, ``cancelled``) fails, in a process
that keeps running: a repeat of the press returns ``cancelled``, what the press did.

The press id is recorded as ``nothing`` before the press cancels, and set to ``cancelled``
after. When that second write failed (``cancel_turn`` raised ``StoreError``: the adapter's
answer to the platform failed, so the platform sends the press again), the repeat read
``nothing`` and the adapter showed "nothing to cancel" for a request the press had stopped.
After a restart ``nothing`` is all there is to go by (see test_press_id_before_cancel.py).
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

from tidings.channels import ChannelConfig, _stop_button
from tidings.errors import StoreError

from .conftest import GatedAgent, RecordingChannel

PRESS = {"chat_id": "c1", "sender_id": "u1", "press_id": "p1"}


async def test_a_repeat_of_a_press_whose_outcome_was_not_written_says_cancelled(
        rt, monkeypatch) -> None:
    agent = GatedAgent()
    channel = RecordingChannel(rt, ChannelConfig("ops"), agent=agent)
    assert await channel.say("hello") == "started"
    with trio.fail_after(10):  # real time: the store runs in threads
        await agent.wait_turns(1)
    cancel, commit = channel.dispatch.cancel, rt.store.commit
    cancelled: list[Any] = []

    def cancel_and_note(*args: Any, **kwargs: Any) -> int:
        done = cancel(*args, **kwargs)
        cancelled.append(done)
        return done

    async def commit_until_cancelled(*args: Any, **kwargs: Any) -> Any:
        if cancelled:
            raise StoreError("the disk said no")
        return await commit(*args, **kwargs)

    monkeypatch.setattr(channel.dispatch, "cancel", cancel_and_note)
    monkeypatch.setattr(rt.store, "commit", commit_until_cancelled)
    with pytest.raises(StoreError):
        await channel.cancel_turn(**PRESS)
    monkeypatch.undo()
    assert cancelled == [1]
    with trio.fail_after(10):
        await channel.wait_idle()
        assert await channel.cancel_turn(**PRESS) == "cancelled"  # the platform's repeat
        assert await channel.cancel_turn(**PRESS) == "cancelled"  # and again
    assert channel.types().count("cancelled") == 1


async def test_presses_left_unsettled_are_remembered_up_to_a_cap(rt, monkeypatch) -> None:
    """Only a store failing again and again leaves presses unsettled; the channel keeps at
    most MAX_UNSETTLED_PRESSES of them (here 1), the newest: the older press's repeat then
    answers "nothing", all its record says, as after a restart."""
    monkeypatch.setattr(_stop_button, "MAX_UNSETTLED_PRESSES", 1)
    agent = GatedAgent()
    channel = RecordingChannel(rt, ChannelConfig("ops"), agent=agent)
    commit = rt.store.commit
    failing: list[bool] = []

    async def commit_unless_failing(*args: Any, **kwargs: Any) -> Any:
        if failing:
            raise StoreError("the disk said no")
        return await commit(*args, **kwargs)

    def cancel_then_fail(*args: Any, **kwargs: Any) -> int:
        failing.append(True)  # the outcome's write, right after the cancel, fails
        return cancel(*args, **kwargs)

    cancel = channel.dispatch.cancel
    for n, press in enumerate(("p1", "p2"), start=1):
        assert await channel.say(f"request {n}") in ("started", "queued")
        with trio.fail_after(10):  # real time: the store runs in threads
            await agent.wait_turns(n)
        with monkeypatch.context() as patch:
            patch.setattr(channel.dispatch, "cancel", cancel_then_fail)
            patch.setattr(rt.store, "commit", commit_unless_failing)
            with pytest.raises(StoreError):
                await channel.cancel_turn(**{**PRESS, "press_id": press})
        failing.clear()
        with trio.fail_after(10):
            await channel.wait_idle()
    with trio.fail_after(10):
        assert await channel.cancel_turn(**{**PRESS, "press_id": "p2"}) == "cancelled"
        assert await channel.cancel_turn(**{**PRESS, "press_id": "p1"}) == "nothing"
