"""``failure_history_text`` on a send that writes no history can never take effect: refused.

It replaces the body of the send's history row on its first failure (DESIGN.md "History");
a transient send (asked for, the turn's or slot's default, progress and notice) has no row, so
the text would be dropped without a word. Validation order: source type, then policy and
visibility, then paths.
"""

from __future__ import annotations

import pytest

from tidings.actors import ArtifactRef
from tidings.errors import ArtifactError, HistoryPolicyError, ValidationError
from tidings.testing import MemoryRoute

from .conftest import rows


async def _bound(rt):
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, MemoryRoute())
    return session_id


async def test_a_transient_send_refuses_failure_history_text(rt, db_path) -> None:
    session_id = await _bound(rt)
    async with rt.open_turn(session_id) as ctx:
        sends = [
            (ctx.output.send_text, {"history_policy": "transient"}),
            (ctx.output.send_text, {"write_history": False}),
            (ctx.output.send, {"kind": "progress"}),
            (ctx.output.send, {"kind": "notice"}),
            (ctx.input.send_text, {}),  # ctx.input is transient by default
        ]
        for send, options in sends:
            with pytest.raises(ValidationError) as caught:
                await send("x", failure_history_text="f", **options)
            assert caught.value.field == "failure_history_text"
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]


async def test_a_turn_whose_default_is_transient_refuses_it(rt, db_path) -> None:
    session_id = await _bound(rt)
    async with rt.open_turn(session_id, history_policy="transient") as ctx:
        with pytest.raises(ValidationError) as caught:
            await ctx.output.send_text("x", failure_history_text="f")
        assert caught.value.field == "failure_history_text"
        await ctx.output.send_text("x", history_policy="persist", failure_history_text="f")
    async with rt.open_turn(session_id, mode="parallel") as ctx:
        with pytest.raises(ValidationError) as caught:
            await ctx.output.send_text("x", failure_history_text="f")
        assert caught.value.field == "failure_history_text"
        # a parallel turn asking for history is refused for that first (policy before it)
        with pytest.raises(HistoryPolicyError):
            await ctx.output.send_text("x", history_policy="persist", failure_history_text="f")
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(1,)]


async def test_the_refusal_comes_after_the_source_type_and_before_paths(rt) -> None:
    session_id = await _bound(rt)
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(TypeError):  # a raw dict: the source type first
            await ctx.output.send_file({"path": "x"}, history_policy="transient",
                                       failure_history_text="f")
        with pytest.raises(ValidationError) as caught:  # then policy, before the path
            await ctx.output.send_file(ArtifactRef(path="../escape.txt"),
                                       history_policy="transient", failure_history_text="f")
        assert not isinstance(caught.value, ArtifactError)
        assert caught.value.field == "failure_history_text"


async def test_a_send_with_visible_false_refuses_it(rt, db_path) -> None:
    """``visible=False`` writes history but no route ever gets it: its row is recorded ``sent``
    at once and can never fail, so the failure text would never be used either."""
    session_id = await _bound(rt)
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ValidationError) as caught:
            await ctx.output.send_text("x", visible=False, failure_history_text="f")
        assert caught.value.field == "failure_history_text"
        handle = await ctx.output.send_text("x", visible=False)
    assert await handle.wait() == "delivered"
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(1,)]
