"""``rt.router.unbind`` refuses what is not a :class:`BindToken` by name: a session id or
None given instead raised a bare ``AttributeError`` about ``session_id``."""

from __future__ import annotations

import pytest

from tidings.actors import BindToken
from tidings.errors import ValidationError
from tidings.testing import MemoryRoute


@pytest.mark.parametrize("bad", ["session_1", None, ("session_1", 1), 1])
async def test_unbind_refuses_what_is_not_a_token_and_keeps_the_binding(rt, bad) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    rt.router.bind(session_id, route)
    with pytest.raises(ValidationError) as caught:
        rt.router.unbind(session_id if bad == "session_1" else bad)
    assert caught.value.field == "token"
    assert rt.router.binding(session_id).route is route


async def test_unbind_with_a_token_still_removes_its_binding_only(rt) -> None:
    session_id = await rt.create_session(channel="web")
    token = rt.router.bind(session_id, MemoryRoute())
    assert rt.router.unbind(BindToken(session_id, token.serial + 1)) is False
    assert rt.router.unbind(token) is True
    assert rt.router.binding(session_id) is None
    assert rt.router.unbind(token) is False
