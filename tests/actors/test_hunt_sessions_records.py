"""What a route gets in frozen records: ``Outbound.metadata`` and ``ApprovalRequest.details``
are read-only all the way down, as the same values read back after a restart are (stored JSON
is read back frozen). They were frozen one level deep only: a route that changed a nested list
in place changed the runtime's own copy of the delivery (what a later attempt gets), not the
stored one.
"""

from __future__ import annotations

import pytest

from tidings.actors import ApprovalRequest, Outbound
from tidings.testing import MemoryRoute


def test_outbound_metadata_and_approval_details_are_read_only_all_the_way_down() -> None:
    nested = {"tags": ["a"], "deep": {"k": 1}}
    outbound = Outbound(session_id="s", delivery_id="d", kind="message", blocks=(), text="",
                        metadata=nested)
    request = ApprovalRequest(session_id="s", action="deploy", request_id="r", details=nested)
    for value in (outbound.metadata, request.details):
        assert value == {"tags": ("a",), "deep": {"k": 1}}
        with pytest.raises((TypeError, AttributeError)):
            value["tags"].append("b")
        with pytest.raises(TypeError):
            value["deep"]["k"] = 2
    nested["deep"]["k"] = 3  # the caller's objects are not shared either
    assert outbound.metadata["deep"]["k"] == 1


async def test_a_route_gets_read_only_nested_metadata_in_a_live_delivery(rt) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    rt.router.bind(session_id, route)
    handle = await rt.notify(session_id, "hi", metadata={"tags": ["a"]})
    assert await handle.wait() == "delivered"
    [outbound] = route.delivered
    assert outbound.metadata["tags"] == ("a",)  # as a restart reads it back (frozen_json)
