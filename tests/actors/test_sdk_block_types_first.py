"""The source type first (issue 3, "Validation order"): a block of the wrong type, or a media
block whose source is a raw dict, is a ``TypeError`` even when an earlier block of the list
breaks a value rule (an empty text, an unknown block type), with nothing written."""

from __future__ import annotations

import pytest

from tidings.actors import MediaBlock, TextBlock
from tidings.errors import ValidationError

from .conftest import rows

EARLIER = [TextBlock(""), "", {"type": "text", "text": ""}, {"type": "bogus"},
           {"type": "control", "action": ""}]


@pytest.mark.parametrize("earlier", EARLIER, ids=repr)
@pytest.mark.parametrize(("later", "field"), [
    ({"type": "image", "source": {"path": "chart.png"}}, "blocks[1].source"),
    (5, "blocks[1]"),
    # A ready-made block's source is its location.
    (MediaBlock(type="image", location=5, source_kind="path", name="chart.png",
                fallback="chart.png"), "blocks[1].location"),
])
async def test_a_later_blocks_type_error_comes_before_an_earlier_value_rule(
        rt, db_path, earlier, later, field) -> None:
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(TypeError) as caught:
            await ctx.output.send([earlier, later], history_text="h")
    assert not isinstance(caught.value, ValidationError)
    assert field in str(caught.value)
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]


@pytest.mark.parametrize(("later", "field"), [
    ({"type": "text", "text": 5}, "blocks[1].text"),
    ({"type": "text"}, "blocks[1].text"),
    (TextBlock(5), "blocks[1].text"),
    ({"type": "control", "action": 5}, "blocks[1].action"),
])
async def test_a_later_text_of_the_wrong_type_comes_before_an_earlier_empty_text(
        rt, db_path, later, field) -> None:
    """The text of a block (a control block's ``action``) that is not a string is a
    ``TypeError`` too, and as such comes first."""
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(TypeError) as caught:
            await ctx.output.send(["", later])
    assert not isinstance(caught.value, ValidationError)
    assert field in str(caught.value)
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]
