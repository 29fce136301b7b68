"""A conversation a host is still talking to through the router (a question waiting for its
answer, ``rt.router.prompt_user`` / ``request_approval``, or an ``rt.router.deliver`` whose
route call runs) is not idle: were it evicted meanwhile, as other conversations speak, the
adapter's ``conversation_of(session_id)`` said None when the answer came, and it could not
tell where the question was asked."""

from __future__ import annotations

import pytest
import trio

from tidings.actors import ApprovalRequest, Outbound, Prompt
from tidings.channels import ChannelConfig

from .test_idle_conversations import SmallChannel, _serve


class _AskingChannel(SmallChannel):
    """Its route calls wait for ``answer``, then note where their session lives."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.asked = trio.Event()
        self.answer = trio.Event()
        self.found: list[object] = []

    async def _wait_then_find(self, session_id: str) -> None:
        self.asked.set()
        await self.answer.wait()
        self.found.append(self.conversation_of(session_id))

    async def prompt_user(self, prompt):  # type: ignore[no-untyped-def]
        await self._wait_then_find(prompt.session_id)
        return "yes"

    async def request_approval(self, request):  # type: ignore[no-untyped-def]
        await self._wait_then_find(request.session_id)
        return True

    async def deliver(self, outbound):  # type: ignore[no-untyped-def]
        if outbound.delivery_id == "direct_1":
            await self._wait_then_find(outbound.session_id)
        await super().deliver(outbound)


_ASK = {
    "prompt_user": lambda rt, sid: rt.router.prompt_user(Prompt(sid, "go?", "prm_1")),
    "request_approval": lambda rt, sid: rt.router.request_approval(
        ApprovalRequest(sid, "deploy", "apr_1")),
    "deliver": lambda rt, sid: rt.router.deliver(Outbound(
        session_id=sid, delivery_id="direct_1", kind="notice", blocks=(), text="direct")),
}


@pytest.mark.parametrize("call", sorted(_ASK))
async def test_a_conversation_the_host_is_asking_is_not_evicted(call, rt,
                                                                autojump_clock) -> None:
    channel = _AskingChannel(rt, ChannelConfig(name="ops"))
    sessions = await _serve(channel)
    asked = sessions["c0"]
    assert rt.router.binding(asked) is None  # evicted: the call's resolve binds it again
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_ASK[call], rt, asked)
        await channel.asked.wait()
        for n in range(1, 8):  # busy meanwhile: other conversations become more recent
            await channel.say(f"later {n}", chat_id=f"c{n}")
            await channel.wait_for(lambda n=n: f"later {n}" in channel.texts("message"))
        channel.answer.set()
    [found] = channel.found
    assert found is not None
    assert found.chat_id == "c0"
