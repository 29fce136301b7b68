"""``tidings serve --help``: ``--agent`` said its default was the built-in EchoAgent, though a
``--config`` file's ``channels.gateway.agent`` (or ``serve.agent``) is the default when given:
an operator with one in the file read that the echo agent would answer. The help says the
README's order (``serve.agent``, else ``channels.gateway.agent``, else ``EchoAgent``)."""

from __future__ import annotations

import re

import pytest

from tidings.supervisor.cli import build_parser


def test_the_agent_flag_names_the_keys_it_overrides_in_their_order(capsys) -> None:
    with pytest.raises(SystemExit):
        build_parser(["serve"]).parse_args(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    helped = re.search(r"--agent pkg\.mod:Name (.*?) --workspace", text)
    assert helped is not None, text
    order = [helped.group(1).find(key) for key in
             ("serve.agent", "channels.gateway.agent", "EchoAgent")]
    assert -1 not in order, helped.group(1)
    assert order == sorted(order), helped.group(1)
