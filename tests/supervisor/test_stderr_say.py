"""The command line's stderr writer (:func:`tidings.supervisor._stderr.say`): a stderr that is
closed (None) or cannot be written loses the line, and nothing goes to stdout."""

from __future__ import annotations

import io

import pytest

from tidings.supervisor._stderr import say


class _Full(io.StringIO):
    """A stderr on a full disk (``2>/dev/full``, unbuffered): every write fails, recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.tried: list[str] = []

    def write(self, text: str) -> int:
        self.tried.append(text)
        raise OSError(28, "No space left on device")


class _FullAtFlush(io.StringIO):
    """A buffered stderr on a full disk: the line is taken, its flush fails (counted)."""

    def __init__(self) -> None:
        super().__init__()
        self.flushes = 0

    def flush(self) -> None:
        self.flushes += 1
        raise OSError(28, "No space left on device")


def test_a_line_is_written_whole_and_flushed() -> None:
    err = io.StringIO()
    say(err, "tidings chat: hello")
    assert err.getvalue() == "tidings chat: hello\n"


def test_a_closed_stderr_loses_the_line_and_stdout_gets_nothing(
        capsys: pytest.CaptureFixture[str]) -> None:
    say(None, "tidings chat: lost")
    assert capsys.readouterr() == ("", "")  # neither stdout nor (another) stderr has it


def test_a_stderr_that_cannot_be_written_loses_the_line_without_raising(
        capsys: pytest.CaptureFixture[str]) -> None:
    err = _Full()
    say(err, "tidings chat: lost")  # no OSError out of it
    assert err.tried[:1] == ["tidings chat: lost"]  # said there first: the line is not dropped
    assert err.getvalue() == ""  # before the stream was tried
    assert capsys.readouterr() == ("", "")  # nor written anywhere else once it failed


def test_a_stderr_whose_flush_fails_keeps_the_line_it_took_without_raising(
        capsys: pytest.CaptureFixture[str]) -> None:
    err = _FullAtFlush()
    say(err, "tidings chat: taken")  # no OSError out of it
    assert err.getvalue() == "tidings chat: taken\n"
    assert err.flushes == 1  # flushed at once, as a line on a terminal would be
    assert capsys.readouterr() == ("", "")
