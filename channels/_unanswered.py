"""The "not answered" notice: what a user is told of a message that was accepted and whose
turn never ran, and why it did not (:data:`DropCause`).

Its text says what happened, not always "the server stopped": a worker's waiting turns are
also dropped when the runtime's ``tasks`` supervisor crashes (its parent restarts it: the
server runs on), and when the channel was closed and a new one took the session. Told "the
server stopped" then, a user looked for a stop that never happened. A crash's notice says the
task failed, not that it was restarted: it is written as the worker ends, before anyone knows
whether the runtime restarts it or gives up (``RestartIntensityExceeded``, then a stop). Such a
crash also cuts the turn running then: its user gets the same notice, first.
"""

from __future__ import annotations

from typing import Literal

from tidings.channels._sanitize import sanitize_line

__all__ = ["UNANSWERED_EXCERPT", "DropCause", "drop_cause_text", "unanswered_notice"]

UNANSWERED_EXCERPT = 80
"""Characters of a dropped message quoted in its notice (one line, ellipsis included)."""

DropCause = Literal["stop", "tasks_crash", "taken_over"]
"""Why a waiting turn never ran: ``stop``, the runtime stopped (or a crash: a held message's
notice, sent at the next start); ``tasks_crash``, the task running the session's turns
ended without a stop (the ``tasks`` supervisor crashed: its parent restarts it; it cut the
running turn too);
``taken_over``, the channel was closed and a new route took the session."""


def drop_cause_text(cause: DropCause, *, stopped: str = "the server") -> str:
    """What happened, as the notice says it (``the server stopped``, ...): *stopped* is the
    channel's ``stopped_name``. Also the error of a running turn a crash of the ``tasks``
    supervisor cut (its ``failed`` event), so both say it in the same words."""
    return {"stop": f"{stopped} stopped",
            "tasks_crash": f"{stopped}'s task running the turns failed",
            "taken_over": "this channel was closed and reopened"}[cause]


def unanswered_notice(text: str, *, stopped: str = "the server",
                      cause: DropCause = "stop") -> str:
    """The notice for a message (or merged messages, as one *text*) that was accepted but not
    answered: it says what happened first (*cause*, told of *stopped*, the channel's
    ``stopped_name``) and asks for it again, quoting its start on one sanitized line of at
    most :data:`UNANSWERED_EXCERPT` characters, so the user can tell which message it means
    and no control or bidi character of theirs can reshape the notice."""
    why = drop_cause_text(cause, stopped=stopped)
    excerpt = sanitize_line(text, limit=UNANSWERED_EXCERPT)
    return (f"Your message was not answered because {why} before it got to it. "
            f'Please send it again: "{excerpt}"')
