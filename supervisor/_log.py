"""The kernel's log: one line per event, ``key=value`` fields, on logger ``tidings.supervisor``."""

from __future__ import annotations

import json
import logging

__all__ = ["describe", "log_event", "logger", "quoted"]

logger = logging.getLogger("tidings.supervisor")


def _field(value: object) -> str:
    text = value if isinstance(value, str) else str(value)
    if not text or any(ch.isspace() or ch in '"=' for ch in text):
        return json.dumps(text, ensure_ascii=False)
    return text


def quoted(text: str) -> str:
    """*text* as one double-quoted log field for lines formatted by hand (its own double
    quotes become single ones), so a reader splitting on spaces keeps a sentence whole."""
    return '"' + text.replace('"', "'") + '"'


def log_event(level: int, event: str, **fields: object) -> None:
    """Log ``event=<event> k=v ...`` at ``level``; fields that are ``None`` are left out.

    The line is only formatted when the level is enabled, so routine events cost one check.
    """
    if not logger.isEnabledFor(level):
        return
    parts = [f"event={event}"]
    parts.extend(f"{key}={_field(value)}" for key, value in fields.items() if value is not None)
    logger.log(level, " ".join(parts))


def describe(error: BaseException | None) -> tuple[str, str]:
    """``(error_type, error)`` strings for a record or a log line; ``("", "")`` for no error."""
    if error is None:
        return "", ""
    return type(error).__name__, str(error)
