"""An answer pushed out of the owed answers past ``MAX_OWED_ANSWERS`` is logged
(``event=owed_answer_dropped``, README), a *given* one too.

On the gateway a direct answer that went out is kept *given* until its client acks it, for a
resend of its id after a connection lost with it unread; such answers count toward the cap
like those never sent. One pushed out went without a log line: its id's resend (a
``duplicate``) then got no answer, and nothing said why. Past the cap, a given one (its
client most likely has it) goes before one never sent."""

from __future__ import annotations

import logging

import pytest

from tidings.channels._owed_answers import OwedAnswers


def _dropped(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "event=owed_answer_dropped" in r.getMessage()]


def test_a_given_answer_pushed_out_past_the_cap_is_logged(caplog) -> None:
    caplog.set_level(logging.INFO, logger="tidings.channels")
    owed = OwedAnswers(cap=2)
    for n in range(3):
        owed.owe("gateway:conv:a", f"m{n}", "Cleared.", "clear", given=True)
    assert owed.acked("gateway:conv:a", "m0") is None  # dropped
    [record] = _dropped(caplog)
    message = record.getMessage()
    assert "message_id=m0" in message, message
    assert "sent=yes" in message, message


def test_past_the_cap_a_given_answer_goes_before_one_never_sent(caplog) -> None:
    caplog.set_level(logging.INFO, logger="tidings.channels")
    owed = OwedAnswers(cap=2)
    owed.owe("gateway:conv:a", "lost", "Nothing to cancel.", "cancel")  # never went out
    owed.owe("gateway:conv:b", "m1", "Cleared.", "clear", given=True)
    owed.owe("gateway:conv:b", "m2", "Cleared.", "clear", given=True)  # past the cap
    assert owed.of("gateway:conv:a") == ["lost"]
    assert owed.acked("gateway:conv:b", "m1") is None  # the oldest given one went
    assert owed.acked("gateway:conv:b", "m2") is not None  # acked: forgotten
    [record] = _dropped(caplog)
    assert "message_id=m1" in record.getMessage()
    owed.owe("gateway:conv:c", "m3", "Cleared.", "clear", given=True)
    owed.owe("gateway:conv:c", "m4", "Nothing to cancel.", "cancel")  # m3, given, goes
    assert owed.acked("gateway:conv:c", "m3") is None
    assert owed.of("gateway:conv:a") == ["lost"]
    assert owed.of("gateway:conv:c") == ["m4"]
    owed.owe("gateway:conv:c", "m5", "Nothing to cancel.", "cancel")  # none given: oldest
    assert owed.of("gateway:conv:a") == []
    assert [r.getMessage() for r in _dropped(caplog)][-1].count("sent=no") == 1
