"""``tidings serve --agent`` (and ``[channels.gateway] agent``) whose ``run`` cannot take the
turn: the gateway channel refuses it when built, which serve did after opening the database
and making the token file, so it ended in an exception-group traceback (exit 1) with the
database made, where every other agent it cannot use is refused by its key before anything
is made (exit 2)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from tidings.supervisor import cli

AGENT = '''
class TwoArguments:
    async def run(self, turn, extra):
        return None


class NoArgument:
    async def run(self):
        return None
'''


@pytest.fixture
def logging_as_it_was() -> Iterator[None]:
    """serve sets the process's logging up (a handler on the root logger, on the stderr of the
    moment, and Python's warnings captured): undone, so later tests do not log into it."""
    root, tidings = logging.getLogger(), logging.getLogger("tidings")
    handlers, levels = list(root.handlers), (root.level, tidings.level)
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    root.setLevel(levels[0])
    tidings.setLevel(levels[1])
    logging.captureWarnings(False)


@pytest.mark.usefixtures("logging_as_it_was")
@pytest.mark.parametrize("name", ["TwoArguments", "NoArgument"])
@pytest.mark.parametrize("where", ["flag", "channel key"])
def test_an_agent_whose_run_cannot_take_the_turn_is_refused_before_anything_is_made(
        tmp_path, monkeypatch, capsys, name, where) -> None:
    module = f"wrong_run_agent_{name.lower()}_{where.replace(' ', '_')}"
    code = tmp_path / "code"
    code.mkdir()
    (code / f"{module}.py").write_text(AGENT)
    monkeypatch.syspath_prepend(str(code))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    if where == "flag":
        argv, field = ["--agent", f"{module}:{name}"], "serve.agent"
    else:
        config = code / "serve.toml"
        config.write_text(f'[channels.gateway]\nagent = "{module}:{name}"\n')
        argv, field = ["--config", str(config)], "channels.gateway.agent"
    assert cli.main(["serve", "--port", "0", *argv]) == 2
    err = capsys.readouterr().err
    assert f"tidings serve: invalid configuration: {field}: " in err
    assert "run must take the turn as its one argument" in err
    assert list(work.iterdir()) == []  # no database, no lock, no token file
