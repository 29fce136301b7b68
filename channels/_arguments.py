"""Argument checks for the public channel helpers (``compose_first_prompt``, ``who_text``,
``status_text``, ``boundary_note``, ``inbound_conversation_key``).

Each helper reads attributes of what it is given: a wrong type would otherwise fail inside it
with an ``AttributeError`` or a ``TypeError`` that names no argument. These checks raise a
``TypeError`` naming the argument instead (README "Errors").
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["expect_instance", "expect_optional_text"]

T = TypeVar("T")


def expect_instance(field: str, value: object, kind: type[T]) -> T:
    """*value* if it is a *kind*, else a ``TypeError`` naming *field*."""
    if not isinstance(value, kind):
        raise TypeError(f"{field}: expected {kind.__name__}, got {type(value).__name__} "
                        f"{value!r:.40}")
    return value


def expect_optional_text(field: str, value: object) -> str | None:
    """*value* if it is None or a ``str`` (a lone surrogate allowed: the helpers sanitize what
    they show), else a ``TypeError`` naming *field*."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{field}: expected str or None, got {type(value).__name__} "
                        f"{value!r:.40}")
    return value
