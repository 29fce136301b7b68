"""Path arguments of the command line (an argparse ``type=``): never an empty one.

``pathlib.Path("")`` is the current directory, so an empty ``--db``, ``--config`` or
``--token-file`` (a variable that was not set: ``--config "$CONF"``) was taken for it, and
the refusal that followed named a path the user never gave ('. is a directory', 'cannot
read .: Is a directory'). Every command refuses it as bad usage instead (exit 2).
"""

from __future__ import annotations

import argparse
import pathlib

__all__ = ["path_argument"]


def path_argument(text: str) -> pathlib.Path:
    """*text* as a path; an empty one raises ``argparse.ArgumentTypeError``."""
    if not text:
        raise argparse.ArgumentTypeError("expected a path, got an empty string")
    return pathlib.Path(text)
