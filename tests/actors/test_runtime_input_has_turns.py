"""``rt.session_has_turns(excluding=...)`` refuses a lone string or a turn id that is not a
non-empty string by name: ``excluding="turn_1"`` was read as its characters and excluded
nothing, so the answer was silently wrong."""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError


@pytest.mark.parametrize("bad", ["TURN", [1], [""], [None], b"turn"])
async def test_session_has_turns_refuses_bad_exclusions_by_name(rt, bad) -> None:
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id) as ctx:
        pass
    with pytest.raises(ValidationError) as caught:
        await rt.session_has_turns(session_id,
                                   excluding=ctx.turn_id if bad == "TURN" else bad)
    assert caught.value.field == "excluding"


async def test_session_has_turns_still_excludes_the_turns_listed(rt) -> None:
    session_id = await rt.create_session(channel="web")
    assert await rt.session_has_turns(session_id) is False
    async with rt.open_turn(session_id) as ctx:
        pass
    assert await rt.session_has_turns(session_id) is True
    assert await rt.session_has_turns(session_id, excluding=[ctx.turn_id]) is False
    assert await rt.session_has_turns(session_id, excluding={ctx.turn_id, "other"}) is False
    assert await rt.session_has_turns(session_id, excluding=("other",)) is True
