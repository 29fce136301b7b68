"""The gateway's token file is never an artifact: a turn cannot send it to a client, wherever
``gateway.token_file`` puts it and however the turn names it."""

from __future__ import annotations

import functools
import os

import trio

from tidings.channels import GatewayClient
from tidings.supervisor._config import load_config
from tidings.supervisor._serve import serve
from tidings.supervisor._signals import StopControl

AGENT = '''
from tidings import ArtifactRef


class SendsFiles:
    """Sends each line of the message as a file (``ref:P``: as ArtifactRef(path=P)) and
    keeps what came of it: ``(line, "sent" or the error's type, its field, its text)``."""

    def __init__(self):
        self.results = []

    async def run(self, turn):
        for line in turn.text.splitlines():
            source = ArtifactRef(path=line[4:]) if line.startswith("ref:") else line
            try:
                await turn.output.send_file(source, history_policy="transient")
            except Exception as exc:
                self.results.append((line, type(exc).__name__, getattr(exc, "field", None),
                                     str(exc)))
            else:
                self.results.append((line, "sent", None, ""))
        await turn.send_chunk("done")
'''


async def test_a_token_file_in_the_workspace_cannot_be_sent(tmp_path, monkeypatch) -> None:
    """Only ``<db>.token`` (the default) was the runtime's own: a ``gateway.token_file``
    given in the workspace was sent like any of its files, so an agent (steered by what it
    read) could hand every client the secret that admits them all. It is refused, naming the
    source, by its path, a relative one, a symbolic or hard link to it and an ArtifactRef."""
    (tmp_path / "token_sender_agent.py").write_text(AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    workspace = tmp_path / "ws"
    (workspace / "secret").mkdir(parents=True)
    (workspace / "notes.txt").write_text("mine")
    token_file = workspace / "secret" / "gw.token"
    config = load_config(db=str(tmp_path / "state" / "serve.db"), port=0,
                         workspace=str(workspace), token_file=str(token_file),
                         agent="token_sender_agent:SendsFiles")
    control = StopControl()
    async with trio.open_nursery() as nursery:
        info = await nursery.start(functools.partial(serve, config, control))
        assert info.token_file == token_file
        (workspace / "link.token").symlink_to(token_file)
        os.link(token_file, workspace / "hard.txt")
        refused = ["secret/gw.token", str(token_file), "link.token", "hard.txt",
                   "ref:secret/gw.token", "./secret/./gw.token"]
        token = token_file.read_text().strip()
        with trio.fail_after(30):  # hang guard (real sockets and threads: a real clock)
            async with GatewayClient.connect(info.url, token=token,
                                             conversation="a") as client:
                await client.message("\n".join([*refused, "notes.txt"]))
                await client.receive_until(lambda frame: frame["type"] == "delivery"
                                           and frame.get("text") == "done")
        control.request("test")
    results = info.gateway.agent.results
    assert [line for line, *_ in results] == [*refused, "notes.txt"]
    for line, outcome, field, text in results[:-1]:
        assert (outcome, field) == ("ArtifactError", "source.path" if line.startswith("ref:")
                                    else "source"), (line, outcome, text)
        assert "runtime's own" in text, (line, text)
    assert results[-1][:2] == ("notes.txt", "sent")


async def test_a_config_file_in_the_workspace_cannot_be_sent(tmp_path, monkeypatch) -> None:
    """``gateway.token`` may be written in the configuration file (``--config``), and with
    ``tidings serve``'s defaults (workspace ``.``) that file is often in the workspace: a
    turn could send it, and the token in it. The file is the host's, never an artifact."""
    (tmp_path / "token_sender_agent.py").write_text(AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("mine")
    toml = workspace / "serve.toml"
    toml.write_text('[gateway]\ntoken = "config-file-token"\n')
    monkeypatch.chdir(workspace)
    config = load_config(toml.relative_to(workspace), db=str(tmp_path / "state" / "serve.db"),
                         port=0, workspace=str(workspace),
                         agent="token_sender_agent:SendsFiles")
    control = StopControl()
    async with trio.open_nursery() as nursery:
        info = await nursery.start(functools.partial(serve, config, control))
        with trio.fail_after(30):  # hang guard (real sockets and threads: a real clock)
            async with GatewayClient.connect(info.url, token="config-file-token",
                                             conversation="a") as client:
                await client.message("serve.toml\nref:serve.toml\nnotes.txt")
                await client.receive_until(lambda frame: frame["type"] == "delivery"
                                           and frame.get("text") == "done")
        control.request("test")
    results = info.gateway.agent.results
    assert [(line, outcome) for line, outcome, *_ in results] == [
        ("serve.toml", "ArtifactError"), ("ref:serve.toml", "ArtifactError"),
        ("notes.txt", "sent")]
    assert all("runtime's own" in text for *_, text in results[:2]), results
