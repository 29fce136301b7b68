"""Path arguments of the command line (an argparse ``type=``): never an empty one.

``pathlib.Path("")`` is the current directory, so an empty ``--db``, ``--config`` or
``--token-file`` (a variable that was not set: ``--config "$CONF"``) was taken for it, and
the refusal that followed named a path the user never gave ('. is a directory', 'cannot
read .: Is a directory'). Every command refuses it as bad usage instead (exit 2), and a path
ending with a separator (``--db x.db/``: a folder's) too, which pathlib read as the file
``x.db``. Not ``tidings serve --db``: like serve's other value flags it sets a config key,
and ``load_config`` refuses it as an invalid ``serve.db`` (exit 2 too; README, Configuring
``tidings serve``).
"""

from __future__ import annotations

import argparse
import os
import pathlib

__all__ = ["names_a_folder", "path_argument"]


def path_argument(text: str) -> pathlib.Path:
    """*text* as a file's path; an empty one, or one ending with a separator (a folder's),
    raises ``argparse.ArgumentTypeError``."""
    if not text:
        raise argparse.ArgumentTypeError("expected a path, got an empty string")
    if names_a_folder(text):
        raise argparse.ArgumentTypeError(f"expected a file's path, got {text!r}, which ends "
                                         f"with {text[-1]} (a folder's)")
    return pathlib.Path(text)


def names_a_folder(text: str) -> bool:
    """Whether *text* ends with a path separator: it names a folder (the system refuses to
    make a file there, ``EISDIR``), but ``pathlib`` drops the separator, so ``state/`` was
    taken for a file named ``state``, made or read."""
    return text.endswith((os.sep, os.altsep or os.sep))
