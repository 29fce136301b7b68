"""Agents for the ``tidings serve`` end-to-end tests (imported by the server subprocess through
``--agent serve_agents:GatedAgent`` with this directory on ``PYTHONPATH``).

No agent here sleeps: a turn that must stay running waits on a gate another message opens.
"""

from __future__ import annotations

import collections

import trio


class GatedAgent:
    """``hold:NAME`` streams ``holding NAME``, then waits until a ``release:NAME`` message (in
    any conversation) opens the gate; ``burst:N`` sends N notices through the outbox; ``ask:Q``
    prompts the user; anything else is echoed (the composed prompt, like ``EchoAgent``)."""

    def __init__(self) -> None:
        self.gates: collections.defaultdict[str, trio.Event] = collections.defaultdict(
            trio.Event)

    async def run(self, turn) -> None:
        text = turn.text
        if text.startswith("hold:"):
            name = text[len("hold:"):]
            await turn.send_chunk(f"holding {name}")
            await self.gates[name].wait()
            await turn.send_chunk(f" released {name}")
        elif text.startswith("release:"):
            name = text[len("release:"):]
            self.gates[name].set()
            await turn.send_chunk(f"released {name}")
        elif text.startswith("burst:"):
            count = int(text[len("burst:"):])
            for index in range(count):
                await turn.output.notice(f"notice {index}")
            await turn.send_chunk(f"sent {count} notices")
        elif text.startswith("ask:"):
            answer = await turn.prompt_user(text[len("ask:"):], timeout=60)
            await turn.send_chunk(f"answer: {answer}")
        else:
            await trio.lowlevel.checkpoint()
            await turn.send_chunk(turn.prompt)
