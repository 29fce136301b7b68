"""Bool flags of the public API refuse anything but a real bool, naming the flag.

``"no"`` is truthy and ``0`` / ``1`` only look like bools: taking them would turn a caller's
mistake into the opposite of what was meant (a model seeing hidden history, a send writing
history it should not). Nothing is written before the refusal.
"""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError
from tidings.testing import MemoryRoute

from .conftest import rows

NOT_BOOLS = ["no", "", 1, 0, None, 1.0]


@pytest.mark.parametrize("value", NOT_BOOLS)
async def test_history_refuses_a_model_context_that_is_not_a_bool(rt, value) -> None:
    session_id = await rt.create_session(channel="web")
    with pytest.raises(TypeError, match="model_context") as caught:
        await rt.history(session_id, model_context=value)
    assert isinstance(caught.value, ValidationError)  # as every refused argument: by field
    assert caught.value.field == "model_context"
    assert await rt.history(session_id, model_context=True) == []
    assert await rt.history(session_id, model_context=False) == []


@pytest.mark.parametrize("value", [v for v in NOT_BOOLS if v is not None])
async def test_sends_refuse_write_history_and_visible_that_are_not_bools(
        rt, db_path, value) -> None:
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, MemoryRoute())
    async with rt.open_turn(session_id) as ctx:
        for send in (ctx.output.send_text, ctx.output.send):
            with pytest.raises(TypeError, match="write_history"):
                await send("x", write_history=value)
            with pytest.raises(TypeError, match="visible"):
                await send("x", visible=value)
        with pytest.raises(TypeError, match="write_history"):
            await ctx.output.send("x", kind="progress", write_history=value)
        with pytest.raises(TypeError, match="visible"):
            await ctx.output.send("x", kind="notice", visible=value)
        for status in (ctx.output.progress, ctx.output.notice):
            with pytest.raises(TypeError, match="visible"):
                await status("x", visible=value)
        with pytest.raises(TypeError, match="visible"):
            await ctx.output.send_file("missing.txt", visible=value, history_text="f")
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]


async def test_real_bools_are_still_taken(rt) -> None:
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, MemoryRoute())
    async with rt.open_turn(session_id) as ctx:
        await ctx.output.send_text("kept", write_history=True, visible=True)
        await ctx.output.send_text("hidden", write_history=True, visible=False)
        await ctx.output.send_text("gone", write_history=False)
        await ctx.output.send("noted", kind="progress", write_history=False, visible=True)
    assert [m.text for m in await rt.history(session_id, model_context=False)] == [
        "kept", "hidden"]


async def test_write_history_true_with_a_transient_policy_is_refused(rt, db_path) -> None:
    """``write_history=True`` asks for a history row and ``history_policy="transient"`` for
    none: the policy won silently and nothing was remembered. The other combinations stay:
    ``False`` with a history policy is that policy (DESIGN.md), ``True`` with ``persist`` or
    ``model_hidden`` agrees."""
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, MemoryRoute())
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ValidationError) as caught:
            await ctx.output.send_text("x", write_history=True, history_policy="transient")
        assert caught.value.field == "write_history"
        assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]
        await ctx.output.send_text("a", write_history=False, history_policy="persist")
        await ctx.output.send_text("b", write_history=True, history_policy="model_hidden")
    assert [(m.text, m.model_visible) for m in await rt.history(session_id)] == [
        ("a", True), ("b", False)]
