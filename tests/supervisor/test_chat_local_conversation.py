"""``tidings chat --local --conversation NAME`` with a NAME whose conversation key is over
``MAX_CONVERSATION_KEY_CHARS`` (8192; the key is the channel, the scope and NAME
percent-encoded, up to 12 characters per character) is refused up front: one line naming
``--conversation`` and exit 2, before the database is made. Before, the chat started and every
message failed on a ``conversation_key`` the user never typed."""

from __future__ import annotations

import pathlib

import pytest

from tidings.actors._conversations import MAX_CONVERSATION_KEY_CHARS

from .test_chat_local_errors import chat


@pytest.mark.parametrize("name", ["a" * MAX_CONVERSATION_KEY_CHARS, "é" * 1400],
                         ids=["long", "encoded"])
def test_a_conversation_whose_key_is_over_the_cap_is_refused_up_front(
        tmp_path: pathlib.Path, name: str) -> None:
    db = tmp_path / "chat.db"
    result = chat(tmp_path, "--db", str(db), "--conversation", name)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("tidings chat: --conversation: ")
    assert f"over the limit of {MAX_CONVERSATION_KEY_CHARS}" in line
    assert len(line) < 500  # the name is not echoed whole
    assert result.stdout == ""
    assert not db.exists()


def test_a_conversation_whose_key_is_at_the_cap_is_taken(tmp_path: pathlib.Path) -> None:
    name = "a" * (MAX_CONVERSATION_KEY_CHARS - len("terminal:chat:"))
    result = chat(tmp_path, "--db", str(tmp_path / "chat.db"), "--conversation", name)
    assert result.returncode == 0, result.stderr
    assert "terminal> hello" in result.stdout.splitlines()
