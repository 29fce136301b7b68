"""The warning about a message accepted without its hold stays a ``key=value`` line: the error
is one JSON-quoted field (README, Logs: values with spaces are JSON-quoted), so a reader of
``--log-json`` gets ``event=hold_failed`` as a field, not the whole line as ``message``."""

from __future__ import annotations

import logging

import trio

from tidings.actors import _held
from tidings.channels import ChannelConfig
from tidings.errors import StoreError
from tidings.supervisor._logging import parse_fields

from .conftest import RecordingChannel


async def test_a_failed_hold_is_logged_with_its_error_as_one_field(
        rt, caplog, monkeypatch) -> None:
    caplog.set_level(logging.WARNING, logger="tidings.channels")

    async def fails(*args: object, **kwargs: object) -> str:
        await trio.lowlevel.checkpoint()
        raise StoreError("the writer stopped: this write may or may not have committed")

    monkeypatch.setattr(_held, "hold", fails)
    channel = RecordingChannel(rt, ChannelConfig("ops"))
    assert await channel.say("hi") == "started"  # accepted all the same
    [message] = [record.getMessage() for record in caplog.records
                 if "hold_failed" in record.getMessage()]
    fields = parse_fields(message)
    assert fields is not None, message
    assert fields["event"] == "hold_failed"
    assert fields["session"] == channel.directory.sessions()[0]
    assert fields["error"] == ("StoreError('the writer stopped: this write may or may not have "
                               "committed')")
