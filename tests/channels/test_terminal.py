"""The terminal channel and ``tidings chat --local``: lines in, deliveries and lifecycle out."""

from __future__ import annotations

import io
import pathlib
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest

from tidings.channels import ChannelConfig, ToolCall
from tidings.channels._terminal import TerminalChannel
from tidings.errors import ConfigError
from tidings.supervisor._cli_chat import load_channel_config


async def lines_of(*lines: str) -> AsyncIterator[str]:
    for line in lines:
        yield line + "\n"


class Asking:
    async def run(self, turn) -> None:
        branch = await turn.prompt_user("Which branch?")
        decision = await turn.request_approval("deploy", details={"branch": branch})
        await turn.send_chunk(f"branch={branch} allowed={decision.allowed}")


class Noisy:
    async def run(self, turn) -> None:
        await turn.report_tool_call(ToolCall(name="ls", arguments={"path": "."}))
        await turn.send_chunk("red \x1b[31malert\x1b[0m \u202eevil")


async def test_a_piped_conversation_prints_each_turn_in_order(rt) -> None:
    out = io.StringIO()
    channel = TerminalChannel(rt, ChannelConfig(name="terminal"), out=out)
    await channel.chat(lines_of("hello", "tool: grep x", "/status"), one_at_a_time=True)
    lines = out.getvalue().splitlines()
    first, second = lines.index("  [started]"), lines.index("  [started]", 1)
    assert set(lines[first:second]) == {"  [started]", "terminal> hello", "  [completed]"}
    assert '  [tool_call echo_tool {"input": "grep x"}]' in lines
    assert "terminal> tool: grep x" in lines
    assert lines[-5].startswith("* Session: active, idle (id session_")
    assert lines[-4:] == ["  Access: open", "  Identity id: channel:terminal",
                          "  Memory mode: metadata-only", "  Dispatch mode: steer"]


async def test_chunks_are_shown_on_request_and_output_is_sanitized(rt) -> None:
    out = io.StringIO()
    channel = TerminalChannel(rt, ChannelConfig(name="terminal"), agent=Noisy(), out=out,
                              show_chunks=True)
    await channel.chat(lines_of("go"), one_at_a_time=True)
    text = out.getvalue()
    assert "\x1b" not in text
    assert "\u202e" not in text
    assert "terminal> red [31malert[0m evil" in text
    assert '  [tool_call ls {"path": "."}]' in text
    assert '  [chunk "red ' in text


class Streaming:
    async def run(self, turn) -> None:
        await turn.send_chunk("日本語 «é»")


# A chunk was printed as ASCII-escaped JSON: "\u65e5\u672c..." for any text not in English.
async def test_a_shown_chunk_keeps_its_characters(rt) -> None:
    out = io.StringIO()
    channel = TerminalChannel(rt, ChannelConfig(name="terminal"), agent=Streaming(), out=out,
                              show_chunks=True)
    await channel.chat(lines_of("go"), one_at_a_time=True)
    assert '  [chunk "日本語 «é»"]' in out.getvalue().splitlines()


async def test_the_next_line_answers_what_the_agent_asks(rt) -> None:
    out = io.StringIO()
    channel = TerminalChannel(rt, ChannelConfig(name="terminal"), agent=Asking(), out=out)
    await channel.chat(lines_of("ship it", "main", "y"), one_at_a_time=True)
    text = out.getvalue()
    assert "? Which branch?" in text
    assert '? approve deploy {"branch": "main"}? [y/N]' in text
    assert "terminal> branch=main allowed=True" in text


async def test_end_of_input_declines_open_questions_and_the_turn_still_ends(rt) -> None:
    out = io.StringIO()
    channel = TerminalChannel(rt, ChannelConfig(name="terminal"), agent=Asking(), out=out)
    await channel.chat(lines_of("ship it"))
    assert "terminal> branch=None allowed=False" in out.getvalue()


