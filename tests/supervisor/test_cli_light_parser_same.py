"""The light parser (only the command the line names is built) parses every line as the full one.

:func:`tidings.supervisor.cli.main` builds in full only the commands ``_needed(argv)`` says the
line can reach (7e321df); the others are placeholders with a name and a help. Whatever the line
(command words anywhere, as option values, after ``--``; options of every command, abbreviated
or not; junk), parsing it with that parser must end as parsing it with the full one does: the
same exit code, stdout and stderr, or the same parsed arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import io
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tidings.supervisor import cli

WORDS = ["serve", "status", "chat", "statu", "s", "help", "--", "-h", "--help", "--version",
         "--vers", "--url", "--url=status", "--db", "--db=chat", "--local", "--conversation",
         "--conv", "--json", "--limit", "3", "--status", "sent", "--port", "x", "-v", "--agent",
         "junk", "", "-", "--token-file", "--writer", "thread", "--since", "1h", "--session"]


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[Any, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:
            result: Any = ("exit", exc.code)
        else:
            result = {key: value for key, value in vars(args).items() if key != "parser"}
    return result, out.getvalue(), err.getvalue()


FULL = cli.build_parser()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=5))
def test_the_light_parser_parses_every_line_as_the_full_one(argv: list[str]) -> None:
    light = cli.build_parser(cli._needed(argv))
    assert _parse(light, argv) == _parse(FULL, argv)
