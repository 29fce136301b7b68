"""Seeded random fault runs over the whole runtime: every invariant holds at every rate.

The default suite runs a few short seeds per rate; ``pytest --slow`` runs many more, with more
sessions and messages (or use ``bench/faults.py`` for figures). A failing run prints its seed:
``run_chaos(..., seed=<seed>, rate=<rate>)`` replays the same plan and workload.
"""

from __future__ import annotations

import contextlib
import sqlite3

import pytest

from tidings.errors import ValidationError
from tidings.testing import FaultRule, random_fault_plan, run_chaos

RATES = [0.002, 0.005, 0.01]


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("seed", [1, 2])
async def test_a_seeded_fault_run_keeps_every_invariant(tmp_path, workspace, seed: int,
                                                        rate: float) -> None:
    report = await run_chaos(tmp_path / "state" / "chaos.db", workspace, seed=seed, rate=rate)
    assert report.violations == [], report.summary()
    assert report.stranded == 0, report.summary()
    assert report.injected > 0
    assert lifecycle_ok(report)


async def test_without_faults_every_send_is_delivered_or_failed_by_its_route(tmp_path,
                                                                           workspace) -> None:
    report = await run_chaos(tmp_path / "state" / "chaos.db", workspace, seed=3, rate=0.0)
    assert (report.violations, report.injected, report.restarts) == ([], 0, 0)
    assert (report.sends, report.inbound) == (6 * 3 * 4, 3 * 3)
    assert set(report.outcomes) <= {"sent", "failed"}
    # steer: each chat's first two messages are cut short by the next; the last completes, or
    # fails (the agent fails fail_rate=0.05 of its turns on purpose: one here)
    assert report.turns["completed"] + report.turns["failed"] >= 3


@pytest.mark.parametrize("rate", [0.005, 0.01])
async def test_seeded_fault_runs_with_acking_routes_keep_every_invariant(
        tmp_path, workspace, rate: float) -> None:
    # Half the sessions' routes have an ack window; their seeded clients ack at once, late,
    # in batches or never before dropping (abandon_unacked), some runs with a lane budget
    # that holds one or two unacked rows. Phase 2 checks every lane ends idle and empty.
    # (A run that escalates early may have acked nothing: the acks are counted over all.)
    acks = 0
    for seed in (4, 5, 6):
        report = await run_chaos(tmp_path / f"{seed}" / "chaos.db", workspace, seed=seed,
                                 rate=rate, acking=0.5)
        assert report.violations == [], report.summary()
        assert report.stranded == 0, report.summary()
        assert report.acking > 0, report.summary()
        acks += report.acks
    assert acks > 0


async def test_without_faults_acked_and_dropped_rows_all_end_sent(tmp_path, workspace) -> None:
    # Every session acks; a dropped client's unknown rows are acked on its return or, in
    # phase 2, reconciled by its route (which has them): none is left unknown, none is
    # delivered twice (the route checks), and the 1-byte budget lets one unacked row at a time.
    report = await run_chaos(tmp_path / "state" / "chaos.db", workspace, seed=3, rate=0.0,
                             acking=1.0, lane_bytes=1)
    assert (report.violations, report.injected, report.stranded) == ([], 0, 0)
    assert (report.acking, report.lane_bytes) == (6, 1)
    assert report.drops > 0, report.summary()
    assert report.acks > 0, report.summary()
    assert set(report.outcomes) <= {"sent", "failed"}, report.summary()


def lifecycle_ok(report) -> bool:
    """Every channel turn ended with exactly one terminal event (checked by run_chaos; here:
    the counts add up)."""
    return sum(report.turns.values()) <= report.inbound


def test_a_plan_is_reproducible_from_its_seed() -> None:
    def fired(seed: int) -> list[tuple[str, str]]:
        plan = random_fault_plan(seed, 0.1)
        return [(child, seam) for child in ("writer", "route:s:1") for seam in ("send", "receive")
                for _ in range(20) if plan.consult(child, seam)]

    assert fired(7) == fired(7)
    assert fired(7) != fired(8)


@pytest.mark.slow
@pytest.mark.parametrize("rate", [0.001, *RATES, 0.02])
@pytest.mark.parametrize("seed", range(100, 120))
async def test_long_seeded_fault_runs_keep_every_invariant(tmp_path, workspace, seed: int,
                                                           rate: float) -> None:
    report = await run_chaos(tmp_path / "state" / "chaos.db", workspace, seed=seed, rate=rate,
                             sessions=12, turns=4, messages=6)
    assert report.violations == [], report.summary()
    assert report.stranded == 0, report.summary()


def _workload_shape(db_path) -> list[list[str]]:
    """Each session's rows' kinds in seq order, the sessions in the order they were made."""
    with contextlib.closing(sqlite3.connect(db_path)) as conn:
        sessions = [row[0] for row in conn.execute(
            "SELECT session_id FROM sessions WHERE channel = 'chaos' ORDER BY rowid")]
        return [[kind for (kind,) in conn.execute(
            "SELECT kind FROM outbox WHERE session_id = ? ORDER BY seq", (session_id,))]
            for session_id in sessions]


