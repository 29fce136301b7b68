"""Bad specs and settings are rejected with an error naming the field."""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError
from tidings.supervisor import Backoff, ChildSpec, Intensity, open_supervisor


async def _noop(ctx, *, task_status=None) -> None:
    return None


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"name": ""}, "name"),
    ({"fn": "not callable"}, "fn"),
    ({"restart": "sometimes"}, "restart"),
    ({"shutdown_timeout": -1}, "shutdown_timeout"),
    ({"start_timeout": 0}, "start_timeout"),
    ({"mailbox_size": -1}, "mailbox_size"),
    ({"mailbox_size": 1.5}, "mailbox_size"),
    ({"backoff": 3}, "backoff"),
])
def test_child_spec_rejects_bad_fields(kwargs, field):
    arguments = {"name": "a", "fn": _noop, **kwargs}
    with pytest.raises(ValidationError) as caught:
        ChildSpec(**arguments)
    assert caught.value.field == field


def test_child_spec_defaults():
    spec = ChildSpec("a", _noop)
    assert (spec.restart, spec.shutdown_timeout, spec.start_timeout, spec.mailbox_size,
            spec.backoff) == ("permanent", 5.0, 10.0, 64, None)
    assert ChildSpec("a", _noop, shutdown_timeout=None, start_timeout=None).start_timeout is None


@pytest.mark.parametrize(("make", "field"), [
    (lambda: Intensity(max_restarts=-1), "max_restarts"),
    (lambda: Intensity(period=0), "period"),
    (lambda: Backoff(min=2.0, max=1.0), "min"),
    (lambda: Backoff(jitter=2.0), "jitter"),
    (lambda: Backoff(reset_after=-1), "reset_after"),
])
def test_intensity_and_backoff_reject_bad_fields(make, field):
    with pytest.raises(ValidationError) as caught:
        make()
    assert caught.value.field == field


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"intensity": (3, 5)}, "intensity"),
    ({"name": ""}, "name"),
    ({"fault_plan": "chaos"}, "fault_plan"),
    ({"restart_log_size": 0}, "restart_log_size"),
    ({"children": ["not a spec"]}, "children"),
])
async def test_open_supervisor_rejects_bad_arguments(kwargs, field):
    with pytest.raises(ValidationError) as caught:
        async with open_supervisor(**kwargs):
            pytest.fail("body ran")
    assert caught.value.field == field
