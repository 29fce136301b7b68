"""README (Questions): a question still waiting is sent again to every connection that joins
its conversation (with or without ``after_seq``), queued as it joins, so before the answer
to a ``sync`` sent after ``welcome``; ``prompt_closed`` goes only to the connections there
when the question closes. A device that was away then is not told at its next hello (the
server cannot tell which device a hello is): a question it had open that is not sent again
by ``synced`` has closed, and an answer to it is refused (here ``already_answered``)."""

from __future__ import annotations

import pytest
import trio

from tidings.actors import Prompt

from .conftest import frame_is


@pytest.mark.parametrize("after_seq", [None, 0])
async def test_a_question_closed_while_away_is_not_asked_again_one_open_is(
        rt, serve_gateway, connect, after_seq) -> None:
    answers: dict[str, object] = {}

    async def ask(session_id: str, prompt_id: str) -> None:
        answers[prompt_id] = await rt.router.prompt_user(
            Prompt(session_id, f"question {prompt_id}?", prompt_id))

    with trio.fail_after(30):  # hang guard
        async with serve_gateway(rt) as (_gateway, url), connect(url, "team") as desk, \
                trio.open_nursery() as nursery:
            session_id = desk.session_id
            async with connect(url, "team") as phone:
                for prompt_id in ("p1", "p2"):
                    nursery.start_soon(ask, session_id, prompt_id)
                    await phone.receive_until(frame_is("prompt", prompt_id=prompt_id))
                    await desk.receive_until(frame_is("prompt", prompt_id=prompt_id))
            # The phone is away: the desk answers p1, which closes with only the desk there.
            await desk.answer("p1", "from the desk")
            await desk.receive_until(frame_is("prompt_closed", id="p1"))
            hello = {} if after_seq is None else {"session_id": session_id,
                                                  "after_seq": after_seq}
            async with connect(url, "team", **hello) as phone:
                await phone.sync()
                frames = await phone.receive_until(frame_is("synced"))
                assert [f.get("prompt_id") for f in frames if f["type"] == "prompt"] == ["p2"]
                await phone.answer("p1", "from the phone")  # it still shows p1 open
                [*_, refused] = await phone.receive_until(frame_is("error"))
                assert (refused["code"], refused["field"]) == ("already_answered",
                                                               "prompt_id")
                await phone.answer("p2", "from the phone")
                await phone.receive_until(frame_is("prompt_closed", id="p2"))
    assert {key: answer.text for key, answer in answers.items()} == {
        "p1": "from the desk", "p2": "from the phone"}
