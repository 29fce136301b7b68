"""An ``idempotency_key`` over ``MAX_IDEMPOTENCY_KEY_CHARS`` was stored and indexed whole (a
2 MiB key included): it is refused at the call by name, before anything is written (README
"Embedding tidings", Idempotency)."""

from __future__ import annotations

from tidings.actors import MAX_IDEMPOTENCY_KEY_CHARS

from .conftest import refused_by_field


async def test_an_idempotency_key_over_the_cap_is_refused(rt, bound) -> None:
    session_id, route = bound
    key = "k" * (MAX_IDEMPOTENCY_KEY_CHARS + 1)
    error = await refused_by_field(
        rt, session_id, route, lambda ctx: ctx.output.send_text("x", idempotency_key=key),
        "idempotency_key")
    assert str(MAX_IDEMPOTENCY_KEY_CHARS) in str(error)
    async with rt.open_turn(session_id) as ctx:  # the cap itself is accepted
        handle = await ctx.output.progress("x", idempotency_key=key[:-1])
    assert await handle.wait() == "delivered"
