"""``rt.router.bind`` refuses a session id no session can have (one with a lone surrogate, an
empty one, or no string) by name, as every other call taking a session id does: it was bound,
silently, as a route that could never be handed anything. (An id that is well formed but
unknown is still bound: bind is synchronous and reads no database; a route may be bound
before its session is created. One over ``MAX_ID_CHARS`` is bound too: earlier versions
stored sessions with such ids, see test_runtime_stored_long_ids.py.)"""

from __future__ import annotations

import pytest

from tidings.actors import MAX_ID_CHARS
from tidings.errors import ValidationError
from tidings.testing import MemoryRoute


@pytest.mark.parametrize("bad", ["s\ud800", "", 3], ids=["surrogate", "empty", "int"])
async def test_bind_refuses_a_session_id_no_session_can_have(rt, bad) -> None:
    with pytest.raises(ValidationError) as caught:
        rt.router.bind(bad, MemoryRoute())
    assert caught.value.field == "session_id"
    assert len(rt.router) == 0


async def test_bind_still_takes_a_session_not_created_yet(rt) -> None:
    route = MemoryRoute()
    token = rt.router.bind("session_later", route)
    assert rt.router.binding("session_later").route is route
    assert rt.router.unbind(token)


async def test_bind_takes_an_id_over_max_id_chars_an_earlier_version_stored(rt) -> None:
    stored = "s" * (MAX_ID_CHARS + 1)
    route = MemoryRoute()
    token = rt.router.bind(stored, route)
    assert rt.router.binding(stored).route is route
    assert rt.router.unbind(token)
