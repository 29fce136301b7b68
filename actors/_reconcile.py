"""Reconcile: ask a route whose platform knows what it received about ``unknown`` rows.

A route may offer ``async reconcile(delivery_ids) -> Mapping[str, ReconcileAnswer]``. For each id
it was asked about it answers:

* ``"sent"``: the platform has it; the row becomes ``sent``.
* ``"missing"``: the platform provably does not have it; the row goes back to ``queued`` and is
  delivered again (a new attempt, in its old place in the session's order). Only with proof.
  A progress note an earlier process wrote goes on to ``failed`` (``stale_progress``) in the
  same write instead: late, it is noise (a dead turn's "working on it").
* ``None``, or no key for it: undecided; the row stays ``unknown``.

A ``"missing"`` about a row that went out again while the platform was asked (handed back with
``rt.requeue``, delivered, and ``unknown`` again: its attempt count changed) is undecided too
(logged): it was about an earlier attempt, and the platform may have the latest.

A ``reconcile`` that raises, times out, answers something that is not a mapping or a mapping
that raises when read leaves every row it was asked about ``unknown`` (logged), and the
session's later pages are not asked in that pass: a platform that failed one page would most
likely fail the next too, each costing the ask timeout (they stay ``unknown``, asked on the
next pass). An answer that is not one of the above counts as undecided (logged). Each move is
a transition that applies only from ``unknown``, and records ``delivery.reconciled`` (with the
answer) after its own event.

An answer is applied even when the session was re-bound to another route while this one was
asked: it is a fact about the platform the asked route speaks for, and nothing else moves an
``unknown`` row meanwhile. A ``"sent"`` stays true (dropping it, the new route, whose platform
never saw the row, could answer ``"missing"`` and the person would get it twice); a re-queued
row is delivered through whatever route is live then, as after any re-queue. Later pages are
asked of the live route, and the re-bind itself wakes the scanner to ask the new route about
whatever is still ``unknown``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import attrs
import trio

from tidings.store import Store, Transition, recovery, transition
from tidings.supervisor._log import field

if TYPE_CHECKING:
    from tidings.actors._lanes import Dispatcher
    from tidings.actors._router import SessionInteractionRouter

__all__ = ["RECONCILE_ANSWERS", "ReconcileAnswer", "Reconciled", "reconcile_session",
           "reconciler_of"]

log = logging.getLogger("tidings.recovery")

ReconcileAnswer = Literal["sent", "missing"] | None
"""What a route's ``reconcile`` says about one ``unknown`` delivery (see the module docs)."""
RECONCILE_ANSWERS = ("sent", "missing")

Ask = Callable[[list[str]], Awaitable[Any]]


@attrs.frozen
class Reconciled:
    """What reconciling one session did: rows now ``sent``, re-queued, left ``unknown``, and
    an earlier process's progress notes the platform lacks, ``failed`` as stale."""

    sent: int = 0
    requeued: int = 0
    undecided: int = 0
    stale: int = 0


def reconciler_of(router: SessionInteractionRouter, session_id: str) -> Ask | None:
    """The bound route's ``reconcile`` for *session_id*, or None."""
    binding = router.binding(session_id)
    ask = getattr(binding.route, "reconcile", None) if binding is not None else None
    return ask if callable(ask) else None


