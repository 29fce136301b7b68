"""The ``tidings`` command line: one subcommand per small ``_cli_<name>`` module.

Each command module has ``register(commands)``, which adds its parser to the subparsers and sets
``run(args) -> exit code`` as the parser's default. Adding a command is adding a module to
:data:`_COMMANDS`.
"""

from __future__ import annotations

import argparse
import os
import sys

import tidings
from tidings.supervisor import _cli_chat, _cli_serve, _cli_status

__all__ = ["build_parser", "main"]

_COMMANDS = (_cli_serve, _cli_status, _cli_chat)
_AGENT_COMMANDS = ("serve", "chat")
"""The commands that may load an agent by import path."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tidings", description="A durable, supervised delivery runtime for agent hosts.")
    parser.add_argument("--version", action="version", version=f"tidings {tidings.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in _COMMANDS:
        command.register(commands)
    return parser


def _importable_here() -> None:
    """Let ``--agent module:Name`` (and a config's ``agent``) name a module in the current
    directory, as ``python -m`` and ``uvicorn main:app`` do: the installed script has its own
    directory first on ``sys.path``, not this one. Appended, so it never shadows the standard
    library or an installed package."""
    try:
        here = os.getcwd()
    except OSError:  # the directory was removed under us: nothing to add
        return
    if "" not in sys.path and here not in sys.path:
        sys.path.append(here)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (argparse exits 2 on bad usage)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if args.command in _AGENT_COMMANDS:
        _importable_here()
    try:
        code = int(args.run(args))
        sys.stdout.flush()
    except BrokenPipeError:  # `tidings status | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
