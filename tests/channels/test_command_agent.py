"""CommandAgent: one real process per turn, prompt on stdin, stdout as chunks, killed on cancel."""

from __future__ import annotations

import os
import pathlib
import sys
from collections.abc import Callable
from typing import Any

import pytest
import trio

from tidings.channels import Agent, CommandAgent
from tidings.errors import AgentError, ValidationError

posix_only = pytest.mark.skipif(os.name != "posix", reason="process groups and FIFOs are POSIX")


def py(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", code, *args]


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_the_prompt_goes_to_stdin_and_stdout_comes_back_as_chunks(
        fake_turn: Callable[..., Any]) -> None:
    agent = CommandAgent(py("import sys; sys.stdout.write(sys.stdin.read().upper())"))
    turn = fake_turn("Be brief.\n\nhello", text="hello")
    await agent.run(turn)
    assert turn.reply == "BE BRIEF.\n\nHELLO"
    assert isinstance(agent, Agent)


async def test_output_is_streamed_while_the_command_runs(fake_turn: Callable[..., Any],
                                                        tmp_path: pathlib.Path) -> None:
    # The child writes one line, then waits until the test has seen it as a chunk (the test
    # creates a file on the first chunk): so the chunk reached the turn before the process
    # ended (the test would hang otherwise; fail_after guards it).
    seen = tmp_path / "seen"
    code = ("import os, sys, time; sys.stdout.write('first\\n'); sys.stdout.flush()\n"
            "while not os.path.exists(sys.argv[1]): time.sleep(0.01)\n"
            "sys.stdout.write('second')")
    turn = fake_turn("", text="", on_chunk=lambda _: seen.touch())
    with trio.fail_after(30):
        await CommandAgent(py(code, str(seen))).run(turn)
    assert turn.chunks[0] == "first\n"
    assert turn.reply == "first\nsecond"


async def test_utf8_split_across_reads_is_decoded_and_bad_bytes_are_replaced(
        fake_turn: Callable[..., Any]) -> None:
    code = ("import sys\n"
            "out = sys.stdout.buffer\n"
            "for byte in 'é€😀'.encode() + b'\\xff!':\n"
            "    out.write(bytes([byte])); out.flush()\n")
    turn = fake_turn("", text="")
    await CommandAgent(py(code)).run(turn)
    assert turn.reply == "é€😀\ufffd!"


async def test_the_child_sees_env_cwd_and_the_session(fake_turn: Callable[..., Any],
                                                      tmp_path: pathlib.Path) -> None:
    code = ("import os; print(os.environ.get('GREETING'), os.environ.get('HOME_MARK'), "
            "os.environ['TIDINGS_SESSION_ID'], os.environ['TIDINGS_MESSAGE_ID'], "
            "os.path.basename(os.getcwd()))")
    turn = fake_turn("", text="", session_id="sess_9", message_id="m7")
    await CommandAgent(py(code), env={"GREETING": "hi"}, cwd=tmp_path).run(turn)
    assert turn.reply.split() == ["hi", "None", "sess_9", "m7", tmp_path.name]


async def test_a_large_prompt_does_not_deadlock_against_a_streaming_child(
        fake_turn: Callable[..., Any]) -> None:
    prompt = "line of text\n" * 100_000  # 1.3 MB: far beyond any pipe buffer
    code = "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n"
    turn = fake_turn(prompt, text="x")
    with trio.fail_after(60):
        await CommandAgent(py(code)).run(turn)
    assert turn.reply == prompt


async def test_a_child_that_ignores_stdin_is_fine(fake_turn: Callable[..., Any]) -> None:
    turn = fake_turn("x" * 1_000_000, text="x")
    await CommandAgent(py("print('done')")).run(turn)
    assert turn.reply == "done\n"


async def test_non_zero_exit_is_an_agent_error_with_code_and_sanitized_stderr(
        fake_turn: Callable[..., Any]) -> None:
    code = ("import sys; sys.stderr.write('warming up\\nbad \\x1b[31mthing\\u202e here\\n'); "
            "sys.exit(3)")
    with pytest.raises(AgentError) as info:
        await CommandAgent(py(code)).run(fake_turn("", text=""))
    message = str(info.value)
    assert message.startswith(f"{os.path.basename(sys.executable)} exited with code 3; stderr: ")
    assert message.endswith("warming up\nbad [31mthing here")
    assert "\x1b" not in message
    assert "\u202e" not in message
    assert not isinstance(info.value, BaseExceptionGroup)


async def test_the_stderr_tail_is_capped_and_keeps_the_end(fake_turn: Callable[..., Any]) -> None:
    code = "import sys; sys.stderr.write('x' * 300000 + 'THE END'); sys.exit(1)"
    with pytest.raises(AgentError) as info:
        await CommandAgent(py(code)).run(fake_turn("", text=""))
    tail = str(info.value).split("; stderr: ", 1)[1]
    assert len(tail) == 500
    assert tail.startswith("\u2026")
    assert tail.endswith("xxTHE END")


async def test_a_clean_exit_ignores_stderr(fake_turn: Callable[..., Any]) -> None:
    turn = fake_turn("", text="")
    await CommandAgent(py("import sys; sys.stderr.write('noise'); print('ok')")).run(turn)
    assert turn.reply == "ok\n"


@posix_only
async def test_death_by_signal_is_reported(fake_turn: Callable[..., Any]) -> None:
    code = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    with pytest.raises(AgentError, match="was killed by signal 9"):
        await CommandAgent(py(code)).run(fake_turn("", text=""))


async def test_a_missing_command_is_an_agent_error_without_its_path(
        fake_turn: Callable[..., Any], tmp_path: pathlib.Path) -> None:
    missing = tmp_path / "no-such-agent"
    with pytest.raises(AgentError) as info:
        await CommandAgent([missing]).run(fake_turn("", text=""))
    assert str(info.value).startswith("cannot start no-such-agent: ")
    assert str(tmp_path) not in str(info.value)
    assert isinstance(info.value.__cause__, OSError)


async def test_cancel_kills_the_process_and_reaps_it(fake_turn: Callable[..., Any]) -> None:
    code = ("import os, sys, time; print(os.getpid()); print('ready', flush=True); "
            "time.sleep(600)")
    with trio.fail_after(30):  # a guard against hanging, not a wait
        with trio.CancelScope() as scope:
            turn = fake_turn("", text="",
                             on_chunk=lambda _: "ready" in turn.reply and scope.cancel())
            await CommandAgent(py(code)).run(turn)
    assert scope.cancelled_caught
    pid = int(turn.reply.split()[0])
    assert gone(pid)


@posix_only
async def test_cancel_leaves_no_orphan_grandchild(fake_turn: Callable[..., Any],
                                                  tmp_path: pathlib.Path) -> None:
    fifo = tmp_path / "alive"
    os.mkfifo(fifo)
    reader = trio.lowlevel.FdStream(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    holder = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # no EOF until the grandchild writes
    grandchild = ("import sys, time; f = open(sys.argv[1], 'w'); f.write('x'); f.flush(); "
                  "time.sleep(600)")
    child = ("import subprocess, sys, time; "
             "subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2]]); "
             "time.sleep(600)")
    agent = CommandAgent(py(child, grandchild, str(fifo)))
    async with reader:
        with trio.fail_after(30):  # a guard against hanging, not a wait
            async with trio.open_nursery() as nursery:
                scope = trio.CancelScope()

                async def run_turn() -> None:
                    with scope:
                        await agent.run(fake_turn("", text=""))

                nursery.start_soon(run_turn)
                assert await reader.receive_some() == b"x"  # the grandchild is alive
                os.close(holder)
                scope.cancel()
            # EOF: every writer is gone, so the grandchild died with its group.
            assert await reader.receive_some() == b""
    assert scope.cancelled_caught


async def test_an_error_from_the_turn_kills_the_process_and_is_raised_alone(
        fake_turn: Callable[..., Any]) -> None:
    class RouteBroke(Exception):
        pass

    def fail(chunk: str) -> None:
        raise RouteBroke(chunk)

    code = "import os; print(os.getpid(), flush=True); import time; time.sleep(600)"
    turn = fake_turn("", text="", on_chunk=fail)
    with trio.fail_after(30), pytest.raises(RouteBroke):
        await CommandAgent(py(code)).run(turn)
    assert gone(int(turn.reply.split()[0]))


async def test_running_past_the_timeout_is_an_agent_error(
        fake_turn: Callable[..., Any], autojump_clock: trio.abc.Clock) -> None:
    code = "import os; print(os.getpid(), flush=True); import time; time.sleep(600)"
    turn = fake_turn("", text="")
    with pytest.raises(AgentError, match=r"ran past its timeout of 5\.0s"):
        await CommandAgent(py(code), timeout=5.0).run(turn)
    assert trio.current_time() >= 5.0
    if turn.reply:
        assert gone(int(turn.reply.split()[0]))


@pytest.mark.parametrize(("argv", "kwargs", "field"), [
    ("my-llm --stdin", {}, "argv"),
    (b"my-llm", {}, "argv"),
    ([], {}, "argv"),
    (["ok", 3], {}, "argv[1]"),
    (["ok"], {"timeout": 0}, "timeout"),
    (["ok"], {"timeout": -1}, "timeout"),
    (["ok"], {"timeout": float("nan")}, "timeout"),
    (["ok"], {"timeout": float("inf")}, "timeout"),
    (["ok"], {"timeout": 10**400}, "timeout"),  # an int no float holds
    (["ok"], {"timeout": True}, "timeout"),
    ([""], {}, "argv[0]"),
    (["ok"], {"cwd": 3}, "cwd"),
    (["ok"], {"cwd": ""}, "cwd"),
    (["ok"], {"cwd": "work\0dir"}, "cwd"),
    # a lone surrogate no byte gave (not os.fsdecode's): every turn failed with a bare
    # UnicodeEncodeError as the process was started, not even an AgentError
    (["ok", "\ud800"], {}, "argv[1]"),
    (["\ud800"], {}, "argv[0]"),
    (["ok"], {"cwd": "/tmp/\ud800"}, "cwd"),
    (["ok"], {"env": {"A": "\ud800"}}, "env"),
    (["ok"], {"env": {"\ud800": "a"}}, "env"),
])
def test_bad_arguments_are_rejected(argv: Any, kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        CommandAgent(argv, **kwargs)
    assert info.value.field == field


@posix_only
async def test_an_argument_of_bytes_that_are_not_utf8_is_passed_as_those_bytes(
        fake_turn: Callable[..., Any]) -> None:
    """What ``os.fsdecode`` makes of a non-UTF-8 byte (a lone surrogate U+DC80..U+DCFF) is an
    argument the OS takes, as that byte: accepted, unlike a surrogate no byte gives."""
    code = "import sys; sys.stdout.write(repr(sys.argv[1].encode('utf-8', 'surrogateescape')))"
    agent = CommandAgent([*py(code), os.fsdecode(b"\xff")])
    turn = fake_turn("hi", text="hi")
    await agent.run(turn)
    assert turn.reply == repr(b"\xff")
