"""A pytest fixture factory for a running runtime (pytest-trio), importing pytest lazily."""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from tidings.actors import Runtime, open_runtime
from tidings.errors import ValidationError
from tidings.supervisor import FaultPlan

__all__ = ["runtime_fixture"]


def runtime_fixture(*, name: str | None = None, **options: Any) -> Any:
    """Return a pytest fixture that yields a running :class:`~tidings.actors.Runtime`.

    The runtime opens on ``<tmp_path>/<fixture name>/tidings.db`` (one database per fixture,
    so a test may take two of them) with the shared workspace ``<tmp_path>/workspace``
    (created), and stops when the test ends. ``options`` go to
    :func:`tidings.open_runtime` (but ``db_path`` and ``workspace``, the fixture's own, are
    refused with :class:`~tidings.errors.ValidationError` naming them).

    Each test gets a fresh ``fault_plan`` (a plan counts its hits and how often each rule
    fired: one plan shared by the tests would let one test's consumed faults leak into the
    next): a callable is called once per test, and a
    :class:`~tidings.testing.FaultPlan` given as is is copied per test (its rules and seed,
    no hits yet), and is itself left as it was. Read what the test's own plan injected from
    ``rt.supervisor.fault_plan.injected``::

        # conftest.py
        from tidings.testing import FaultPlan, FaultRule, runtime_fixture

        rt = runtime_fixture()
        faulty_rt = runtime_fixture(fault_plan=lambda: FaultPlan([FaultRule("deliver")]))

    It needs pytest-trio (``trio_mode = true``, or mark the tests ``@pytest.mark.trio``).
    pytest is imported only when this function is called, so importing ``tidings`` never
    imports it.
    """
    for option in ("db_path", "workspace"):
        if option in options:  # else every test using the fixture failed in its setup
            raise ValidationError(option, "is the fixture's own (<tmp_path>/<fixture name>/"
                                          "tidings.db, <tmp_path>/workspace): not an option")
    import pytest

    async def runtime(tmp_path: pathlib.Path, request: Any) -> AsyncIterator[Runtime]:
        workspace = tmp_path / "workspace"
        workspace.mkdir(exist_ok=True)
        settings = dict(options)
        plan = settings.get("fault_plan")
        if isinstance(plan, FaultPlan):  # a template: this test's own counters
            settings["fault_plan"] = FaultPlan(plan.rules, plan.seed)
        elif callable(plan):
            settings["fault_plan"] = plan()
        async with open_runtime(tmp_path / request.fixturename / "tidings.db",
                                workspace=workspace,
                                **settings) as rt:
            yield rt

    fixture: Callable[..., Any] = pytest.fixture(name=name)(runtime) if name else \
        pytest.fixture(runtime)
    return fixture
