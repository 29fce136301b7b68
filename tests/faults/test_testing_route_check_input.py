"""route_violations / InvariantChecker.check_routes: routes is a mapping, refused otherwise."""

from __future__ import annotations

import pytest

import tidings
from tidings.errors import ValidationError
from tidings.testing import InvariantChecker, MemoryRoute, route_violations

ROUTE = MemoryRoute()


@pytest.mark.parametrize("routes", [ROUTE, [ROUTE], None, {"session": object()},
                                    {"session": [ROUTE]}, {3: ROUTE}],
                         ids=["one route", "a list", "None", "no route", "a list of routes",
                              "no session id"])
def test_the_route_check_refuses_routes_that_are_no_mapping_of_routes_by_name(routes) -> None:
    # checker.check_routes(route, db_path=db), the route itself where the README shows
    # {session_id: route}, raised "AttributeError: 'MemoryRoute' object has no attribute
    # 'items'", and a value that records nothing one about 'attempted', naming no argument.
    for check in (route_violations, InvariantChecker().check_routes):
        with pytest.raises(ValidationError) as raised:
            check(routes)
        assert raised.value.field == "routes"


def test_the_route_check_takes_an_empty_mapping_and_any_recording_route() -> None:
    assert route_violations({}) == []
    assert route_violations({"session": MemoryRoute()}) == []


async def test_a_sent_row_of_a_session_missing_from_routes_blames_routes_not_delivery(
        tmp_path, workspace) -> None:
    # The row of a session the caller left out of routes was told as "delivery ... is sent,
    # but no route accepted it": a delivery defect, where the route that accepted it was
    # simply not given to the check.
    db_path = tmp_path / "tidings.db"
    routes = {}
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        for _ in range(2):
            session_id = await rt.create_session(channel="web")
            routes[session_id] = MemoryRoute()
            rt.router.bind(session_id, routes[session_id])
            async with rt.open_turn(session_id) as ctx:
                handle = await ctx.output.send_text("hello")
            assert await handle.wait() == "delivered"
    assert route_violations(routes, db_path=db_path) == []
    given, left_out = routes
    [violation] = route_violations({given: routes[given]}, db_path=db_path)
    assert violation.invariant == "routes"
    assert left_out in violation.detail
    assert "no route in routes" in violation.detail
    assert "accepted" not in violation.detail