async def test_a_seed_replays_the_same_workload(tmp_path, workspace) -> None:
    # Each session chose notice or send_text from an RNG seeded with its session id, which is
    # new in every run: two runs of one seed sent different kinds (13 notices, then 15).
    shapes = []
    for run in (1, 2):
        db_path = tmp_path / f"{run}" / "chaos.db"
        report = await run_chaos(db_path, workspace, seed=7, rate=0.0, fail_rate=0.0, chats=0)
        assert report.violations == [], report.summary()
        shapes.append(_workload_shape(db_path))
    assert len(shapes[0]) == 6
    assert {"message", "notice"} <= {kind for kinds in shapes[0] for kind in kinds}
    assert shapes[0] == shapes[1]


@pytest.mark.parametrize(("option", "value"), [
    ("seed", None), ("seed", 1.5), ("seed", True),
    ("rate", 1.5), ("rate", -0.1), ("rate", "0.1"),
    ("fail_rate", 2), ("acking", -1.0), ("acking", float("nan")),
    ("sessions", -1), ("sessions", "2"), ("turns", 1.0), ("messages", -3),
    ("chats", None), ("chat_messages", True),
    ("lane_bytes", -5), ("lane_bytes", "120"), ("settle", -1), ("drain", "1"),
    ("plan", "x"), ("plan", [FaultRule("deliver")]),
])
async def test_run_chaos_refuses_a_bad_option_by_name(tmp_path, workspace, option,
                                                      value) -> None:
    # rate was refused as 'probability' (a FaultRule's field); seed=None seeded the plan and
    # the workload from the OS, so the report's 'seed=None' replayed nothing; a negative
    # count ran no session, a negative lane_bytes was set on the dispatcher as given; a
    # plan that is no FaultPlan was refused by open_runtime as 'fault_plan', no option of
    # run_chaos.
    db_path = tmp_path / "state" / "chaos.db"
    with pytest.raises(ValidationError) as raised:
        await run_chaos(db_path, workspace, **{option: value})
    assert raised.value.field == option
    assert not db_path.parent.exists()


async def test_run_chaos_refuses_a_database_that_exists_by_name(tmp_path, workspace) -> None:
    # A second run on the path of a first (a loop over seeds reusing one file) ran, and its
    # checks, which read the whole database, held the first run's rows against it: 71
    # violations ('sent, but no route accepted it') of a run where nothing went wrong.
    db_path = tmp_path / "state" / "chaos.db"
    first = await run_chaos(db_path, workspace, seed=1, rate=0.0, fail_rate=0.0)
    assert first.violations == [], first.summary()
    before = db_path.read_bytes()
    with pytest.raises(ValidationError) as raised:
        await run_chaos(db_path, workspace, seed=1, rate=0.0, fail_rate=0.0)
    assert raised.value.field == "db_path"
    assert db_path.read_bytes() == before


@pytest.mark.parametrize(("option", "value"), [
    ("children", "route:*"), ("children", ["writer", 3]), ("children", ["writer", ""]),
    ("actions", "raise"), ("actions", ["raise", None]),
    # an action that is none was refused as 'action', an option it has none of; no children
    # or no actions made a plan of no rule, and a fault run under it passed having injected
    # nothing (rate=0 is how to ask for no faults)
    ("actions", ["boom"]), ("actions", []), ("children", []),
])
def test_random_fault_plan_refuses_children_and_actions_that_are_no_names(option,
                                                                          value) -> None:
    # children="route:*" (meant: the lanes only) was taken letter by letter, and the child
    # '*' got the runtime seams of every actor (writer, routes, recovery, tasks, each lane):
    # faults everywhere, nothing said. actions="raise" was refused as the action 'r', and a
    # child 3 raised AttributeError ('startswith').
    with pytest.raises(ValidationError) as raised:
        random_fault_plan(1, 0.1, **{option: value})
    assert raised.value.field == option


def test_random_fault_plan_refuses_a_rate_and_seed_by_their_names() -> None:
    for option, value in (("rate", 1.5), ("seed", None)):
        with pytest.raises(ValidationError) as raised:
            random_fault_plan(**{"seed": 1, "rate": 0.1, option: value})
        assert raised.value.field == option


async def test_watchdogs_past_a_floats_range_are_no_bound(tmp_path, workspace) -> None:
    """``settle`` and ``drain`` of ``10**400`` passed their check (seconds >= 0), then
    ``move_on_after`` raised ``OverflowError`` mid-run; such a watchdog is no bound, as
    ``inf`` is."""
    report = await run_chaos(tmp_path / "state" / "chaos.db", workspace, seed=3, rate=0.0,
                             sessions=1, turns=1, messages=1, chats=1, chat_messages=1,
                             settle=10**400, drain=10**400)
    assert report.violations == []
