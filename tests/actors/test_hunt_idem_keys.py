"""Idempotency keys: what a repeated key hands back, and what the lane then delivers."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.actors import TextBlock
from tidings.errors import ValidationError
from tidings.testing import MemoryRoute

from .conftest import leave_a_queued_row, rows


async def test_a_repeated_key_before_recovery_delivers_the_row_as_written(
        db_path, workspace) -> None:
    """The host retries its send after its crash (the key finds the queued row), then asks
    for recovery: the route gets the row's own blocks and metadata, not a blank copy."""
    with trio.fail_after(30):  # hang guard
        session_id, queued_id = await leave_a_queued_row(db_path, workspace)
        async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
            route = MemoryRoute()
            rt.router.bind(session_id, route)
            async with rt.open_turn(session_id) as ctx:
                again = await ctx.output.send_text("b, retried", idempotency_key="k")
            assert again.delivery_id == queued_id
            await rt.recover()
            assert await again.wait() == "delivered"
    [outbound] = route.delivered
    assert outbound.delivery_id == queued_id
    assert (outbound.text, outbound.blocks, dict(outbound.metadata)) == (
        "b", (TextBlock("b"),), {"m": 1})


async def test_an_empty_idempotency_key_is_refused_by_name(rt, db_path) -> None:
    """``""`` (a host's missing key read as empty) would make every later send of the session
    with it return the first one's delivery, silently dropping them: refused, nothing written."""
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ValidationError) as caught:
            await ctx.output.send_text("first", idempotency_key="")
        assert caught.value.field == "idempotency_key"
        with pytest.raises(ValidationError):
            await ctx.output.progress("working", idempotency_key="")
    assert rows(db_path, "SELECT COUNT(*) FROM outbox") == [(0,)]


async def test_a_repeated_media_key_whose_file_is_gone_returns_the_original(
        db_path, workspace) -> None:
    """The host sent a file with a key, crashed, cleaned its temporary file, and retries after
    the restart: the key finds the original delivery; the missing file is not looked at."""
    image = workspace / "shot.png"
    image.write_bytes(b"\x89PNG")
    with trio.fail_after(30):  # hang guard
        async with tidings.open_runtime(db_path, workspace=workspace) as first:
            session_id = await first.create_session(channel="web")
            first.router.bind(session_id, MemoryRoute())
            async with first.open_turn(session_id) as ctx:
                original = await ctx.output.send_image(image, history_text="a shot",
                                                       idempotency_key="shot-1")
            assert await original.wait() == "delivered"
        image.unlink()
        async with tidings.open_runtime(db_path, workspace=workspace) as rt:
            route = MemoryRoute()
            rt.router.bind(session_id, route)
            async with rt.open_turn(session_id) as ctx:
                again = await ctx.output.send_image(image, history_text="a shot",
                                                    idempotency_key="shot-1")
                assert again.delivery_id == original.delivery_id
                assert await again.wait() == "delivered"
                with pytest.raises(tidings.errors.ArtifactError):  # a new key still checks
                    await ctx.output.send_image(image, history_text="a shot",
                                                idempotency_key="shot-2")
    assert route.delivered == []
    assert len(rows(db_path, "SELECT 1 FROM artifacts")) == 1
