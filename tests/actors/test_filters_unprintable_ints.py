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
