"""The commands' stderr lines (:func:`tidings.supervisor._stderr.one_line`) with a path whose
bytes do not decode (a file name in another encoding: Python holds each such byte as a lone
surrogate). ``one_line`` escaped control characters but left those surrogates to the stream,
so the line depended on how stderr was opened: Python's own stderr writes them ``\\udcff``,
but a host calling ``main()`` with stderr on a file it opened (``open(log, "w")``, strict)
got a ``UnicodeEncodeError`` traceback instead of the refusal, and a stream that writes them
back (``surrogateescape``) got the raw byte, no valid UTF-8. The line now holds ``\\udcff``
itself, on any stream, as the status views print it on stdout."""

from __future__ import annotations

import io
import os
import sys

import pytest

from tidings.supervisor._stderr import one_line
from tidings.supervisor.cli import main

from ..database_template import fresh_database


def _stderr(monkeypatch: pytest.MonkeyPatch, errors: str) -> tuple[io.TextIOWrapper, io.BytesIO]:
    buffer = io.BytesIO()
    err = io.TextIOWrapper(buffer, encoding="utf-8", errors=errors, write_through=True)
    monkeypatch.setattr(sys, "stderr", err)
    return err, buffer


@pytest.mark.parametrize("errors", ["strict", "surrogateescape"])
def test_status_says_no_delivery_in_an_undecodable_path_escaped(tmp_path, monkeypatch,
                                                                errors) -> None:
    db = fresh_database(tmp_path / os.fsdecode(b"x\xff.db"))
    _, buffer = _stderr(monkeypatch, errors)
    assert main(["status", "--db", str(db), "no-such-delivery"]) == 1
    line = buffer.getvalue()
    assert line == (b"tidings status: no delivery 'no-such-delivery' in "
                    + os.fsencode(f"{db.parent}/") + b"x\\udcff.db\n")


@pytest.mark.parametrize("errors", ["strict", "surrogateescape"])
def test_prune_says_no_database_in_a_folder_that_does_not_exist_escaped(tmp_path, monkeypatch,
                                                                       errors) -> None:
    missing = tmp_path / os.fsdecode(b"gone\xff") / "t.db"
    _, buffer = _stderr(monkeypatch, errors)
    assert main(["prune", str(missing), "--older-than", "1d"]) == 2
    assert buffer.getvalue() == (b"tidings prune: no database at "
                                 + os.fsencode(f"{tmp_path}/") + b"gone\\udcff/t.db\n")


def test_one_line_escapes_lone_surrogates_and_controls_alike() -> None:
    assert one_line("a\udcff\nb\x1b") == "a\\udcff\\x0ab\\x1b"
    assert one_line("ünïcode 日本") == "ünïcode 日本"  # only what no UTF-8 stream can hold
