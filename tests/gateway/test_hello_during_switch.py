"""A device's hello with ``after_seq`` while another device switches the conversation's
session (``/new``) gets the new session from its start, also when the switch lands between
the hello's resolve and its joining the conversation.

The hello resolved the conversation's session under its lock, then settled what it names
(``after_seq``) in the store before the connection joined the conversation's devices. A
``/new`` from another device in between made a session the plan did not hold, and its first
rows ("Started a new session.", the next reply) went out to the devices joined then only: the
device coming back never got them, nor were they replayed (its welcome named the old
session), though README says the new session follows from its start."""

from __future__ import annotations

import trio

from .conftest import frame_is


async def test_a_new_while_a_hello_settles_reaches_the_device_saying_hello(
        rt, serve_gateway, connect, monkeypatch) -> None:
    settling, settle = trio.Event(), trio.Event()
    drop = rt.drop_missed_progress

    async def drop_when_told(*args, **kwargs):  # the hello's last store step before it joins
        settling.set()
        await settle.wait()
        return await drop(*args, **kwargs)

    with trio.fail_after(30):  # hang guard
        async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as one:
            await one.message("hello", message_id="m1")
            [*_, reply] = await one.receive_until(frame_is("delivery", kind="message"))
            old = reply["session_id"]
            monkeypatch.setattr(rt, "drop_missed_progress", drop_when_told)
            async with trio.open_nursery() as nursery:
                frames: list[dict] = []
                welcomed = trio.Event()

                async def come_back() -> None:
                    async with connect(url, "alpha", session_id=old,
                                       after_seq=reply["seq"]) as two:
                        welcomed.set()  # connect returns once the welcome came
                        frames.extend(await two.receive_until(
                            frame_is("delivery", kind="message", text="again")))

                nursery.start_soon(come_back)
                await settling.wait()
                await one.message("/new", message_id="m2")
                [*_, started] = await one.receive_until(frame_is("delivery", command="new"))
                settle.set()
                await one.receive_until(frame_is("accepted", id="m2"))
                # The other device is in the conversation once its welcome came (the
                # gateway joins a connection before it writes the welcome).
                await welcomed.wait()
                assert len(_gateway.hubs["gateway:conv:alpha"].connections) == 2
                await one.message("again", message_id="m3")
    new = started["session_id"]
    assert new != old
    assert [(f["session_id"], f["text"]) for f in frames if f["type"] == "delivery"] == [
        (new, started["text"]), (new, "again")]
