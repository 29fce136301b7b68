"""The kernel's log: one line per event, ``key=value`` fields, on logger ``tidings.supervisor``."""

from __future__ import annotations

import json
import logging

__all__ = ["describe", "field", "log_event", "logger"]

logger = logging.getLogger("tidings.supervisor")


def field(value: object) -> str:
    """*value* as the value of a ``key=value`` log field: as it is when it is one plain word,
    else JSON-quoted (a path or a reason with a space, a quote or ``=``; with a character that
    does not print, such as a terminal escape, escaped to ASCII), so that a reader
    splitting on spaces (and :func:`~tidings.supervisor._logging.parse_fields`, and so the JSON
    lines) reads it back whole. :func:`log_event` formats every field so; lines formatted by
    hand call it for each value that may hold a space."""
    text = value if isinstance(value, str) else str(value)
    printable = text.isprintable()
    if not text or not printable or any(ch.isspace() or ch in '"=' for ch in text):
        # Escaped to ASCII when anything in it does not print: an escape sequence (a chat
        # id, a platform's error) reached the operator's terminal raw, and JSON escapes only
        # what is below U+0020, not DEL or the C1 controls.
        return json.dumps(text, ensure_ascii=not printable)
    return text


def log_event(level: int, event: str, **fields: object) -> None:
    """Log ``event=<event> k=v ...`` at ``level``; fields that are ``None`` are left out.

    The line is only formatted when the level is enabled, so routine events cost one check.
    """
    if not logger.isEnabledFor(level):
        return
    parts = [f"event={event}"]
    parts.extend(f"{key}={field(value)}" for key, value in fields.items() if value is not None)
    logger.log(level, " ".join(parts))


def describe(error: BaseException | None) -> tuple[str, str]:
    """``(error_type, error)`` strings for a record or a log line; ``("", "")`` for no error.

    Never raises: an error whose ``str()`` fails (a ``__str__`` formatting its own arguments
    wrongly) is still a crash to record, so it is described as such; describing it must not
    take its supervisor down."""
    if error is None:
        return "", ""
    try:
        text = str(error)
    except Exception as exc:  # noqa: BLE001 - a record of the crash matters more than its text
        text = f"<str() failed: {type(exc).__name__}>"
    return type(error).__name__, text
