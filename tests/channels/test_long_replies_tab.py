"""A long reply with no line break near its cut is cut after the last space *or tab* there
(``split_reply``'s docstring): a space was preferred however far back it was, so a
tab-separated line was cut up to a quarter of ``MAX_TEXT_BYTES`` before a tab at the cut."""

from __future__ import annotations

from tidings.actors import MAX_TEXT_BYTES

from .test_long_replies import _answered, _size


async def test_the_last_space_or_tab_near_the_cut_is_where_it_is_cut(rt) -> None:
    space_at, tab_at = MAX_TEXT_BYTES - 200_000, MAX_TEXT_BYTES - 10_000
    reply = ("a" * space_at + " " + "b" * (tab_at - space_at - 1) + "\t"
             + "c" * (MAX_TEXT_BYTES // 2))
    _, texts = await _answered(rt, reply)
    assert "".join(texts) == reply
    assert all(_size(text) <= MAX_TEXT_BYTES for text in texts)
    assert [len(text) for text in texts] == [tab_at + 1, len(reply) - tab_at - 1]
    assert texts[0].endswith("b\t")
