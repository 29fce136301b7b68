"""tidings.actors: the delivery runtime.

The router (live routes by session), the session lanes (one actor per session with traffic,
claiming each row before its platform I/O), the delivery pipeline (one transaction per send,
group-committed), recovery, and the output SDK a turn uses (``ctx.output`` / ``ctx.input``).
"""

from tidings.actors._acking import REPLAYABLE_STATUSES as REPLAYABLE_STATUSES
from tidings.actors._acking import StoredDelivery as StoredDelivery
from tidings.actors._artifacts import ArtifactRef as ArtifactRef
from tidings.actors._blocks import BLOCK_TYPES as BLOCK_TYPES
from tidings.actors._blocks import MAX_IDEMPOTENCY_KEY_CHARS as MAX_IDEMPOTENCY_KEY_CHARS
from tidings.actors._blocks import MAX_JSON_BYTES as MAX_JSON_BYTES
from tidings.actors._blocks import MAX_JSON_DEPTH as MAX_JSON_DEPTH
from tidings.actors._blocks import MAX_SEND_BYTES as MAX_SEND_BYTES
from tidings.actors._blocks import MAX_TEXT_BYTES as MAX_TEXT_BYTES
from tidings.actors._blocks import ContentBlock as ContentBlock
from tidings.actors._blocks import ControlBlock as ControlBlock
from tidings.actors._blocks import MediaBlock as MediaBlock
from tidings.actors._blocks import TextBlock as TextBlock
from tidings.actors._handle import DeliveryHandle as DeliveryHandle
from tidings.actors._lanes import DispatchStatistics as DispatchStatistics
from tidings.actors._policy import POLICIES as POLICIES
from tidings.actors._reconcile import RECONCILE_ANSWERS as RECONCILE_ANSWERS
from tidings.actors._reconcile import ReconcileAnswer as ReconcileAnswer
from tidings.actors._records import ApprovalDecision as ApprovalDecision
from tidings.actors._records import ApprovalRequest as ApprovalRequest
from tidings.actors._records import Outbound as Outbound
from tidings.actors._records import Prompt as Prompt
from tidings.actors._records import PromptAnswer as PromptAnswer
from tidings.actors._recovery import RecoveryReport as RecoveryReport
from tidings.actors._recovery import RecoveryScanner as RecoveryScanner
from tidings.actors._recovery import ScannerStatistics as ScannerStatistics
from tidings.actors._router import BindToken as BindToken
from tidings.actors._router import SessionInteractionRouter as SessionInteractionRouter
from tidings.actors._runtime import Runtime as Runtime
from tidings.actors._runtime import RuntimeStatistics as RuntimeStatistics
from tidings.actors._runtime import open_runtime as open_runtime
from tidings.actors._sdk import OutputSDK as OutputSDK
from tidings.actors._status import MAX_ID_CHARS as MAX_ID_CHARS
from tidings.actors._status import MAX_IDS_PER_CALL as MAX_IDS_PER_CALL
from tidings.actors._turns import CANCEL_REASONS as CANCEL_REASONS
from tidings.actors._turns import TurnContext as TurnContext
from tidings.store import DeliveryStatus as DeliveryStatus
from tidings.store import HistoryMessage as HistoryMessage
from tidings.store import PruneReport as PruneReport
from tidings.store import RuntimeEvent as RuntimeEvent
from tidings.store import SessionRecord as SessionRecord

__all__ = [
    "BLOCK_TYPES",
    "CANCEL_REASONS",
    "MAX_IDEMPOTENCY_KEY_CHARS",
    "MAX_IDS_PER_CALL",
    "MAX_ID_CHARS",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_SEND_BYTES",
    "MAX_TEXT_BYTES",
    "POLICIES",
    "RECONCILE_ANSWERS",
    "REPLAYABLE_STATUSES",
    "ApprovalDecision",
    "ApprovalRequest",
    "ArtifactRef",
    "BindToken",
    "ContentBlock",
    "ControlBlock",
    "DeliveryHandle",
    "DeliveryStatus",
    "DispatchStatistics",
    "HistoryMessage",
    "MediaBlock",
    "Outbound",
    "OutputSDK",
    "Prompt",
    "PromptAnswer",
    "PruneReport",
    "ReconcileAnswer",
    "RecoveryReport",
    "RecoveryScanner",
    "Runtime",
    "RuntimeEvent",
    "RuntimeStatistics",
    "ScannerStatistics",
    "SessionInteractionRouter",
    "SessionRecord",
    "StoredDelivery",
    "TextBlock",
    "TurnContext",
    "open_runtime",
]
