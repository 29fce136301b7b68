"""A package's public names, imported on first use (PEP 562 module ``__getattr__``).

Why: the writer child boots with ``from tidings.store._writer_child import main``, which runs
``tidings/__init__.py`` and ``tidings/store/__init__.py`` first. Had those imported every public
name, each child (and each ``import tidings``) would load trio, attrs-heavy modules, the actors and
the channels, about half a second, before it could open its connection. With :func:`lazy_exports`
a package's ``__init__`` lists where each name lives and imports nothing until the name is used;
``from package import *``, ``dir(package)`` and ``package.name`` work as they did.

It lives in the store, the bottom layer, so every package may use it (it imports only the
standard library).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

__all__ = ["lazy_exports", "publish_module"]


def lazy_exports(namespace: dict[str, Any], sources: Mapping[str, str],
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose ``globals()`` is *namespace*.

    *sources* maps each lazy public name to the module it comes from, relative to the package
    (``"._store"``). A name that is the module itself (``"acking": "._acking"``) is given as
    ``"._acking:"``: the module is the value. The first use of a name imports its module and
    keeps the value in *namespace*, so later uses never reach ``__getattr__`` again.
    """
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        source = sources.get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module_name, colon, _ = source.partition(":")
        module = importlib.import_module(module_name, package)
        value = module if colon else getattr(module, name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(sources))

    return __getattr__, __dir__


class _Published:
    """A meta path finder and loader for a module published under a second name.

    ``import alias`` finds no file, so the import system asks the finders on ``sys.meta_path``
    in turn, this one last. Its loader imports *target* and leaves that module in
    ``sys.modules[alias]``; the import system returns whatever the loader left there (the way a
    module that replaces itself in ``sys.modules`` is imported), so ``alias`` and *target* are
    one module object, with *target*'s name.
    """

    def __init__(self, alias: str, target: str) -> None:
        self.alias = alias
        self.target = target

    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> ModuleSpec | None:
        return ModuleSpec(fullname, self) if fullname == self.alias else None

    def create_module(self, spec: ModuleSpec) -> None:
        return None  # a plain module, which exec_module replaces

    def exec_module(self, module: ModuleType) -> None:
        sys.modules[module.__name__] = importlib.import_module(self.target)


def publish_module(alias: str, target: str) -> None:
    """Make ``import alias`` (and ``from alias import x``) import the module *target*, on first
    use: ``tidings.testing`` is ``tidings.supervisor.testing``. Idempotent."""
    if not any(isinstance(finder, _Published) and finder.alias == alias
               for finder in sys.meta_path):
        sys.meta_path.append(_Published(alias, target))
