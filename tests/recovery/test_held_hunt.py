"""Hunt: held inbound messages (``rt.hold_inbound``) left held by a live process."""

from __future__ import annotations

import pytest

import tidings
from tidings.actors._blocks import MediaBlock
from tidings.errors import SessionNotFoundError

from .conftest import held_count


async def test_a_repeated_keyed_reply_still_releases_what_it_settles(db_path, workspace) -> None:
    """A reply whose idempotency key was used already writes no new row, but the message it
    says it answers was answered (by that row): it must not stay held."""
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        session_id = await rt.create_session()
        first = await rt.hold_inbound(session_id, notice="one")
        again = await rt.hold_inbound(session_id, notice="one, resent")
        async with rt.open_turn(session_id) as ctx:
            one = await ctx.output.send_text("answer", idempotency_key="k", settles=[first])
            two = await ctx.output.send_text("answer", idempotency_key="k", settles=[again])
            assert one.delivery_id == two.delivery_id
        assert held_count(db_path) == 0
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        assert rt.scanner.statistics().totals.unanswered == 0


async def test_a_hold_for_a_session_that_does_not_exist_is_refused(db_path, workspace) -> None:
    """Recovery could never tell it (it releases holds of missing sessions without a word):
    the caller must learn at once that the message is not protected, and no row is left."""
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        with pytest.raises(SessionNotFoundError):
            await rt.hold_inbound("sess_no_such", notice="not answered")
        assert held_count(db_path) == 0


async def test_a_repeated_keyed_media_send_still_releases_what_it_settles(db_path,
                                                                         workspace) -> None:
    """The same for a send with media: a repeated key returns the original before any path is
    looked at, and must still release."""
    block = MediaBlock("image", "https://example.com/chart.png", "url", "chart.png",
                       "[image: chart.png]")
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        session_id = await rt.create_session()
        first = await rt.hold_inbound(session_id, notice="one")
        again = await rt.hold_inbound(session_id, notice="one, resent")
        async with rt.open_turn(session_id) as ctx:
            one = await ctx.output.send(block, history_text="a chart",
                                        idempotency_key="k", settles=[first])
            two = await ctx.output.send(block, history_text="a chart",
                                        idempotency_key="k", settles=[again])
            assert one.delivery_id == two.delivery_id
        assert held_count(db_path) == 0
