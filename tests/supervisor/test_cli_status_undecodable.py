"""A database path whose bytes do not decode (a file name in another encoding): ``tidings
status`` printed them back raw in its header (Python holds them as lone surrogates, and a
stdout in a UTF-8 or C locale writes those as the bytes), where its refusals and ``tidings
prune`` print ``\\udcff``: one rule, the escaped text, as the README says of paths."""

from __future__ import annotations

import io
import os
import sys

import pytest

from tidings.supervisor.cli import main

from ..database_template import fresh_database


@pytest.fixture
def undecodable(tmp_path):
    name = os.fsdecode(b"x\xff.db")
    assert name == "x\udcff.db"
    return fresh_database(tmp_path / name)


def test_the_header_prints_undecodable_bytes_escaped(undecodable, monkeypatch) -> None:
    # stdout as in a UTF-8 or C locale (and UTF-8 mode): lone surrogates go out as the bytes
    buffer = io.BytesIO()
    stdout = io.TextIOWrapper(buffer, encoding="utf-8", errors="surrogateescape")
    monkeypatch.setattr(sys, "stdout", stdout)
    assert main(["status", "--db", str(undecodable)]) == 0
    stdout.flush()
    header = buffer.getvalue().splitlines()[0]
    assert header == os.fsencode(f"database {undecodable.parent}/") + b"x\\udcff.db"
    assert b"\xff" not in buffer.getvalue()


def test_the_refusal_prints_them_as_the_header_does(undecodable, capsys) -> None:
    """Pins what was right already (stderr writes a lone surrogate escaped)."""
    missing = undecodable.with_name(os.fsdecode(b"y\xff.db"))
    assert main(["status", "--db", str(missing)]) == 2
    err = capsys.readouterr().err
    assert "y\\udcff.db" in err
    assert "\udcff" not in err
