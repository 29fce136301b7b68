"""Property: the websocket protocol's promises hold over any short program of two or three
devices of one or two conversations, in each dispatch mode, with an ack_window of 32 or 1.

A program connects devices (a hello with or without ``after_seq``), drops them or bounces them
(drop, hello again), sends messages (each with a new id; ``hold-N`` ones wait until released),
resends an earlier id, sends a new id on two devices at once, races a message from one device
against another's ``/new``, ``/clear`` or ``/cancel``, acks what a connection got (then
``sync``), sends ``/new``, ``/clear``, ``/resume <a session seen>`` and ``/cancel``, and lets
the agent finish. Then every turn is let end, every device comes back with its ``after_seq``
(acking all it gets) and, once the runtime is idle (see tests/gateway/protocol_model.py):

(a) every message accepted ``started``, ``queued`` or ``merged`` has its turn end exactly once
    (one ``completed``, ``cancelled`` or ``failed``), and no device is told twice;
(b) no device is sent a delivery of a session its conversation does not own;
(c) each device has every row of its conversation's current session from its start (README:
    "the new session follows from its start"), and each connection got each session's rows
    in seq order, each once;
(d) a resent id is answered ``duplicate`` and never runs twice (one ``started``, one agent
    run, once in history); an id sent on two devices at once is handled once;
(e) a ``welcome``'s ``running`` lists the turns that started before it and have not ended;
(f) a duplicate's ``running`` says whether the turn that answers the message has not ended.

Each example runs its own ``trio.run`` on a fresh database, over real sockets on an io_clock
(a switch's answer may be held 30 virtual seconds for rows nobody acked).
"""

from __future__ import annotations

import functools
import pathlib
import tempfile

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..io_clock import io_clock
from .protocol_model import run_program

_DEVICE = st.integers(0, 2)
_OP = {
    "send": st.tuples(st.just("send"), _DEVICE, st.booleans()),  # True: a hold-N message
    "resend": st.tuples(st.just("resend"), _DEVICE, st.integers(0, 7)),
    # a new id sent on two devices at once (the second a retry on another connection)
    "twin": st.tuples(st.just("twin"), _DEVICE, _DEVICE, st.booleans()),
    # a message from one device while another sends a command, at once
    "race": st.tuples(st.just("race"), _DEVICE, _DEVICE,
                      st.sampled_from(["new", "clear", "cancel"]), st.booleans()),
    "connect": st.tuples(st.just("connect"), _DEVICE, st.booleans()),  # True: after_seq
    "drop": st.tuples(st.just("drop"), _DEVICE),
    "bounce": st.tuples(st.just("bounce"), _DEVICE, st.booleans()),  # drop, connect again
    "ack": st.tuples(st.just("ack"), _DEVICE),
    "new": st.tuples(st.just("new"), _DEVICE),
    "clear": st.tuples(st.just("clear"), _DEVICE),
    "cancel": st.tuples(st.just("cancel"), _DEVICE),
    "resume": st.tuples(st.just("resume"), _DEVICE, st.integers(0, 3)),
    "release": st.tuples(st.just("release")),
    "idle": st.tuples(st.just("idle")),
}
# Messages weigh most (turns running, waiting, merged, steered); then the rest evenly.
_KINDS = ["send"] * 5 + ["resend", "resend", "twin", "race", "race", "connect", "drop",
                         "bounce", "bounce", "ack", "new", "clear", "cancel", "resume",
                         "release", "idle"]
OPS = st.lists(st.sampled_from(_KINDS).flatmap(_OP.__getitem__), min_size=1, max_size=16)

DEVICES = st.sampled_from([
    [("d0", "alpha"), ("d1", "alpha")],
    [("d0", "alpha"), ("d1", "alpha"), ("d2", "alpha")],
    [("d0", "alpha"), ("d1", "alpha"), ("d2", "beta")],
])


# (dispatch mode, ack_window): with a window of 1 a session's rows wait on every ack
MODES = st.tuples(st.sampled_from(["steer", "followup", "collect"]), st.sampled_from([32, 1]))


def _run(devices, mode, ops) -> None:  # type: ignore[no-untyped-def]
    """*mode*: ``(dispatch mode, ack_window)``."""
    mode, window = mode
    with tempfile.TemporaryDirectory() as directory:
        trio.run(functools.partial(run_program, ack_window=window), devices, mode, ops,
                 pathlib.Path(directory), clock=io_clock())


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(DEVICES, MODES, OPS)
def test_devices_keep_the_protocols_promises(devices, mode, ops) -> None:
    # Every device starts connected: a program begins with them all there.
    _run(devices, mode, [("connect", i, False) for i in range(len(devices))] + ops)


def test_a_device_connected_through_a_resume_gets_the_resumed_sessions_earlier_rows() -> None:
    """Found by the property above (about once in 1,500 random examples; this program failed
    every time). d1 drops; d0 is answered in session A (seq 1), sends ``/new`` (B) and d1
    comes back with ``after_seq`` (B from its start); d0 ``/resume``s A: d1 got A's "resumed"
    notice (seq 2) live, but never A's seq 1, and its next hello (A, 2) could not get it back.
    Now A's earlier rows reach d1 before that notice."""
    _run([("d0", "alpha"), ("d1", "alpha")], ("steer", 32),
         [("connect", 0, False), ("connect", 1, False), ("drop", 1), ("send", 0, False),
          ("new", 0), ("connect", 1, True), ("resume", 0, 0)])
