"""Command parsing and the text of /help, /who and /status."""

from __future__ import annotations

import os
import pathlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidings.channels import (
    ChannelConfig,
    Command,
    InvalidCommand,
    help_text,
    parse_command,
    status_text,
    who_text,
    workspace_name,
)

OPS = ChannelConfig(name="ops", identity={"id": "bot:ops", "display_name": "Ops Bot"},
                    memory_scope={"namespace": "qwen-tag:ops"}, access=["u1", "u2"])


@pytest.mark.parametrize(("text", "command"), [
    ("/help", Command("help")),
    ("/who", Command("who")),
    ("/status", Command("status")),
    ("/cancel", Command("cancel")),
    ("/clear", Command("clear")),
    ("/reset", Command("clear")),
    ("/new", Command("new")),
    ("/resume sess_123", Command("resume", "sess_123")),
    ("/HELP", Command("help")),
    ("/Reset", Command("clear")),
    ("   /status  ", Command("status")),
    ("\n\t/who\n", Command("who")),
    ("\u200b\ufeff/help", Command("help")),
    ("\u3000/help\u00a0", Command("help")),
    ("/cancel@ops_bot", Command("cancel")),
    ("/resume@ops_bot   s-1 ", Command("resume", "s-1")),
    ("/resume\n\tsess_1 ", Command("resume", "sess_1")),
    ("/resume\u00a0fresh", Command("resume", "fresh")),
])
def test_known_commands_are_parsed(text: str, command: Command) -> None:
    assert parse_command(text) == command


@pytest.mark.parametrize("text", [
    "hello", "", "   ", "/", "/ help", "//help", "/*help*/", "/deploy now", "/x", "/tmp/file",
    "/help/more", "help", "please /help", "/hélp", "\uff0fhelp", "/help\u200bme", "/cancel!",
])
def test_anything_else_is_text_for_the_agent(text: str) -> None:
    assert parse_command(text) is None


@pytest.mark.parametrize("text", ["/resume", "/resume   ", "/resume a b", "/resume@bot"])
def test_resume_without_exactly_one_session_id_is_a_usage_error(text: str) -> None:
    result = parse_command(text)
    assert result == InvalidCommand("resume", "Usage: /resume <session_id>")


@given(st.text())
def test_parsing_never_raises(text: str) -> None:
    result = parse_command(text)
    assert result is None or isinstance(result, Command | InvalidCommand)


def test_help_lists_every_command() -> None:
    text = help_text()
    for name in ["/help", "/who", "/status", "/cancel", "/clear", "/reset", "/new",
                 "/resume <session_id>"]:
        assert name in text


def test_who_shows_identity_namespace_workspace_basename_and_session(
        tmp_path: pathlib.Path) -> None:
    workspace = tmp_path / "projects" / "repo"
    text = who_text(OPS, session_id=None, workspace=workspace)
    assert text == ("Channel: ops\nDisplay name: Ops Bot\nMemory namespace: qwen-tag:ops\n"
                    "Workspace: repo\nSession: none")
    assert "Session: active" in who_text(OPS, session_id="s1", workspace=workspace)
    assert str(tmp_path) not in text
    assert "/" not in text


def test_who_uses_default_metadata_and_leaves_out_a_missing_workspace() -> None:
    text = who_text(ChannelConfig(name="plain"), session_id="s1")
    assert text == ("Channel: plain\nDisplay name: plain\nMemory namespace: channel:plain\n"
                    "Session: active")


def test_status_shows_session_state_access_identity_id_and_memory_mode() -> None:
    assert status_text(OPS, session_id=None) == (
        "Session: none\nAccess: allowlist\nIdentity id: bot:ops\nMemory mode: metadata-only\n"
        "Dispatch mode: steer")
    assert status_text(OPS, session_id="s1").startswith("Session: active, idle (id s1)\n")
    running = status_text(OPS, session_id="s1", turn_running=True)
    assert running.startswith("Session: active, running a request (id s1)\n")
    assert "u1" not in running
    assert "Access: open" in status_text(ChannelConfig(name="plain"), session_id=None)


@pytest.mark.parametrize("workspace", [
    "/srv/agents/repo", "/srv/agents/repo/", "relative/repo", "repo", pathlib.Path("/a/b/repo"),
    "C:\\Users\\me\\repo", b"/srv/agents/repo",
])
def test_workspace_is_shown_by_basename_only(workspace: str | os.PathLike[str]) -> None:
    assert workspace_name(workspace) == "repo"


def test_odd_workspaces_never_show_a_path(tmp_path: pathlib.Path) -> None:
    assert workspace_name("/") == "(root)"
    odd = tmp_path / "re\npo\u202e"
    assert workspace_name(odd) == "re po"
    cwd_name = workspace_name(".")
    assert cwd_name == pathlib.Path.cwd().name
    assert "/" not in cwd_name


def test_no_command_answer_contains_an_absolute_path(tmp_path: pathlib.Path) -> None:
    workspace = tmp_path / "work" / "checkout"
    answers = [who_text(OPS, session_id="s1", workspace=workspace),
               who_text(OPS, session_id=None, workspace=str(workspace) + "/"),
               status_text(OPS, session_id="s1", turn_running=True), help_text()]
    for answer in answers:
        assert str(tmp_path) not in answer
        assert not re.search(r"(^|\s)/[^\s/]+/", answer)


class _IntPath:
    def __fspath__(self) -> object:
        return 1


@pytest.mark.parametrize("workspace", [1, None, 1.5, _IntPath()])
def test_a_workspace_that_is_no_path_is_refused_by_name(workspace: object) -> None:
    """``os.fsdecode``'s own TypeError named nothing (``expected str, bytes or os.PathLike
    object, not int``): a host passing the wrong value to ``who_text`` could not tell which."""
    with pytest.raises(TypeError, match=r"^workspace: expected str, bytes or os\.PathLike"):
        workspace_name(workspace)  # type: ignore[arg-type]
    if workspace is not None:  # who_text's None: no workspace line
        with pytest.raises(TypeError, match=r"^workspace: "):
            who_text(OPS, session_id=None, workspace=workspace)  # type: ignore[arg-type]
