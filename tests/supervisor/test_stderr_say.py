"""The command line's stderr writer (:func:`tidings.supervisor._stderr.say`): a stderr that is
closed (None) or cannot be written loses the line, and nothing goes to stdout."""

from __future__ import annotations

import io

import pytest

from tidings.supervisor._stderr import say


class _Full(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")


def test_a_line_is_written_whole_and_flushed() -> None:
    err = io.StringIO()
    say(err, "tidings chat: hello")
    assert err.getvalue() == "tidings chat: hello\n"


def test_a_closed_stderr_loses_the_line_and_stdout_gets_nothing(
        capsys: pytest.CaptureFixture[str]) -> None:
    say(None, "tidings chat: lost")
    assert capsys.readouterr().out == ""


def test_a_stderr_that_cannot_be_written_loses_the_line_without_raising() -> None:
    say(_Full(), "tidings chat: lost")
