"""``tidings status --db PATH`` says what is wrong with a PATH that is no database: a
directory was reported as "no database at ...", as if nothing were there."""

from __future__ import annotations

import os

import pytest

from tidings.errors import StoreError
from tidings.store import read_database, status_report
from tidings.supervisor.cli import main


def _status(capsys, path) -> tuple[int, str, str]:
    code = main(["status", "--db", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_directory_is_named_as_a_directory_and_left_alone(tmp_path, capsys) -> None:
    folder = tmp_path / "state"
    folder.mkdir()
    code, out, err = _status(capsys, folder)
    assert code == 2
    assert out == ""
    assert "is a directory" in err
    assert "no database" not in err
    assert os.listdir(folder) == []


def test_read_database_refuses_a_directory_as_a_store_error(tmp_path) -> None:
    with pytest.raises(StoreError, match="is a directory"):
        read_database(tmp_path, status_report)


@pytest.mark.parametrize(("content", "says"), [(b"hello\n", "not a tidings database"),
                                               (b"", "not a tidings database")])
def test_a_file_that_is_no_database_is_named_so(tmp_path, capsys, content, says) -> None:
    """Pins what was right already: a text file or an empty file is not a database."""
    path = tmp_path / "notes.db"
    path.write_bytes(content)
    code, out, err = _status(capsys, path)
    assert code == 2
    assert says in err
    assert path.read_bytes() == content
    assert sorted(os.listdir(tmp_path)) == ["notes.db"]
