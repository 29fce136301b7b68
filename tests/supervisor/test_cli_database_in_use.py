"""A database another process holds (a running ``tidings serve``, a host's runtime, a
``tidings prune``: its runtime lock) ends ``tidings serve``, ``tidings chat --local`` and
``tidings prune`` with one exit code, :data:`EXIT_IN_USE` (3). Before, chat exited 2 (bad
usage), serve 1 (any failure) and prune 3: a script could not tell "try again once it has
stopped" from a mistake of its own, or from a crash, the same way for each."""

from __future__ import annotations

import logging
import pathlib
from collections.abc import Iterator

import pytest

from tidings.actors._runtime_lock import lock_database, unlock_database
from tidings.channels._agents import AGENT_LOG
from tidings.supervisor import cli
from tidings.supervisor._exit_codes import EXIT_IN_USE

from ..database_template import fresh_database


@pytest.fixture
def logging_as_it_was() -> Iterator[None]:
    """serve and chat --local set the process's logging up (a handler on the root logger, on
    the captured stderr of the moment): undone, so later tests do not log into a closed one."""
    root, tidings = logging.getLogger(), logging.getLogger("tidings")
    handlers = list(root.handlers)
    levels = (root.level, tidings.level, AGENT_LOG.level)
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    root.setLevel(levels[0])
    tidings.setLevel(levels[1])
    AGENT_LOG.setLevel(levels[2])
    logging.captureWarnings(False)


@pytest.fixture
def held(tmp_path: pathlib.Path):
    """A database whose runtime lock this process holds, as a running server would."""
    db = fresh_database(tmp_path / "held.db")
    fd, created = lock_database(db)
    try:
        yield db
    finally:
        unlock_database(fd, created)


@pytest.mark.usefixtures("logging_as_it_was")
@pytest.mark.parametrize("command", [
    pytest.param(["serve", "--port", "0", "--db"], id="serve"),
    pytest.param(["chat", "--local", "--db"], id="chat-local"),
    pytest.param(["prune", "--older-than", "1d"], id="prune"),
])
def test_a_database_another_process_holds_exits_with_one_code(
        held, tmp_path, monkeypatch, capsys, command) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", None)  # (chat: no lines to read, were it to start)
    argv = [*command, str(held)]
    if command[0] != "prune":
        argv += ["--workspace", str(tmp_path)]
    assert cli.main(argv) == EXIT_IN_USE == 3
    err = capsys.readouterr().err
    assert "already open in another runtime" in err, err
    assert "Traceback" not in err
