"""tidings.supervisor: the supervision kernel.

Child specs, restart types (permanent / transient / temporary), strategies (one_for_one,
one_for_all, rest_for_one), restart intensity, the shutdown ladder, per-name mailboxes, restart
backoff and the fault plan. This ``__init__`` imports only the kernel: the long-lived process
(``tidings.supervisor.cli`` and friends) lives beside it and is never imported from here.

The kernel's names are imported on first use (PEP 562, see
:func:`~tidings.store._lazy.lazy_exports`), as ``tidings`` and ``tidings.store`` do: importing
``tidings.supervisor.cli`` runs this file first, and ``tidings --help`` or ``tidings status``
have no use for trio or the kernel. ``from tidings.supervisor import Supervisor`` and
``dir(tidings.supervisor)`` work as if every name had been imported here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tidings.store._lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from tidings.supervisor._backoff import Backoff as Backoff
    from tidings.supervisor._faults import FaultPlan as FaultPlan
    from tidings.supervisor._faults import FaultRule as FaultRule
    from tidings.supervisor._faults import InjectionRecord as InjectionRecord
    from tidings.supervisor._faults import Seam as Seam
    from tidings.supervisor._intensity import Intensity as Intensity
    from tidings.supervisor._mailbox import Mailbox as Mailbox
    from tidings.supervisor._mailbox import MailboxReceiver as MailboxReceiver
    from tidings.supervisor._mailbox import MailboxStatistics as MailboxStatistics
    from tidings.supervisor._open import open_supervisor as open_supervisor
    from tidings.supervisor._open import supervisor_child as supervisor_child
    from tidings.supervisor._records import ChildStatistics as ChildStatistics
    from tidings.supervisor._records import RestartRecord as RestartRecord
    from tidings.supervisor._records import SupervisorStatistics as SupervisorStatistics
    from tidings.supervisor._spec import ChildContext as ChildContext
    from tidings.supervisor._spec import ChildSpec as ChildSpec
    from tidings.supervisor._supervisor import Supervisor as Supervisor

__getattr__, __dir__ = _lazy_exports(globals(), {
    "Backoff": "._backoff",
    "FaultPlan": "._faults",
    "FaultRule": "._faults",
    "InjectionRecord": "._faults",
    "Seam": "._faults",
    "Intensity": "._intensity",
    "Mailbox": "._mailbox",
    "MailboxReceiver": "._mailbox",
    "MailboxStatistics": "._mailbox",
    "open_supervisor": "._open",
    "supervisor_child": "._open",
    "ChildStatistics": "._records",
    "RestartRecord": "._records",
    "SupervisorStatistics": "._records",
    "ChildContext": "._spec",
    "ChildSpec": "._spec",
    "Supervisor": "._supervisor",
})

__all__ = [
    "Backoff",
    "ChildContext",
    "ChildSpec",
    "ChildStatistics",
    "FaultPlan",
    "FaultRule",
    "InjectionRecord",
    "Intensity",
    "Mailbox",
    "MailboxReceiver",
    "MailboxStatistics",
    "RestartRecord",
    "Seam",
    "Supervisor",
    "SupervisorStatistics",
    "open_supervisor",
    "supervisor_child",
]
