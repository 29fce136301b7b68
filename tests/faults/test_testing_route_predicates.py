"""MemoryRoute's fail predicate: a plain function of the outbound, refused otherwise."""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError
from tidings.testing import MemoryRoute


async def _async_refuse(outbound) -> bool:
    return True


@pytest.mark.parametrize("fail", [_async_refuse, lambda: True, lambda outbound, route: True],
                         ids=["async def", "no argument", "two arguments"])
def test_a_fail_predicate_that_cannot_answer_is_refused_by_name(fail) -> None:
    # Taken, and every delivery then failed with a TypeError recorded as the platform's error
    # ('must answer an exception, a bool or None, got <coroutine ...>' plus a coroutine
    # never awaited, or '<lambda>() takes 0 positional arguments'), the field never named.
    with pytest.raises(ValidationError) as raised:
        MemoryRoute(fail=fail)
    assert raised.value.field == "fail"
    route = MemoryRoute()
    with pytest.raises(ValidationError) as raised:
        route.fail = fail
    assert raised.value.field == "fail"
    assert route.fail is None  # kept as it was


def test_a_fail_predicate_of_the_outbound_is_taken() -> None:
    def refuse(outbound) -> bool:
        return "boom" in outbound.text

    assert MemoryRoute(fail=refuse).fail is refuse
    assert MemoryRoute(fail=ConnectionError).fail is ConnectionError
