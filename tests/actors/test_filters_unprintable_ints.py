"""A filter given an integer too long to print is refused by name, like any out-of-range one.

``rt.deliveries``, the status views and ``rt.history`` refuse a ``since`` or ``limit`` past
``MAX_INTEGER`` with a ``ValidationError`` naming it; the refusal quoted the value, and Python
will not build the ``repr`` of an int of more than 4300 digits, so such a value (JSON and TOML
carry any integer) escaped as a bare ``ValueError`` ('Exceeds the limit (4300 digits) for
integer string conversion') naming nothing, as the ``stored_deliveries`` and ``events``
bounds (``check_seq``) never did."""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError
from tidings.testing import MemoryRoute

HUGE = 10**5000  # past the 4300 digits int.__repr__ builds

CALLS = {
    "deliveries since": ("since", lambda rt, sid: rt.deliveries(since=HUGE)),
    "deliveries since < 0": ("since", lambda rt, sid: rt.deliveries(since=-HUGE)),
    "deliveries limit": ("limit", lambda rt, sid: rt.deliveries(limit=HUGE)),
    "status_counts since": ("since", lambda rt, sid: rt.status_counts(since=HUGE)),
    "recent_deliveries limit": ("limit", lambda rt, sid: rt.recent_deliveries(limit=HUGE)),
    "status_report since": ("since", lambda rt, sid: rt.status_report(since=-HUGE)),
    "history limit": ("limit", lambda rt, sid: rt.history(sid, limit=HUGE)),
}


@pytest.mark.parametrize("call", list(CALLS))
async def test_an_integer_too_long_to_print_is_refused_naming_the_filter(rt, call) -> None:
    session_id = await rt.create_session(channel="web")
    field, view = CALLS[call]
    with pytest.raises(ValidationError) as caught:
        await view(rt, session_id)
    assert caught.value.field == field
    assert len(str(caught.value)) < 200  # says what is wrong, not the value's 5000 digits


NEGATIVE = {
    # check_seq refused a negative one quoting it (a positive one it never quoted)
    "stored_deliveries after_seq": ("after_seq",
                                    lambda rt, sid: rt.stored_deliveries(sid, after_seq=-HUGE)),
    "stored_deliveries limit": ("limit", lambda rt, sid: rt.stored_deliveries(sid, limit=-HUGE)),
}


@pytest.mark.parametrize("call", list(NEGATIVE))
async def test_a_negative_integer_too_long_to_print_is_refused_naming_it(rt, call) -> None:
    session_id = await rt.create_session(channel="web")
    field, view = NEGATIVE[call]
    with pytest.raises(ValidationError) as caught:
        await view(rt, session_id)
    assert caught.value.field == field
    assert len(str(caught.value)) < 200


async def test_an_event_feed_after_a_negative_integer_too_long_to_print_is_refused(rt) -> None:
    with pytest.raises(ValidationError) as caught:
        await rt.events(after_seq=-HUGE).__anext__()
    assert caught.value.field == "after_seq"


def test_seconds_of_a_negative_integer_too_long_to_print_are_refused_naming_them() -> None:
    # check_seconds (open_runtime's timing options, a route's latency) quoted it too
    with pytest.raises(ValidationError) as caught:
        MemoryRoute(latency=-HUGE)
    assert caught.value.field == "latency"
    assert len(str(caught.value)) < 200
