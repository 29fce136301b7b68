"""An ``idempotency_key`` over ``MAX_IDEMPOTENCY_KEY_CHARS`` was stored and indexed whole (a
2 MiB key included): it is refused at the call by name, before anything is written (README
"Embedding tidings", Idempotency)."""

from __future__ import annotations

import pytest
import trio

from tidings.actors import MAX_IDEMPOTENCY_KEY_CHARS
from tidings.errors import ValidationError


async def _refused_by_field(rt, session_id, route, send, field) -> ValidationError:
    """*send* raises ValidationError naming *field*; no delivery or history row is written,
    and the next send of the same turn is delivered as if nothing had happened."""
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            with pytest.raises(ValidationError) as caught:
                await send(ctx)
            assert caught.value.field == field
            assert await rt.deliveries(session_id) == []
            assert await rt.history(session_id) == []
            handle = await ctx.output.send_text("next")
        assert await handle.wait() == "delivered"
    assert [o.text for o in route.delivered] == ["next"]
    return caught.value


async def test_an_idempotency_key_over_the_cap_is_refused(rt, bound) -> None:
    session_id, route = bound
    key = "k" * (MAX_IDEMPOTENCY_KEY_CHARS + 1)
    error = await _refused_by_field(
        rt, session_id, route, lambda ctx: ctx.output.send_text("x", idempotency_key=key),
        "idempotency_key")
    assert str(MAX_IDEMPOTENCY_KEY_CHARS) in str(error)
    async with rt.open_turn(session_id) as ctx:  # the cap itself is accepted
        handle = await ctx.output.progress("x", idempotency_key=key[:-1])
    assert await handle.wait() == "delivered"
