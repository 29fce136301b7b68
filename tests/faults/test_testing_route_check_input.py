"""route_violations / InvariantChecker.check_routes: routes is a mapping, refused otherwise."""

from __future__ import annotations

import pytest

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