async def reconcile_session(store: Store, router: SessionInteractionRouter,
                            dispatcher: Dispatcher, session_id: str, *, batch: int,
                            ask_timeout: float, stale_up_to: int | None = None) -> Reconciled:
    """Ask *session_id*'s route about its ``unknown`` rows, a page of *batch* at a time (each
    ask bounded by *ask_timeout* seconds), and apply the answers; kick the session's lane if
    any row went back to ``queued``. A progress note *stale_up_to* says an earlier process
    wrote (its rowid at most that: the outbox's last rowid when this process opened) that
    is ``"missing"`` ends ``failed`` (``stale_progress``) instead of being sent late."""
    sent = requeued = undecided = stale = 0
    after = 0
    while (ask := reconciler_of(router, session_id)) is not None:  # the route may change
        rows = await store.read(recovery.unknown_rows, session_id, after, batch)
        if not rows:
            break
        after = rows[-1][1]
        ids = [delivery_id for delivery_id, _ in rows]
        asked = await store.read(recovery.unknown_attempts, ids)
        answers = await _ask(ask, session_id, ids, ask_timeout)
        if answers is None:  # failed: the next page would wait out the timeout again
            undecided += len(ids)
            break
        answers = await _still_asked(store, session_id, answers, asked)
        now = store.clock()
        moves = []
        missing: list[str] = []
        for delivery_id in ids:
            answer = answers.get(delivery_id)
            # A str first: comparing anything else may raise (pandas.NA's truth does), and
            # that would crash every pass that asks this route, not leave the row undecided.
            if not isinstance(answer, str) or answer not in RECONCILE_ANSWERS:
                if answer is not None:
                    log.warning("event=reconcile_bad_answer session=%s delivery=%s answer=%s",
                                field(session_id), delivery_id, field(_bounded_repr(answer)))
                undecided += 1
                continue
            if answer == "missing":
                missing.append(delivery_id)
            moves.append(transition(
                delivery_id, "sent" if answer == "sent" else "queued", now=now,
                only_from=("unknown",), extra_events=[("delivery.reconciled",
                                                       {"answer": answer})]))
        if not moves:
            continue
        if missing and stale_up_to is not None:
            # An earlier process's progress note goes on from queued to failed in the same
            # write, as the stale-progress pass fails one: late, it is noise.
            moves += [transition(delivery_id, "failed", now=now, error="stale_progress",
                                 only_from=("queued",))
                      for delivery_id in await store.read(recovery.earlier_progress, missing,
                                                          stale_up_to)]
        def on_commit(results: list[Any], moves: list[Transition] = moves) -> None:
            # The lane is kicked by the write, also when the caller has gone meanwhile.
            if _moved(moves, results, "queued") - _moved(moves, results, "failed"):
                dispatcher.kick(session_id)

        def on_error(error: BaseException, requeues: bool = bool(missing)) -> None:
            # It may have committed all the same ("may or may not have committed": a writer
            # process killed before it answered): unkicked, a re-queued row waited for a
            # stranded-row scan while the session's later sends went out ahead of it. A
            # write that did not commit leaves the lane nothing new to find.
            if requeues:
                dispatcher.kick(session_id)

        results = await store.commit(moves, on_commit=on_commit, on_error=on_error)
        ended = _moved(moves, results, "failed")
        sent += len(_moved(moves, results, "sent"))
        requeued += len(_moved(moves, results, "queued") - ended)
        stale += len(ended)
    return Reconciled(sent, requeued, undecided, stale)


async def _still_asked(store: Store, session_id: str, answers: Mapping[str, Any],
                      asked: Mapping[str, int]) -> Mapping[str, Any]:
    """*answers* without the ``"missing"`` ones about a row that went out again while the
    platform was asked (handed back, delivered and left ``unknown`` again: its attempts
    changed): the answer was about an earlier attempt, and the platform may have the
    latest. Undecided (logged); the next pass asks about the row as it is."""
    missing = [delivery_id for delivery_id, answer in answers.items()
               if isinstance(answer, str) and answer == "missing"]
    if not missing:
        return answers
    now = await store.read(recovery.unknown_attempts, missing)
    stale = [delivery_id for delivery_id in missing
             if delivery_id in now and now[delivery_id] != asked.get(delivery_id)]
    for delivery_id in stale:
        log.info("event=reconcile_answer_outdated session=%s delivery=%s", field(session_id),
                 delivery_id)
    return answers if not stale else {**answers, **dict.fromkeys(stale)}


def _moved(moves: list[Transition], results: list[Any], to: str) -> set[str]:
    """The ids of *moves* into *to* that applied."""
    return {move.delivery_id for move, result in zip(moves, results, strict=True)
            if result.applied and move.to == to}


async def _ask(ask: Ask, session_id: str, ids: list[str],
               ask_timeout: float) -> Mapping[str, Any] | None:
    """The route's answers; None (all undecided, and the session asked no more in this pass)
    when it fails, stalls or talks nonsense."""
    answer: Any = None
    with trio.move_on_after(ask_timeout) as scope:
        try:
            answer = await ask(list(ids))
        except Exception as exc:  # noqa: BLE001 - a failing route leaves its rows unknown
            log.warning("event=reconcile_failed session=%s rows=%d error=%s", field(session_id),
                        len(ids), field(_bounded_repr(exc)))
            return None
    if scope.cancelled_caught:
        log.warning("event=reconcile_timeout session=%s rows=%d timeout=%s", field(session_id),
                    len(ids), ask_timeout)
        return None
    if not isinstance(answer, Mapping):
        log.warning("event=reconcile_bad_answer session=%s answer_type=%s", field(session_id),
                    type(answer).__name__)
        return None
    # Read the route's mapping here, under the same rule: a mapping that fails when read is a
    # route bug that leaves its rows unknown, not a scanner crash (a crash puts the session
    # back to be asked again at once, so a route that always fails would crash it in a loop).
    try:
        return {delivery_id: answer.get(delivery_id) for delivery_id in ids}
    except Exception as exc:  # noqa: BLE001 - a failing route leaves its rows unknown
        log.warning("event=reconcile_bad_answer session=%s rows=%d error=%s", field(session_id),
                    len(ids), field(_bounded_repr(exc)))
        return None


def _bounded_repr(value: object) -> str:
    """``repr(value)`` for a log line, cut at 300 characters: a route's answer or error may be
    anything (a whole HTTP body), and a ``repr`` that raises must not stop the reconcile."""
    try:
        text = repr(value)
    except Exception as exc:  # noqa: BLE001 - a log line must not fail the reconcile
        text = f"<repr() raised {type(exc).__name__}>"
    return text if len(text) <= 300 else text[:299] + "…"
