"""The checks of a question (a :class:`Prompt` or an :class:`ApprovalRequest`) before it is asked.

A turn's ``ctx.prompt_user`` / ``ctx.request_approval`` and the public router's
``prompt_user`` / ``request_approval`` (which a host may call itself) ask through the same
routes, so they refuse the same inputs, by name, before anything is asked: a text or action
checked as a message's text (a non-empty string, valid Unicode, at most ``MAX_TEXT_BYTES``),
``details`` as a send's JSON (at most ``MAX_JSON_BYTES``), the ids as ids and ``expires_at``
as unix seconds or None. Nothing else checks them: a route was handed whatever it was given
(the gateway sent non-JSON details as ``str()`` of each value, and answered megabytes of text
``frame_too_big``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any

import attrs

from tidings.actors._blocks import MAX_JSON_BYTES, check_json_object, check_message_text
from tidings.actors._records import ApprovalRequest, Prompt
from tidings.actors._status import check_id, check_session_id
from tidings.errors import ValidationError

__all__ = ["checked_approval_request", "checked_prompt"]


def checked_prompt(prompt: object) -> Prompt:
    """*prompt* if it may be asked, or :class:`ValidationError` naming the field that may not
    (``prompt`` for anything but a :class:`Prompt`)."""
    if not isinstance(prompt, Prompt):
        raise ValidationError("prompt", f"must be a Prompt, got {type(prompt).__name__}")
    expires_at = _check_common(prompt.session_id, prompt.turn_id, prompt.expires_at)
    check_id("prompt_id", prompt.prompt_id)
    if not isinstance(prompt.text, str):
        raise ValidationError("text", f"must be a string, got {type(prompt.text).__name__}")
    check_message_text(prompt.text, "text")
    return prompt if expires_at is prompt.expires_at else attrs.evolve(prompt,
                                                                        expires_at=expires_at)


def checked_approval_request(request: object) -> ApprovalRequest:
    """*request* if it may be asked, its ``details`` as their JSON reads back (string keys;
    what a turn's request carries), or :class:`ValidationError` naming the field that may
    not (``request`` for anything but an :class:`ApprovalRequest`)."""
    if not isinstance(request, ApprovalRequest):
        raise ValidationError("request", f"must be an ApprovalRequest, got "
                                         f"{type(request).__name__}")
    expires_at = _check_common(request.session_id, request.turn_id, request.expires_at)
    check_id("request_id", request.request_id)
    action = request.action
    if not isinstance(action, str) or not action:
        raise ValidationError("action", f"must be a non-empty string, got {action!r:.80}")
    check_message_text(action, "action")
    details = check_json_object(_thawed(request.details), "details", max_bytes=MAX_JSON_BYTES)
    return attrs.evolve(request, details=details, expires_at=expires_at)


def _check_common(session_id: object, turn_id: object, expires_at: object) -> float | None:
    """Check the fields every question has; returns its ``expires_at``, an int past a float's
    range as ``inf`` (``-inf`` below it): no expiry, as a turn's ``expires_in=10**400`` asks
    (``math.isnan`` of it, or the time left, raised an ``OverflowError`` naming nothing)."""
    check_session_id("session_id", session_id)
    if turn_id is not None:  # a turn of an earlier version may have a longer id
        check_id("turn_id", turn_id, max_chars=None)
    if expires_at is None:
        return None
    if isinstance(expires_at, int) and not isinstance(expires_at, bool) \
            and abs(expires_at) > sys.float_info.max:
        return math.inf if expires_at > 0 else -math.inf
    if (isinstance(expires_at, bool) or not isinstance(expires_at, int | float)
            or math.isnan(expires_at)):
        raise ValidationError("expires_at", f"must be None or unix seconds, got "
                                            f"{expires_at!r:.80}")
    return expires_at


def _thawed(value: Any) -> Any:
    """A record's frozen *value* (read-only mappings, tuples) as plain dicts and lists, its
    keys kept as they are (for :func:`check_json_object` to refuse the ones JSON cannot
    write, or that collide); a frozen set stays one, which JSON refuses."""
    if isinstance(value, Mapping):
        return {key: _thawed(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_thawed(item) for item in value]
    return value
