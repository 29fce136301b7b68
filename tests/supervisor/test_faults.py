"""The fault plan at every seam, both actions, its triggers, and inject_cancel."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.errors import ChildStartError, InjectedFault, ValidationError
from tidings.supervisor import (
    Backoff,
    ChildSpec,
    FaultPlan,
    FaultRule,
    InjectionRecord,
    Intensity,
    Seam,
    open_supervisor,
)

ACTIONS = ["raise", "cancel"]
LOTS = Intensity(max_restarts=100, period=1.0)


def _plan(seam: Seam, action: str, **trigger: int) -> FaultPlan:
    return FaultPlan([FaultRule(seam, child="a", action=action, **trigger)])


def _messages(journal) -> list[tuple[object, ...]]:
    return [event[2:] for event in journal.of("msg")]


async def _settle(sup, name: str, message: object) -> None:
    await sup.mailbox(name).send(message)
    await trio.testing.wait_all_tasks_blocked()


def test_seams_are_string_values():
    assert [seam.value for seam in Seam] == ["child_start", "before_message", "after_message",
                                              "send", "receive", "shutdown", "deliver"]
    assert FaultRule("send").seam is Seam.SEND


@pytest.mark.parametrize("action", ACTIONS)
async def test_child_start_seam_on_a_restart_is_a_counted_crash(journal, autojump_clock, action):
    plan = _plan(Seam.CHILD_START, action, nth=2)
    async with open_supervisor([ChildSpec("a", journal.worker())], fault_plan=plan,
                               intensity=LOTS) as sup:
        await _settle(sup, "a", "crash")
        await _settle(sup, "a", "after")
    assert plan.injected == [InjectionRecord("a", "child_start", action, 2)]
    assert [(r.incarnation, r.error_type) for r in sup.restart_log] == [
        (1, "Boom"), (2, "InjectedFault")]
    assert "child_start" in sup.restart_log[1].error
    assert ("msg", "a", 3, "after") in journal.events


@pytest.mark.parametrize("action", ACTIONS)
async def test_child_start_seam_before_readiness_is_a_child_start_error(journal, autojump_clock,
                                                                        action):
    plan = _plan(Seam.CHILD_START, action, nth=1)
    with pytest.raises(ChildStartError) as caught:
        async with open_supervisor([ChildSpec("a", journal.worker(ready_after=1.0))],
                                   fault_plan=plan):
            pytest.fail("body ran")
    cause = caught.value.__cause__
    assert isinstance(cause, InjectedFault)
    assert (cause.child, cause.seam) == ("a", "child_start")


@pytest.mark.parametrize("seam", [Seam.RECEIVE, Seam.BEFORE_MESSAGE])
@pytest.mark.parametrize("action", ACTIONS)
async def test_receive_side_seams_crash_the_child_and_lose_only_that_message(
        journal, autojump_clock, seam, action):
    plan = _plan(seam, action, nth=2)
    async with open_supervisor([ChildSpec("a", journal.worker())], fault_plan=plan,
                               intensity=LOTS) as sup:
        for message in ("m1", "m2", "m3"):
            await _settle(sup, "a", message)
    assert _messages(journal) == [(1, "m1"), (2, "m3")]  # m2 was taken, never handled
    [record] = sup.restart_log
    assert (record.incarnation, record.error_type, record.action) == (1, "InjectedFault",
                                                                      "restart")
    assert seam.value in record.error
    assert plan.injected == [InjectionRecord("a", seam.value, action, 2)]


@pytest.mark.parametrize("action", ACTIONS)
async def test_after_message_seam_crashes_after_the_message_was_handled(journal, autojump_clock,
                                                                        action):
    plan = _plan(Seam.AFTER_MESSAGE, action, nth=1)
    async with open_supervisor([ChildSpec("a", journal.worker())], fault_plan=plan,
                               intensity=LOTS) as sup:
        await _settle(sup, "a", "m1")
        await _settle(sup, "a", "m2")
    assert _messages(journal) == [(1, "m1"), (2, "m2")]
    [record] = sup.restart_log
    assert "after_message" in record.error


async def test_after_message_seam_when_the_child_leaves_after_handling(autojump_clock):
    async def one_shot(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        async for _ in ctx.mailbox:
            return

    plan = _plan(Seam.AFTER_MESSAGE, "raise", nth=1)
    async with open_supervisor([ChildSpec("a", one_shot, restart="transient")], fault_plan=plan,
                               intensity=LOTS) as sup:
        await _settle(sup, "a", "m1")
        [record] = sup.restart_log  # a crash, so the transient child is restarted
        assert (record.error_type, record.action) == ("InjectedFault", "restart")
        assert sup.statistics().children[0].incarnation == 2


async def test_send_seam_raise_fails_the_sender_and_sends_nothing(journal, autojump_clock):
    plan = _plan(Seam.SEND, "raise", every=2)
    async with open_supervisor([ChildSpec("a", journal.worker())], fault_plan=plan) as sup:
        mailbox = sup.mailbox("a")
        await _settle(sup, "a", "m1")
        with pytest.raises(InjectedFault) as caught:
            await mailbox.send("m2")
        assert (caught.value.child, caught.value.seam) == ("a", "send")
        mailbox.send_nowait("m3")
        with pytest.raises(InjectedFault):
            mailbox.send_nowait("m4")
        await trio.testing.wait_all_tasks_blocked()
    assert sup.restart_log == ()
    assert _messages(journal) == [(1, "m1"), (1, "m3")]
    assert plan.hits("a", Seam.SEND) == 4


async def test_send_seam_cancel_crashes_the_target_and_the_message_survives(journal,
                                                                            autojump_clock):
    plan = _plan(Seam.SEND, "cancel", nth=2)
    async with open_supervisor([ChildSpec("a", journal.worker())], fault_plan=plan,
                               intensity=LOTS) as sup:
        await _settle(sup, "a", "m1")
        await _settle(sup, "a", "m2")  # the sender is fine
    assert _messages(journal) == [(1, "m1"), (2, "m2")]
    [record] = sup.restart_log
    assert (record.error_type, record.incarnation) == ("InjectedFault", 1)
    assert "send" in record.error


@pytest.mark.parametrize("action", ACTIONS)
async def test_shutdown_seam_makes_the_child_fail_while_it_is_stopped(journal, autojump_clock,
                                                                      action):
    plan = _plan(Seam.SHUTDOWN, action, nth=1)
    specs = [ChildSpec("a", journal.worker()), ChildSpec("b", journal.worker())]
    async with open_supervisor(specs, fault_plan=plan) as sup:
        pass
    assert [(r.child, r.action, r.error_type) for r in sup.restart_log] == [
        ("a", "shutdown_error", "InjectedFault")]
    assert [event[1] for event in journal.of("stop")] == ["b"]  # a did not end cleanly
    assert plan.injected == [InjectionRecord("a", "shutdown", action, 1)]


async def test_a_fault_plan_reaches_dynamic_children_by_pattern(journal, autojump_clock):
    plan = FaultPlan([FaultRule(Seam.RECEIVE, child="sess-*", action="raise", every=2)])
    async with open_supervisor([], fault_plan=plan) as sup:
        for n in range(3):
            await sup.start_child(ChildSpec(f"sess-{n}", journal.worker(), restart="temporary"))
        await sup.start_child(ChildSpec("other", journal.worker()))
        for name in ("sess-0", "sess-1", "sess-2", "other"):
            await _settle(sup, name, "m1")
            await _settle(sup, name, "m2")
        assert [child.name for child in sup.statistics().children] == ["other"]
    assert [(r.child, r.action) for r in sup.restart_log] == [
        ("sess-0", "forget"), ("sess-1", "forget"), ("sess-2", "forget")]


async def test_inject_cancel_becomes_an_injected_fault_crash(journal, autojump_clock):
    async with open_supervisor([ChildSpec("a", journal.worker())], intensity=LOTS) as sup:
        assert sup.inject_cancel("a", seam="checkpoint") is True
        await trio.testing.wait_all_tasks_blocked()
        [record] = sup.restart_log
        assert (record.error_type, record.incarnation, record.action) == (
            "InjectedFault", 1, "restart")
        assert "checkpoint" in record.error
        assert sup.statistics().children[0].incarnation == 2
    [cancelled] = journal.of("cancelled")
    assert cancelled[3] == "injected fault at checkpoint of a"  # trio's reason


async def test_inject_cancel_without_a_running_incarnation_returns_false(autojump_clock):
    async def crash_soon(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        raise ValueError("down")

    spec = ChildSpec("a", crash_soon, backoff=Backoff(min=10.0, max=10.0, jitter=0.0))
    async with open_supervisor([spec], intensity=LOTS) as sup:
        await trio.testing.wait_all_tasks_blocked()
        assert sup.statistics().children[0].state == "backoff"
        assert sup.inject_cancel("a") is False


async def test_a_real_cancellation_is_never_turned_into_a_fault(journal, autojump_clock):
    plan = _plan(Seam.RECEIVE, "cancel", nth=1)
    with trio.CancelScope() as outer:
        async with open_supervisor([ChildSpec("a", journal.worker())], fault_plan=plan) as sup:
            sup.mailbox("a").send_nowait("m1")  # the fault scope is cancelled on receive...
            outer.cancel()  # ...and the outer scope too, before the child runs again
            await trio.sleep_forever()
    assert outer.cancelled_caught
    # no restart: the outer cancellation won; but the fault it overtook is not masked
    [record] = sup.restart_log
    assert (record.action, record.error_type) == ("shutdown_error", "InjectedFault")


# --- triggers ----------------------------------------------------------------------------------


def _fired(plan: FaultPlan, child: str, seam: Seam, hits: int) -> list[int]:
    return [hit for hit in range(1, hits + 1) if plan.consult(child, seam) is not None]


def test_nth_fires_once_on_that_hit_per_child():
    plan = FaultPlan([FaultRule(Seam.RECEIVE, nth=3)])
    assert _fired(plan, "a", Seam.RECEIVE, 6) == [3]
    assert _fired(plan, "b", Seam.RECEIVE, 6) == [3]  # counted per child
    assert _fired(plan, "a", Seam.SEND, 6) == []  # and per seam
    assert plan.hits("a", Seam.RECEIVE) == 6
    assert plan.hits("a", "send") == 6


def test_every_fires_on_each_multiple_and_times_caps_it():
    assert _fired(FaultPlan([FaultRule(Seam.SEND, every=2)]), "a", Seam.SEND, 7) == [2, 4, 6]
    capped = FaultPlan([FaultRule(Seam.SEND, every=2, times=2)])
    assert _fired(capped, "a", Seam.SEND, 10) == [2, 4]
    always = FaultPlan([FaultRule(Seam.SEND, times=3)])
    assert _fired(always, "a", Seam.SEND, 5) == [1, 2, 3]


def test_probability_is_reproducible_with_a_seed():
    def run(seed: int) -> list[int]:
        return _fired(FaultPlan([FaultRule(Seam.RECEIVE, probability=0.3)], seed=seed),
                      "a", Seam.RECEIVE, 200)

    first = run(1)
    assert first == run(1)
    assert first != run(2)
    assert 30 < len(first) < 90


def test_first_matching_rule_wins_and_patterns_match_names():
    plan = FaultPlan([FaultRule(Seam.SEND, child="db", action="cancel"),
                      FaultRule(Seam.SEND, child="sess-*", action="raise")])
    assert plan.consult("db", Seam.SEND) == "cancel"
    assert plan.consult("sess-42", Seam.SEND) == "raise"
    assert plan.consult("session", Seam.SEND) is None
    assert [(r.child, r.action, r.hit) for r in plan.injected] == [
        ("db", "cancel", 1), ("sess-42", "raise", 1)]


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"seam": "nowhere"}, "seam"),
    ({"seam": "send", "action": "explode"}, "action"),
    ({"seam": "send", "nth": 0}, "nth"),
    ({"seam": "send", "every": 2, "nth": 1}, "nth"),
    ({"seam": "send", "probability": 1.5}, "probability"),
    ({"seam": "send", "child": ""}, "child"),
])
def test_bad_rules_name_the_field(kwargs, field):
    with pytest.raises(ValidationError) as caught:
        FaultRule(**kwargs)
    assert caught.value.field == field


@pytest.mark.parametrize(("args", "field"), [
    ((FaultRule(Seam.SEND),), "rules"),    # one rule, not in a list: TypeError 'not iterable'
    (("send",),  "rules"),                 # a lone string: refused as the rule 's'
    ((None,), "rules"),                    # TypeError 'NoneType' object is not iterable
    (([], None), "seed"),                  # seeded from the OS: nothing replays
    (([], [1]), "seed"),                   # random's TypeError, naming no field
    (([], True), "seed"),
    (([], "1"), "seed"),
])
def test_a_plan_names_rules_or_a_seed_it_cannot_take(args, field):
    with pytest.raises(ValidationError) as caught:
        FaultPlan(*args)
    assert caught.value.field == field
    assert "got 's'" not in str(caught.value)


def test_a_plan_takes_rules_from_any_collection_and_replays_its_seed():
    rules = (FaultRule(Seam.RECEIVE, probability=0.5),)
    first = FaultPlan(rule for rule in rules)  # a generator is taken once, as a tuple
    assert first.rules == rules
    assert _fired(first, "a", Seam.RECEIVE, 50) == _fired(FaultPlan(list(rules)), "a",
                                                          Seam.RECEIVE, 50)
