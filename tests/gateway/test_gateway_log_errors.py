"""The gateway's warnings about a failed store step stay ``key=value`` lines: the error is
one JSON-quoted field (README, Logs: values with spaces are JSON-quoted), so a reader of
``--log-json`` gets ``event=abandon_failed`` as a field, not the whole line as ``message``."""

from __future__ import annotations

import logging

import trio

from tidings.errors import StoreError
from tidings.supervisor._logging import parse_fields


async def test_a_failed_abandon_is_logged_with_its_error_as_one_field(
        rt, serve_gateway, connect, caplog, monkeypatch) -> None:
    caplog.set_level(logging.INFO, logger="tidings.gateway")

    async def fails(session_id: str, *, keep: object = ()) -> list[str]:
        await trio.lowlevel.checkpoint()
        raise StoreError("the writer stopped: this write may or may not have committed")

    # The client leaves first: its leave cannot abandon (leave_failed), nor can aclose().
    with trio.fail_after(10):
        async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha"):
            monkeypatch.setattr(rt, "abandon_unacked", fails)
    failed = {}
    for record in caplog.records:
        message = record.getMessage()
        if "_failed" in message:
            fields = parse_fields(message)
            assert fields is not None, message
            failed[fields["event"]] = fields["error"]
    assert set(failed) == {"leave_failed", "abandon_failed"}
    for error in failed.values():
        assert error == ("StoreError('the writer stopped: this write may or may not have "
                         "committed')")
