"""Test doubles and fault injection for tidings, shipped for hosts that embed it too.

Published as ``tidings.testing``. Everything here is a real implementation of a seam (a route,
a fault plan), not a mock: tests drive the runtime through it the way a platform would.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable
from typing import Any

import trio

from tidings.actors import ApprovalDecision, ApprovalRequest, Outbound, Prompt
from tidings.supervisor import FaultPlan, FaultRule, Seam

__all__ = ["FaultPlan", "FaultRule", "MemoryRoute", "Seam"]


class MemoryRoute:
    """An in-memory route with controllable latency, stalls and failures.

    ``delivered`` lists what it accepted, in order. ``stall()`` makes ``deliver`` block until
    ``release()``; ``latency`` (trio seconds) delays each delivery; ``fail`` is an exception
    (class or instance) raised by every delivery, or a predicate ``fail(outbound) -> exception
    | None``. Tests wait with :meth:`wait_attempted` / :meth:`wait_delivered`.
    """

    def __init__(self, *, capabilities: Iterable[str] | None = None, latency: float = 0.0,
                 fail: BaseException | type[BaseException] | Callable[[Outbound], Any] | None
                 = None, ack_window: int | None = None) -> None:
        if capabilities is not None:
            self.capabilities = frozenset(capabilities)
        if ack_window is not None:
            self.ack_window = ack_window
        self.latency = latency
        self.fail = fail
        self.delivered: list[Outbound] = []
        self.attempted: list[Outbound] = []
        self.prompts: list[Prompt] = []
        self.approvals: list[ApprovalRequest] = []
        self.answers: collections.deque[str | None] = collections.deque()
        self.decisions: collections.deque[bool | str | ApprovalDecision] = collections.deque()
        self._gate: trio.Event | None = None
        self._changed = trio.Event()

    def stall(self) -> None:
        """Make every delivery block until :meth:`release`."""
        if self._gate is None:
            self._gate = trio.Event()

    def release(self) -> None:
        if self._gate is not None:
            self._gate.set()
            self._gate = None

    async def wait_attempted(self, n: int) -> list[Outbound]:
        """Block until *n* deliveries have started; return them."""
        while len(self.attempted) < n:
            await self._changed.wait()
        return self.attempted[:n]

    async def wait_delivered(self, n: int) -> list[Outbound]:
        """Block until *n* deliveries have been accepted; return them."""
        while len(self.delivered) < n:
            await self._changed.wait()
        return self.delivered[:n]

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def deliver(self, outbound: Outbound) -> None:
        self.attempted.append(outbound)
        self._notify()
        gate = self._gate
        if gate is not None:
            await gate.wait()
        if self.latency:
            await trio.sleep(self.latency)
        error = self._failure(outbound)
        if error is not None:
            raise error
        await trio.lowlevel.checkpoint()
        self.delivered.append(outbound)
        self._notify()

    def _failure(self, outbound: Outbound) -> BaseException | None:
        fail = self.fail
        if fail is None:
            return None
        if isinstance(fail, BaseException):
            return fail
        if isinstance(fail, type) and issubclass(fail, BaseException):
            return fail(f"delivery {outbound.delivery_id} refused")
        result = fail(outbound)
        if isinstance(result, type) and issubclass(result, BaseException):
            return result(f"delivery {outbound.delivery_id} refused")
        return result

    async def prompt_user(self, prompt: Prompt) -> str | None:
        self.prompts.append(prompt)
        await trio.lowlevel.checkpoint()
        return self.answers.popleft() if self.answers else None

    async def request_approval(self, request: ApprovalRequest) -> bool | str | ApprovalDecision:
        self.approvals.append(request)
        await trio.lowlevel.checkpoint()
        return self.decisions.popleft() if self.decisions else False

    def texts(self) -> list[str]:
        return [outbound.text for outbound in self.delivered]
