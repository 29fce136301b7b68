"""CheckpointInjector's supervisor: a Supervisor or a callable returning the current one."""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError
from tidings.testing import CheckpointInjector, InvariantChecker


@pytest.mark.parametrize("supervisor", [None, "routes", "dispatcher", "runtime", "async"])
async def test_an_injector_refuses_what_is_no_supervisor_by_name(rt, supervisor) -> None:
    # It was taken, and the instrument counted no step and injected nothing, saying so only
    # in ``errors`` (AttributeError: no 'name'), or not at all for None: a sweep over it
    # passed without a single injection (the README's rt.dispatcher.supervisor, given as
    # rt.dispatcher).
    # An async callable answered a coroutine at every step (never awaited), not a supervisor.
    async def current():
        return rt.dispatcher.supervisor

    given = {"dispatcher": rt.dispatcher, "runtime": rt, "async": current}.get(supervisor,
                                                                                supervisor)
    with pytest.raises(ValidationError) as raised:
        CheckpointInjector(given, "route:*", at=1)
    assert raised.value.field == "supervisor"


async def test_an_injector_takes_a_supervisor_or_a_callable_returning_one(rt) -> None:
    for given in (rt.supervisor, lambda: rt.dispatcher.supervisor):
        assert CheckpointInjector(given, "route:*", at=1).steps == 0


async def test_an_injector_refuses_what_is_no_ledger_by_name(rt) -> None:
    # ledger=checker (the InvariantChecker, for checker.ledger) was taken: at the injection
    # the ledger call raised AttributeError, kept in errors, and the checker never heard of
    # the fault it was to account for.
    with pytest.raises(ValidationError) as raised:
        CheckpointInjector(rt.supervisor, "writer", at=1, ledger=InvariantChecker())
    assert raised.value.field == "ledger"
    checker = InvariantChecker()
    assert CheckpointInjector(rt.supervisor, "writer", ledger=checker.ledger).ledger is (
        checker.ledger)
