"""The quickstart's two commands meet with no flags: ``tidings chat`` run in the directory of a
``tidings serve`` that has no configuration talks to its address and reads its token file
(README, Quickstart). Each side's default is its own constant: one changed alone (the
server's port, its database's name) left the chat knocking at the wrong door, with nothing
but a connection refused, or a missing token file, to say why."""

from __future__ import annotations

import pathlib

import pytest

from tidings.supervisor import _chat_ws
from tidings.supervisor._config import load_config
from tidings.supervisor._token import token_path
from tidings.supervisor.cli import build_parser


def test_the_chat_with_no_flags_talks_to_the_server_with_no_configuration(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    args = build_parser(["chat"]).parse_args(["chat"])
    assert (args.url, args.token, args.token_file, args.local) == (None, None, None, False)
    config = load_config()
    settings = config.gateway_config("x" * 16)
    served = f"ws://{settings.host}:{settings.port}"
    assert served == _chat_ws.DEFAULT_URL
    assert (config.token, config.token_file) == (None, None)  # serve generates one...
    assert _chat_ws.default_token_file() == token_path(config.db)  # ...where the chat reads
    assert _chat_ws.default_token_file() == tmp_path / "tidings.db.token"
    assert args.conversation == "default"
