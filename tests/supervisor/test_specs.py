"""Bad specs and settings are rejected with an error naming the field."""

from __future__ import annotations

import functools
import math

import pytest
import trio

from tidings.errors import ValidationError
from tidings.supervisor import Backoff, ChildSpec, Intensity, open_supervisor


async def _noop(ctx, *, task_status=None) -> None:
    return None


def _sync(ctx, *, task_status=None) -> None:  # forgot the async: every start would fail
    return None


async def _noop_hook(*args: object) -> None:  # on_exit / dead_letter are called, not awaited
    return None


class _Child:
    def serve(self, ctx, *, task_status=None) -> None:
        return None


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"name": ""}, "name"),
    ({"fn": "not callable"}, "fn"),
    ({"fn": _sync}, "fn"),
    ({"fn": functools.partial(_sync)}, "fn"),
    ({"fn": _Child().serve}, "fn"),
    ({"restart": "sometimes"}, "restart"),
    ({"shutdown_timeout": -1}, "shutdown_timeout"),
    ({"start_timeout": 0}, "start_timeout"),
    ({"mailbox_size": -1}, "mailbox_size"),
    ({"mailbox_size": 1.5}, "mailbox_size"),
    ({"backoff": 3}, "backoff"),
    # sync hooks: an async one was accepted, and each call made a coroutine nobody awaited
    # (a RuntimeWarning): the hook never ran, and a dead letter's sender was never answered
    ({"on_exit": _noop_hook}, "on_exit"),
    ({"on_exit": functools.partial(_noop_hook)}, "on_exit"),
    ({"dead_letter": _noop_hook}, "dead_letter"),
])
def test_child_spec_rejects_bad_fields(kwargs, field):
    arguments = {"name": "a", "fn": _noop, **kwargs}
    with pytest.raises(ValidationError) as caught:
        ChildSpec(**arguments)
    assert caught.value.field == field


async def _no_task_status(ctx) -> None:  # every start: a TypeError, as ChildStartError
    return None


async def _no_ctx(*, task_status=None) -> None:
    return None


async def _takes_more(ctx, extra, *, task_status=None) -> None:
    return None


async def _any_keywords(ctx, **kwargs) -> None:
    return None


class _AsyncCallable:  # a callable object: its __call__'s signature is read
    async def __call__(self, ctx, *, task_status=None) -> None:
        return None


@pytest.mark.parametrize("fn", [
    _no_task_status,
    _no_ctx,
    _takes_more,
    functools.partial(_no_task_status),
    _AsyncCallable().__call__.__func__,  # unbound: ctx would be self, task_status no place
])
def test_child_spec_refuses_a_function_it_cannot_call_as_a_child(fn):
    """The supervisor calls ``fn(ctx, task_status=...)`` at every start (README: Children):
    one that cannot take that failed each start with a ChildStartError (a TypeError inside),
    naming neither the spec nor the field."""
    with pytest.raises(ValidationError) as caught:
        ChildSpec("a", fn)
    assert caught.value.field == "fn"
    assert "task_status" in str(caught.value)


@pytest.mark.parametrize("fn", [
    _noop,
    _any_keywords,
    functools.partial(_takes_more, extra=1),
    functools.partial(_noop, task_status=None),  # bound: the call overrides it
    _AsyncCallable(),
])
def test_child_spec_takes_any_function_that_can_be_called_as_a_child(fn):
    assert ChildSpec("a", fn).fn is fn


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
    (lambda: Backoff(seed=[7]), "seed"),  # refused by random.Random at the first restart
    (lambda: Backoff(seed=object()), "seed"),
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
    ({"restart_log_size": 10**400}, "restart_log_size"),  # no deque holds it: OverflowError
    ({"children": ["not a spec"]}, "children"),
    ({"children": None}, "children"),  # a bare TypeError: 'NoneType' object is not iterable
    ({"children": ChildSpec("a", _noop)}, "children"),  # one spec, not a list of them
])
async def test_open_supervisor_rejects_bad_arguments(kwargs, field):
    with pytest.raises(ValidationError) as caught:
        async with open_supervisor(**kwargs):
            pytest.fail("body ran")
    assert caught.value.field == field


HUGE = 10**400
"""An integer of seconds no float holds (TOML and JSON carry any): no bound, as inf is."""


@pytest.mark.parametrize(("make", "field"), [
    (lambda: ChildSpec("a", _noop, shutdown_timeout=HUGE), "shutdown_timeout"),
    (lambda: ChildSpec("a", _noop, start_timeout=HUGE), "start_timeout"),
    (lambda: Backoff(min=HUGE, max=HUGE), "min"),
    (lambda: Backoff(max=HUGE), "max"),
    (lambda: Backoff(reset_after=HUGE), "reset_after"),
    (lambda: Intensity(period=HUGE), "period"),
])
def test_seconds_past_a_float_s_range_are_no_bound_as_inf_is(make, field):
    assert getattr(make(), field) == math.inf


async def test_timeouts_past_a_float_s_range_start_and_stop_a_child_with_no_limit(
        journal, autojump_clock):
    fn = journal.worker(ready_after=1000.0, stuck_at_shutdown=True)
    specs = [ChildSpec("a", fn, start_timeout=HUGE, shutdown_timeout=HUGE)]
    with trio.move_on_after(5000.0) as stopping:
        async with open_supervisor(specs) as sup:
            assert trio.current_time() == 1000.0  # its start was waited for, not refused
    assert stopping.cancelled_caught  # its ladder waits on, as with inf: only we cut it
    assert [event[:2] for event in journal.of("ready", "stop", "cancelled")] == [
        ("ready", "a"), ("stop", "a"), ("cancelled", "a")]
    assert sup.statistics().state == "stopped"


async def test_a_backoff_capped_past_a_float_s_range_restarts_a_crashed_child(
        journal, autojump_clock):
    backoff = Backoff(min=2.0, max=HUGE, jitter=0)
    async with open_supervisor([ChildSpec("a", journal.worker(), backoff=backoff)]) as sup:
        crashed = trio.current_time()
        await sup.mailbox("a").send("crash")
        assert await journal.wait_for("start", "a", 2) == crashed + 2.0
        assert [r.action for r in sup.restart_log] == ["restart"]
