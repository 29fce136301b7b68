"""``tidings chat --local --config FILE`` runs the agent ``tidings serve --config FILE`` runs:
``--agent``, else ``[serve] agent``, else the channel's own ``agent`` key, else ``EchoAgent``.
Before, the chat read only ``channels.<name>.agent``: with the agent set in ``[serve]`` (as
``docs/tidings.example.toml`` shows it), ``serve`` ran it and the local chat echoed."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

AGENTS = '''
class ServeAgent:
    async def run(self, turn):
        await turn.send_chunk("serve agent: " + turn.text)


class ChannelAgent:
    async def run(self, turn):
        await turn.send_chunk("channel agent: " + turn.text)


class FlagAgent:
    async def run(self, turn):
        await turn.send_chunk("flag agent: " + turn.text)
'''


def _chat(cwd: pathlib.Path, config: str, *args: str) -> subprocess.CompletedProcess[str]:
    (cwd / "choice_agents.py").write_text(AGENTS)
    (cwd / "tidings.toml").write_text(config)
    return subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local",
         "--db", str(cwd / "chat.db"), "--workspace", str(cwd), "--config",
         str(cwd / "tidings.toml"), *args],
        input="hello\n", capture_output=True, text=True, timeout=60, cwd=cwd, check=False)


SERVE = '[serve]\nagent = "choice_agents:ServeAgent"\n'
CHANNEL = '[channels.terminal]\nagent = "choice_agents:ChannelAgent"\n'
GATEWAY = '[channels.gateway]\nagent = "choice_agents:ChannelAgent"\n'


@pytest.mark.parametrize(("config", "args", "reply"), [
    (SERVE, (), "serve agent: hello"),
    (SERVE + CHANNEL, (), "serve agent: hello"),  # as serve: serve.agent over the channel's
    (CHANNEL, (), "channel agent: hello"),
    (SERVE + CHANNEL, ("--agent", "choice_agents:FlagAgent"), "flag agent: hello"),
    ('[serve]\ndb = "other.db"\n', (), "hello"),  # none: EchoAgent
    # serve's channel is gateway: its agent is the terminal chat's only with --channel gateway
    (GATEWAY, (), "hello"),
    (GATEWAY, ("--channel", "gateway"), "channel agent: hello"),
], ids=["serve", "serve-over-channel", "channel", "flag-wins", "echo", "gateway-table",
        "gateway-channel"])
def test_the_local_chat_runs_the_agent_serve_would(
        tmp_path: pathlib.Path, config: str, args: tuple[str, ...], reply: str) -> None:
    result = _chat(tmp_path, config, *args)
    assert result.returncode == 0, result.stderr
    channel = "gateway" if "gateway" in args else "terminal"
    assert f"{channel}> {reply}" in result.stdout.splitlines(), result.stdout


@pytest.mark.parametrize(("config", "why"), [
    ('[serve]\nagent = "no_such_module_here:Agent"\n',
     "tidings chat: serve.agent: cannot import module 'no_such_module_here'"),
    ('[serve]\nagent = "not a path"\n', "tidings chat: serve.agent: must look like"),
    ('serve = 3\n', "tidings chat: serve: must be a table"),
], ids=["import", "shape", "not-a-table"])
def test_a_bad_serve_agent_is_refused_naming_it(
        tmp_path: pathlib.Path, config: str, why: str) -> None:
    result = _chat(tmp_path, config)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(why), result.stderr
    assert not (tmp_path / "chat.db").exists()  # refused before the database is made
