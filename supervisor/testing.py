"""Test doubles, fault injection and invariant checks for tidings, shipped for hosts too.

Published as ``tidings.testing``. Everything here is a real implementation of a seam, not a
mock: tests drive the runtime through it the way a platform (or a crash) would.

* Routes: :class:`MemoryRoute` (latency, stalls, failures), :class:`ReconcilingMemoryRoute`;
  a channel adapter: :class:`MemoryChannel` (a real ``ChannelBase`` over a memory route).
* Faults: :class:`FaultPlan` / :class:`FaultRule` at the kernel's :class:`Seam`\\ s (and
  ``Seam.DELIVER`` around a route's ``deliver``), :func:`random_fault_plan`, and
  :class:`CheckpointInjector`, a trio instrument that cancels an actor at scheduler step N.
* Invariants: :class:`InvariantChecker` (with :class:`FaultLedger`, :class:`TaskCensus`,
  :class:`ChannelCensus`, :func:`database_violations`, :func:`route_violations`,
  :func:`lane_violations`) and
  :func:`run_chaos`, a seeded fault run over the whole runtime, and
  :func:`sweep_delivery_path`, a cancel at every scheduler step of one actor in turn.
* Timing without sleeps: :func:`writer_gate` holds the store's writer so writes queue.
* pytest: :func:`runtime_fixture` (pytest is imported only when it is called), and
  :class:`RuntimeThread`, one runtime in a trio thread for many hypothesis examples.
"""

from __future__ import annotations

from tidings.supervisor import FaultPlan, FaultRule, InjectionRecord, Seam
from tidings.supervisor._testing_census import ChannelCensus, TaskCensus, live_tasks
from tidings.supervisor._testing_channel import MemoryChannel
from tidings.supervisor._testing_chaos import ACTORS, ChaosReport, random_fault_plan, run_chaos
from tidings.supervisor._testing_fixture import runtime_fixture
from tidings.supervisor._testing_gate import WriterGate, writer_gate
from tidings.supervisor._testing_instrument import CheckpointInjector
from tidings.supervisor._testing_invariants import (
    InvariantChecker,
    InvariantViolation,
    Violation,
    database_violations,
    escalation_violations,
    lane_violations,
    lifecycle_violations,
    route_violations,
)
from tidings.supervisor._testing_ledger import FaultLedger, LedgerEntry, parse_log_line
from tidings.supervisor._testing_route import MemoryRoute, ReconcilingMemoryRoute
from tidings.supervisor._testing_sweep import SweepRun, delivery_path_run, sweep_delivery_path
from tidings.supervisor._testing_thread import RuntimeThread

__all__ = [
    "ACTORS",
    "ChannelCensus",
    "ChaosReport",
    "CheckpointInjector",
    "FaultLedger",
    "FaultPlan",
    "FaultRule",
    "InjectionRecord",
    "InvariantChecker",
    "InvariantViolation",
    "LedgerEntry",
    "MemoryChannel",
    "MemoryRoute",
    "ReconcilingMemoryRoute",
    "RuntimeThread",
    "Seam",
    "SweepRun",
    "TaskCensus",
    "Violation",
    "WriterGate",
    "database_violations",
    "delivery_path_run",
    "escalation_violations",
    "lane_violations",
    "lifecycle_violations",
    "live_tasks",
    "parse_log_line",
    "random_fault_plan",
    "route_violations",
    "run_chaos",
    "runtime_fixture",
    "sweep_delivery_path",
    "writer_gate",
]
