"""tidings: a durable, supervised delivery runtime for agent hosts, built on trio.

Agent output becomes durable session history, outbox rows and live channel messages, routed
strictly by session. The packages, bottom up: ``tidings.store`` (SQLite, the group-commit writer),
``tidings.supervisor`` (the supervision kernel, and the ``tidings`` process), ``tidings.actors``
(router, route actors, delivery pipeline, output SDK), ``tidings.channels`` (channel base,
adapters, agents).

``tidings.errors`` is the one exception module. It is kept in ``store/_errors.py`` (the store is
the bottom layer and may import nothing else) and published here under its public name, the way
``os.path`` is. ``tidings.testing`` (route doubles, fault plans) lives in
``supervisor/testing.py`` and is published the same way.
"""

from __future__ import annotations

import sys as _sys

from tidings.store import _errors as errors

_sys.modules[__name__ + ".errors"] = errors

__version__ = "0.1.0"

from tidings.actors import ArtifactRef as ArtifactRef  # noqa: E402
from tidings.actors import DeliveryHandle as DeliveryHandle  # noqa: E402
from tidings.actors import Outbound as Outbound  # noqa: E402
from tidings.actors import Runtime as Runtime  # noqa: E402
from tidings.actors import open_runtime as open_runtime  # noqa: E402
from tidings.channels import Agent as Agent  # noqa: E402
from tidings.supervisor import testing as testing  # noqa: E402

_sys.modules[__name__ + ".testing"] = testing

__all__ = ["Agent", "ArtifactRef", "DeliveryHandle", "Outbound", "Runtime", "__version__",
           "errors", "open_runtime", "testing"]
