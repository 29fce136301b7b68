"""``GatewayClient.receive_until`` acks only the ``notice`` frames answering the messages
this client sent.

A direct notice (a command answered with no session) goes to every device of the
conversation, and any of them may ack it by ``message_ids``. A device that acked another's
notice took it from that device: the phone that sent the ``/clear`` and lost its connection
with the notice unread resends the id at its reconnect, and the resend must still be sent
the answer (as ``tidings chat`` and ``docs/chat.html`` ack only their own lines' notices).
"""

from __future__ import annotations

from typing import Any

import trio

CLEARED = "Cleared. Your next message starts a new session."


def _accepted(message_id: str) -> Any:
    return lambda f: f["type"] == "accepted" and f["id"] == message_id


def _status(frame: dict[str, Any]) -> bool:
    return str(frame.get("text")).startswith("Session:")


def _notice_of(message_id: str) -> Any:
    return lambda f: f["type"] == "notice" and f.get("message_id") == message_id


async def test_another_devices_notice_is_not_acked_by_receive_until(
        rt, serve_gateway, connect) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        with trio.fail_after(10):
            async with connect(url, "alpha") as laptop:
                async with connect(url, "alpha") as phone:
                    await phone.message("/clear", message_id="m1")  # in the session
                    await phone.receive_until(_accepted("m1"))
                    await phone.message("/clear", message_id="m2")  # no session: direct
                    await laptop.receive_until(_notice_of("m2"))  # acks what is its own
                    await laptop.message("/status", message_id="probe-laptop")
                    await laptop.receive_until(_status)  # its frames before were handled
                # The phone's connection dropped with the notice unread: it resends m2.
                async with connect(url, "alpha") as phone:
                    await phone.message("/clear", message_id="m2")
                    again = await phone.receive_until(_accepted("m2"))
    assert again[-1]["duplicate"] is True, again
    assert [f["text"] for f in again if _notice_of("m2")(f)] == [CLEARED], again


async def test_its_own_notice_is_acked_by_receive_until(rt, serve_gateway, connect) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        with trio.fail_after(10):
            async with connect(url, "alpha") as phone:
                await phone.message("/clear", message_id="m1")
                await phone.receive_until(_accepted("m1"))
                await phone.message("/clear", message_id="m2")
                first = await phone.receive_until(_accepted("m2"))  # acks its notice
                await phone.message("/status", message_id="probe")
                await phone.receive_until(_status)
                await phone.message("/clear", message_id="m2")
                again = await phone.receive_until(_accepted("m2"))
    assert [f["text"] for f in first if _notice_of("m2")(f)] == [CLEARED], first
    assert [f for f in again if _notice_of("m2")(f)] == [], again
