"""tidings.supervisor: the supervision kernel.

Child specs, restart types (permanent / transient / temporary), strategies (one_for_one,
one_for_all, rest_for_one), restart intensity, the shutdown ladder, per-name mailboxes, restart
backoff and the fault plan. This ``__init__`` imports only the kernel: the long-lived process
(``tidings.supervisor.cli`` and friends) lives beside it and is never imported from here.
"""

from __future__ import annotations

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
