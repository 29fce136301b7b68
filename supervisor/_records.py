"""Frozen records a supervisor hands out: its restart log and its statistics snapshots."""

from __future__ import annotations

from typing import Literal, final

import attrs

__all__ = ["ChildState", "ChildStatistics", "RestartAction", "RestartRecord",
           "SupervisorState", "SupervisorStatistics"]

RestartAction = Literal["restart", "escalate", "forget", "shutdown_error"]
"""What the supervisor did about a child that ended on its own:

- ``restart``: restarted it (and, per strategy, the siblings it takes along); also a crash
  that comes while a group restart is due (``one_for_all`` / ``rest_for_one``), which the
  statistics and the intensity count only once its own group restart is served (not at all
  when the one due relaunched the child meanwhile);
- ``escalate``: this restart would exceed the intensity, so the supervisor gave up (a group
  restart's crash that came while another was due is counted when its own is served: its
  ``restart`` record may be followed by this one);
- ``forget``: a temporary child failed; it is not restarted and is forgotten;
- ``shutdown_error``: it failed while being stopped; nothing more is done.
"""

ChildState = Literal["starting", "running", "backoff", "stopping", "restarting", "exited",
                     "stopped"]
"""A child's state: ``starting`` (until it reports readiness), ``running``, ``backoff``
(waiting out its restart delay), ``stopping`` (its shutdown ladder runs), ``restarting``
(waiting for its group restart), ``exited`` (it ended on its own and will not run again: the
crash that made its supervisor give up, or one while the supervisor stops; ``stopped`` once
the supervisor has stopped), ``stopped``."""
SupervisorState = Literal["starting", "running", "stopping", "stopped", "failed"]


@final
@attrs.frozen
class RestartRecord:
    """One entry of :attr:`Supervisor.restart_log`.

    ``error`` / ``error_type`` are the failure's message and class name, both ``""`` when a
    permanent child returned normally. ``incarnation`` is the incarnation that ended.
    """

    child: str
    time: float
    error: str
    error_type: str
    incarnation: int
    action: RestartAction


@final
@attrs.frozen
class ChildStatistics:
    """A snapshot of one child: state, current incarnation, restarts so far, mailbox depth.

    ``restarts`` counts the restarts this child's own endings caused; ``incarnation`` counts
    every start, so a sibling's group restart (``one_for_all`` / ``rest_for_one``) raises the
    incarnation of each child it starts again but the ``restarts`` of the failed child only:
    one failure is one restart, as the intensity counts it."""

    name: str
    state: ChildState
    incarnation: int
    restarts: int
    mailbox_depth: int


@final
@attrs.frozen
class SupervisorStatistics:
    """A snapshot of a supervisor; ``children`` in start order, ``restarts`` in all."""

    name: str
    strategy: str
    state: SupervisorState
    children: tuple[ChildStatistics, ...]
    restarts: int
