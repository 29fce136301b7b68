"""A pytest fixture factory for a running runtime (pytest-trio), importing pytest lazily."""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from tidings.actors import Runtime, open_runtime

__all__ = ["runtime_fixture"]


def runtime_fixture(*, name: str | None = None, **options: Any) -> Any:
    """Return a pytest fixture that yields a running :class:`~tidings.actors.Runtime`.

    The runtime opens on ``<tmp_path>/<fixture name>/tidings.db`` (one database per fixture,
    so a test may take two of them) with the shared workspace ``<tmp_path>/workspace``
    (created), and stops when the test ends. ``options`` go to
    :func:`tidings.open_runtime`; a callable ``fault_plan`` is called once per test, so each
    test gets a fresh plan (plans count hits)::

        # conftest.py
        from tidings.testing import FaultPlan, FaultRule, runtime_fixture

        rt = runtime_fixture()
        faulty_rt = runtime_fixture(fault_plan=lambda: FaultPlan([FaultRule("deliver")]))

    It needs pytest-trio (``trio_mode = true``, or mark the tests ``@pytest.mark.trio``).
    pytest is imported only when this function is called, so importing ``tidings`` never
    imports it.
    """
    import pytest

    async def runtime(tmp_path: pathlib.Path, request: Any) -> AsyncIterator[Runtime]:
        workspace = tmp_path / "workspace"
        workspace.mkdir(exist_ok=True)
        settings = dict(options)
        plan = settings.get("fault_plan")
        if callable(plan):
            settings["fault_plan"] = plan()
        async with open_runtime(tmp_path / request.fixturename / "tidings.db",
                                workspace=workspace,
                                **settings) as rt:
            yield rt

    fixture: Callable[..., Any] = pytest.fixture(name=name)(runtime) if name else \
        pytest.fixture(runtime)
    return fixture
