"""An agent that is busy (its own code running, no checkpoint) when Ctrl-C comes: it raises
SIGINT itself, from a turn's body, as a terminal's Ctrl-C lands while a real agent computes.
Then it waits, as for a slow reply. Raised here, in the agent, so the test needs no timing."""

from __future__ import annotations

import signal

import trio

__all__ = ["BusyAgent"]


class BusyAgent:
    async def run(self, turn) -> None:
        await turn.send_chunk("working")
        signal.raise_signal(signal.SIGINT)  # Ctrl-C, while this code runs
        await trio.sleep_forever()
