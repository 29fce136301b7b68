"""Agents pluggable by import path: ``package.module:Name``."""

from __future__ import annotations

import importlib
import pathlib
import re
import sys
from typing import Any

from tidings.actors._handle import describe_error
from tidings.errors import ConfigError
from tidings.supervisor._callables import certainly_sync, wrong_signature
from tidings.supervisor._toml_spelling import spelled

__all__ = ["load_agent", "split_import_path"]

_DOTTED = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_PATH = re.compile(rf"(?P<module>{_DOTTED}):(?P<attr>{_DOTTED})")


def split_import_path(path: object, *, field: str = "agent") -> tuple[str, str]:
    """``"package.module:Name"`` as ``("package.module", "Name")``; nothing is imported.

    Raises:
      ConfigError: naming ``field`` if ``path`` is not a string of that shape.
    """
    if not isinstance(path, str):
        raise ConfigError(field, f"must be an import path string, got {spelled(path, 80)}")
    match = _PATH.fullmatch(path)
    if match is None:
        raise ConfigError(field, f"must look like 'package.module:Name', got {path!r}")
    return match["module"], match["attr"]


def load_agent(path: str, *, field: str = "agent") -> Any:
    """Import ``package.module:Name`` and return an agent instance.

    A class is called with no arguments; any other object with a callable ``run`` (an agent
    instance kept at module level) is returned as it is. This imports code, so it may block
    while the module loads; call it at start-up, not inside a turn.

    Raises:
      ConfigError: naming ``field`` when the path is malformed, the module cannot be
        imported (it raised, or exited: ``SystemExit``, a script's top level), the name is
        missing (or getting it raised: a module's ``__getattr__`` importing it lazily),
        the class cannot be built without arguments (or exits), or the result has no
        callable ``run`` (or getting it raised), or one that is not ``async`` or cannot
        take the turn as its one argument. The underlying error is ``__cause__``.
    """
    module_name, attr_path = split_import_path(path, field=field)
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(field, f"cannot import module {module_name!r}: {exc}") from exc
    except Exception as exc:
        raise ConfigError(
            field, f"importing module {module_name!r} failed: {describe_error(exc)}",
        ) from exc
    except SystemExit as exc:  # a script's top level (its argparse read our argv): not a stop
        raise ConfigError(
            field, f"importing module {module_name!r} exited (SystemExit: {exc}): is it a "
                   f"script that runs at import?",
        ) from exc
    for attr in attr_path.split("."):
        try:
            target = getattr(target, attr)
        except AttributeError as exc:
            raise ConfigError(field, f"{module_name!r} has no attribute {attr_path!r}"
                                     f"{_shadowed(module_name)}") from exc
        except Exception as exc:  # a module's __getattr__ (a lazy import of the agent) raised
            raise ConfigError(
                field, f"getting {attr_path!r} from {module_name!r} failed: "
                       f"{describe_error(exc)}",
            ) from exc
    if isinstance(target, type):
        try:
            target = target()
        except (Exception, SystemExit) as exc:  # an exit here is a refusal to be built
            raise ConfigError(
                field, f"cannot create {attr_path} with no arguments: {describe_error(exc)}",
            ) from exc
    try:
        run = getattr(target, "run", None)
    except Exception as exc:  # a property that raised: else a traceback naming no field
        raise ConfigError(field, f"{path!r}: getting its run failed: "
                                 f"{describe_error(exc)}") from exc
    if not callable(run):
        raise ConfigError(field, f"{path!r} is not an agent: it has no callable 'run'")
    if certainly_sync(run):
        raise ConfigError(field, f"{path!r}: run must be a coroutine function "
                                 f"(async def run(turn)), not a plain one")
    if (wrong := wrong_signature(run)) is not None:  # as the channel refuses it, but now:
        # before serve has made its database and token file (every turn: a TypeError)
        raise ConfigError(field, f"{path!r}: run must take the turn as its one argument "
                                 f"(async def run(turn)), got run{wrong!s:.80}")
    return target


def _shadowed(module_name: str) -> str:
    """What to add when *module_name*'s top-level module was imported from elsewhere while the
    current directory holds one of that name (a first agent saved as ``secrets.py`` or
    ``test.py``): the current directory comes after the standard library and the installed
    packages on ``sys.path`` (see ``tidings.supervisor.cli``), so that file was never imported,
    and "has no attribute" alone points at a file that plainly has it. "" otherwise."""
    top = module_name.partition(".")[0]
    try:
        here = pathlib.Path.cwd().resolve()
    except OSError:  # the directory was removed under us
        return ""
    local = [path for path in (here / f"{top}.py", here / top) if path.exists()]
    if not local:
        return ""
    origin = getattr(sys.modules.get(top), "__file__", None)
    if origin is not None and pathlib.Path(origin).resolve().is_relative_to(here):
        return ""  # it is the current directory's
    imported = origin if origin is not None else "built into Python"
    return (f" (the module imported is {imported}; {local[0].name} of the current directory "
            f"is not imported, as it would shadow that one: rename it)")
