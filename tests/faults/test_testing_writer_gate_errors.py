"""writer_gate raises what its block raised, as ``async with`` does: not a nursery's group."""

from __future__ import annotations

import pytest
import trio

from tidings.testing import writer_gate


async def test_an_error_in_the_gate_s_block_comes_out_as_itself(rt) -> None:
    # The gate runs its hold in a nursery around the block, so every error of the block came
    # out wrapped: pytest.raises(KeyError) around it failed on ExceptionGroup([KeyError]),
    # as did a host's `except KeyError` (an assert in the block, a TooSlowError...).
    async def raise_in_the_block() -> None:
        async with writer_gate(rt.store) as gate:
            gate.release()
            raise KeyError("raised in the block")

    with pytest.raises(KeyError, match="raised in the block"):
        await raise_in_the_block()
    with trio.fail_after(10):  # the gate let go: writes go on
        assert (await rt.create_session(channel="web")).startswith("session_")


async def test_a_cancel_of_the_gate_s_block_ends_it_and_frees_the_writer(
        rt, autojump_clock) -> None:
    with trio.move_on_after(0.1) as scope:
        async with writer_gate(rt.store):
            await trio.sleep_forever()
    assert scope.cancelled_caught
    with trio.fail_after(10):
        assert (await rt.create_session(channel="web")).startswith("session_")