def test_the_channel_config_comes_from_the_toml_table(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "tidings.toml"
    path.write_text('[channels.terminal]\ndispatch_mode = "followup"\n'
                    '[channels.terminal.identity]\ndisplay_name = "Local Bot"\n')
    config = load_channel_config("terminal", path)
    assert config.dispatch_mode == "followup"
    assert config.resolved_identity().display_name == "Local Bot"
    assert load_channel_config("other", path) == ChannelConfig("other")
    path.write_text('[channels.terminal]\ncolour = "blue"\n')
    with pytest.raises(ConfigError) as caught:
        load_channel_config("terminal", path)
    assert caught.value.field == "channels.terminal.colour"
    path.write_text("not = [toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_channel_config("terminal", path)


def chat(tmp_path: pathlib.Path, stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local",
         "--db", str(tmp_path / "chat.db"), "--workspace", str(tmp_path), *args],
        input=stdin, capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False)


def test_tidings_chat_local_over_pipes_keeps_its_session_across_runs(
        tmp_path: pathlib.Path) -> None:
    config = tmp_path / "tidings.toml"
    config.write_text('[channels.terminal]\ninstructions = "Be brief."\n'
                      '[channels.terminal.identity]\ndisplay_name = "Local Bot"\n')
    first = chat(tmp_path, "hello\n/who\n", "--config", str(config))
    assert first.returncode == 0, first.stderr
    assert "Local Bot> Be brief." in first.stdout
    assert "- display name: Local Bot" in first.stdout
    assert "* Channel: terminal" in first.stdout
    assert f"Workspace: {tmp_path.name}" in first.stdout
    assert str(tmp_path) not in first.stdout
    second = chat(tmp_path, "again\n", "--config", str(config))
    assert second.returncode == 0, second.stderr
    assert "Local Bot> again" in second.stdout  # same session: no first-prompt blocks again
    assert "Channel identity" not in second.stdout


def test_tidings_chat_local_with_stdin_closed_ends_as_at_the_end_of_input(
        tmp_path: pathlib.Path) -> None:
    # ``tidings chat --local <&-``: Python sets sys.stdin to None; the line reader died with
    # an AttributeError traceback (exit 1) instead of ending as on /dev/null.
    command = [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local",
               "--db", str(tmp_path / "chat.db"), "--workspace", str(tmp_path)]
    result = subprocess.run(["sh", "-c", 'exec "$@" <&-', "sh", *command],
                            capture_output=True, text=True, timeout=60, cwd=tmp_path,
                            check=False)
    assert "Traceback" not in result.stderr
    assert result.returncode == 0, result.stderr


def test_tidings_chat_rejects_bad_usage_with_exit_code_2(tmp_path: pathlib.Path) -> None:
    bad_agent = chat(tmp_path, "", "--agent", "no_such_module:Agent")
    assert bad_agent.returncode == 2
    assert "--agent: cannot import module 'no_such_module'" in bad_agent.stderr
    config = tmp_path / "bad.toml"
    config.write_text('[channels.terminal]\ndispatch_mode = "shout"\n')
    bad_config = chat(tmp_path, "", "--config", str(config))
    assert bad_config.returncode == 2
    assert "channels.terminal.dispatch_mode" in bad_config.stderr


async def test_a_line_that_is_not_valid_unicode_is_refused_and_the_chat_goes_on(rt) -> None:
    out = io.StringIO()
    channel = TerminalChannel(rt, ChannelConfig(name="terminal"), out=out)
    # A pipe that is not UTF-8 reads with surrogateescape: \udcff is the byte 0xff.
    await channel.chat(lines_of("hello", "caf\udcff", "bye"), one_at_a_time=True)
    lines = out.getvalue().splitlines()
    assert "terminal> hello" in lines
    assert "! not sent: the line is not valid UTF-8 (at index 3)" in lines
    assert "terminal> bye" in lines


def test_tidings_chat_local_reads_a_pipe_that_is_not_utf8_in_any_locale(
        tmp_path: pathlib.Path) -> None:
    import os

    result = subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local",
         "--db", str(tmp_path / "chat.db"), "--workspace", str(tmp_path)],
        input=b"hello\ncaf\xff\nbye\n", capture_output=True, timeout=60, cwd=tmp_path,
        check=False, env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"})
    stderr = result.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr
    assert result.returncode == 0, stderr
    lines = result.stdout.decode("utf-8").splitlines()
    assert "! not sent: the line is not valid UTF-8 (at index 3)" in lines
    assert "terminal> bye" in lines
