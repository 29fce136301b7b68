"""Frozen records the runtime hands to routes and hosts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from tidings.actors._blocks import ContentBlock, frozen_mapping
from tidings.actors._policy import check_flag

__all__ = ["ApprovalDecision", "ApprovalRequest", "Outbound", "Prompt", "PromptAnswer"]


@attrs.frozen
class Outbound:
    """One delivery as a route receives it.

    ``text`` is the text, or the text fallback of media blocks. ``channel`` is adapter metadata:
    it never decides routing. ``session_id`` is None only for a channel's direct answer to a
    command that needs no session (it never went through the outbox). ``seq`` is the
    per-session number assigned at enqueue (contiguous from 1 for every kind); ``attempt``
    counts claims of this delivery.
    """

    session_id: str | None
    delivery_id: str
    kind: str
    blocks: tuple[ContentBlock, ...]
    text: str
    channel: str | None = None
    metadata: Mapping[str, Any] = attrs.field(factory=dict,
                                               converter=frozen_mapping("metadata", deep=True))
    seq: int = 0
    attempt: int = 1


@attrs.frozen
class Prompt:
    """A question for the person behind a session's route."""

    session_id: str
    text: str
    prompt_id: str
    turn_id: str | None = None
    expires_at: float | None = None


@attrs.frozen
class PromptAnswer:
    """The answer to a :class:`Prompt`; ``text`` is None when it was not answered (``reason``
    says why: ``no_interactive_route``, ``expired``, ``declined``, ``route_failed`` when the
    route raised while asking; the gateway also says ``frame_too_big`` for a prompt too big to
    send to a client). ``text`` must be a string or None (else a ``TypeError`` naming it, when
    the record is made): a route's answer reaches the agent as it is, typed ``str | None``."""

    text: str | None = attrs.field(validator=lambda _record, _attr, value: _text_or_none(value))
    reason: str | None = None

    @property
    def answered(self) -> bool:
        """Whether the person answered (``text`` is not None); else ``reason`` says why not."""
        return self.text is not None


def _text_or_none(value: object) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"text: expected str or None, got {type(value).__name__}")


@attrs.frozen
class ApprovalRequest:
    """A request to approve an action in a session; ``expires_at`` is unix seconds or None."""

    session_id: str
    action: str
    request_id: str
    details: Mapping[str, Any] = attrs.field(factory=dict,
                                              converter=frozen_mapping("details", deep=True))
    turn_id: str | None = None
    expires_at: float | None = None


@attrs.frozen
class ApprovalDecision:
    """The outcome of an :class:`ApprovalRequest`. Fails closed: anything but an explicit
    ``allow`` is a denial with a ``reason`` (``denied``, ``expired``, ``no_interactive_route``,
    ``route_failed`` when the route raised while asking; the gateway also says
    ``frame_too_big`` for a request too big to send to a client).

    ``allowed`` must be a real bool (else :class:`~tidings.errors.NotABoolError` naming it,
    when the record is made): a route hands its decision to the agent as it is, and one made
    from a platform's ``"false"`` or ``0`` read as allowed to every ``if decision.allowed:``.
    """

    allowed: bool = attrs.field(validator=lambda _record, _attr, value: check_flag("allowed",
                                                                                    value))
    reason: str | None = None
