"""The runtime's own supervision tree giving up under ``tidings serve`` (its writer crashing
beyond the runtime's restart intensity: a failing disk, a writer process killed again and
again) ends serve with a clear message (exit 1), as the gateway's crash loop does, not with
an exception-group traceback."""

from __future__ import annotations

import functools

import pytest
import trio

import tidings
from tidings.errors import TidingsError
from tidings.supervisor import FaultPlan, FaultRule, Intensity, Seam
from tidings.supervisor._config import load_config
from tidings.supervisor._serve import ServeFailed, serve
from tidings.supervisor._signals import StopControl


async def test_a_runtime_that_gives_up_ends_serve_with_a_clear_message(
        tmp_path, monkeypatch) -> None:
    crash_the_writer = FaultPlan([FaultRule(Seam.BEFORE_MESSAGE, child="writer")])
    monkeypatch.setattr(tidings, "open_runtime", functools.partial(
        tidings.open_runtime, fault_plan=crash_the_writer, intensity=Intensity(0, 60.0)))
    config = load_config(db=str(tmp_path / "serve.db"), port=0, token="serve-test-token",
                         workspace=str(tmp_path))

    async def serve_until_it_ends() -> None:
        async with trio.open_nursery() as nursery:
            info = await nursery.start(functools.partial(serve, config, StopControl()))
            with pytest.raises(TidingsError):  # its write crashes the writer: no restart left
                await info.gateway.runtime.create_session("gateway")
            with trio.fail_after(10):
                await trio.sleep_forever()  # serve ends

    with pytest.raises(ExceptionGroup) as caught:
        await serve_until_it_ends()
    assert caught.group_contains(ServeFailed, match=r"^the runtime failed: .*'writer'"), \
        caught.value.exceptions
