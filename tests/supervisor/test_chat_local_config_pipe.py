"""``tidings chat --local --config <(...)`` (a pipe: process substitution, or a config made by a
command) runs the file's ``[serve] agent``, as ``tidings serve --config <(...)`` does. The chat
read the file twice, once for its channel's table and again for ``[serve] agent``: the
second read of a pipe is empty, so that agent was silently dropped and the chat ran
``EchoAgent`` (a bad one was not even refused)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest


@pytest.mark.skipif(not pathlib.Path("/dev/fd").is_dir(), reason="needs /dev/fd")
def test_the_serve_agent_of_a_piped_config_is_the_chats(tmp_path: pathlib.Path) -> None:
    read, write = os.pipe()
    os.write(write, b'[serve]\nagent = "no_such_module_h118:Agent"\n'
                    b'[channels.terminal]\ndispatch_mode = "followup"\n')
    os.close(write)  # the whole file is in the pipe: a second read finds its end
    try:
        result = subprocess.run(
            [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local",
             "--workspace", str(tmp_path), "--db", str(tmp_path / "chat.db"),
             "--config", f"/dev/fd/{read}"],
            input="hello\n", capture_output=True, text=True, timeout=60, cwd=tmp_path,
            pass_fds=(read,), check=False)
    finally:
        os.close(read)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "tidings chat: serve.agent: cannot import module 'no_such_module_h118'" \
        in result.stderr, result.stderr
    assert not (tmp_path / "chat.db").exists()
