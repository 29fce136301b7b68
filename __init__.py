"""tidings: a durable, supervised delivery runtime for agent hosts, built on trio.

Agent output becomes durable session history, outbox rows and live channel messages, routed
strictly by session. The packages, bottom up: ``tidings.store`` (SQLite, the group-commit writer),
``tidings.supervisor`` (the supervision kernel, and the ``tidings`` process), ``tidings.actors``
(router, route actors, delivery pipeline, output SDK), ``tidings.channels`` (channel base,
adapters, agents).

``tidings.errors`` is the one exception module. It is kept in ``store/_errors.py`` (the store is
the bottom layer and may import nothing else) and published here under its public name, the way
``os.path`` is. ``tidings.testing`` (route doubles, fault plans) lives in
``supervisor/testing.py`` and is published under its public name too, on first use.

The other public names are imported on first use as well (PEP 562, see
:func:`~tidings.store._lazy.lazy_exports`): ``import tidings`` loads neither trio nor the
packages, so the writer child, which boots through ``tidings.store``, starts quickly.
``tidings.open_runtime``, ``from tidings import Runtime`` and ``dir(tidings)`` work as if
every name had been imported here, and so do the subpackages (``tidings.actors.MAX_TEXT_BYTES``
after a bare ``import tidings``).
"""

from __future__ import annotations

import sys as _sys
from typing import TYPE_CHECKING

from tidings.store import _errors as errors
from tidings.store._lazy import lazy_exports as _lazy_exports
from tidings.store._lazy import publish_module as _publish_module

_sys.modules[__name__ + ".errors"] = errors

__version__ = "0.1.0"

if TYPE_CHECKING:
    from tidings.actors import ArtifactRef as ArtifactRef
    from tidings.actors import DeliveryHandle as DeliveryHandle
    from tidings.actors import Outbound as Outbound
    from tidings.actors import Runtime as Runtime
    from tidings.actors import open_runtime as open_runtime
    from tidings.channels import Agent as Agent
    from tidings.supervisor import testing as testing

__getattr__, __dir__ = _lazy_exports(globals(), {
    "ArtifactRef": ".actors",
    "DeliveryHandle": ".actors",
    "Outbound": ".actors",
    "Runtime": ".actors",
    "open_runtime": ".actors",
    "Agent": ".channels",
    "testing": ".testing:",
    # The subpackages too, so ``import tidings`` then ``tidings.actors.MAX_TEXT_BYTES`` works as
    # the README writes it (else only once something had imported that subpackage).
    "actors": ".actors:",
    "channels": ".channels:",
    "supervisor": ".supervisor:",
})
_publish_module(__name__ + ".testing", __name__ + ".supervisor.testing")

__all__ = ["Agent", "ArtifactRef", "DeliveryHandle", "Outbound", "Runtime", "__version__",
           "errors", "open_runtime", "testing"]
