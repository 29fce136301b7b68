"""``tidings status`` refuses a ``DELIVERY_ID`` or ``--session`` that is no id (empty, or not
valid UTF-8 on the command line: Python hands it over with lone surrogates) as bad usage,
exit 2 naming it: such an argument died with a ``UnicodeEncodeError`` traceback, and
``--session ""`` printed an empty overview as if the session had no deliveries."""

from __future__ import annotations

import pytest

import tidings
from tidings.supervisor.cli import main


@pytest.fixture
async def db(tmp_path, workspace):
    path = tmp_path / "tidings.db"
    async with tidings.open_runtime(path, workspace=workspace) as rt:
        assert await rt.create_session(session_id="session_1") == "session_1"
    return path


@pytest.mark.parametrize(("argv", "named"), [
    (["dlv_\udcff"], "DELIVERY_ID"),
    ([""], "DELIVERY_ID"),
    (["--session", "s\udcff"], "--session"),
    (["--session", ""], "--session"),
], ids=["delivery-undecodable", "delivery-empty", "session-undecodable", "session-empty"])
async def test_an_argument_that_is_no_id_is_bad_usage(db, capsys, argv, named) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["status", "--db", str(db), *argv])
    assert caught.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert named in err
    assert "Traceback" not in err


async def test_a_plain_session_still_filters(db, capsys) -> None:
    assert main(["status", "--db", str(db), "--session", "session_1"]) == 0
    assert "session session_1" in capsys.readouterr().out
