"""A channel dropped without ``close()``, or whose subclass ``__init__`` failed after the base
added its router resolver, takes that resolver out of the router when it goes: it stayed there
for good otherwise, one per such channel, each asked (and awaited) for every row of a session
with no route."""

from __future__ import annotations

import contextlib
import gc
import types

import pytest

from tidings.channels import ChannelConfig

from .test_idle_conversations import SmallChannel

DROPPED = 40


class _FailingInit(SmallChannel):
    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        raise RuntimeError("the platform client failed to start")


def _live_functions() -> int:
    """How many function objects are alive, garbage collected first (a resolver the router
    kept is one)."""
    gc.collect()
    return sum(type(obj) is types.FunctionType for obj in gc.get_objects())


@pytest.mark.parametrize("make", [SmallChannel, _FailingInit])
async def test_channels_gone_unclosed_leave_no_resolver_behind(make, rt) -> None:
    def gone(n: int) -> None:
        for i in range(n):
            with contextlib.suppress(RuntimeError):
                make(rt, ChannelConfig(name=f"ops{i}"))

    gone(3)  # (anything made once, on first use)
    before = _live_functions()
    gone(DROPPED)
    assert _live_functions() - before < DROPPED // 2
