"""Turning a stored delivery into what one particular route can render."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tidings.actors._blocks import ContentBlock, TextBlock, block_from_dict, fallback_text
from tidings.actors._handle import DeliveryItem
from tidings.actors._records import Outbound
from tidings.store import OutboxRow

__all__ = ["adapt_blocks", "build_outbound", "item_from_row"]


def adapt_blocks(blocks: tuple[ContentBlock, ...], capabilities: frozenset[str]
                 ) -> tuple[tuple[ContentBlock, ...], list[str]]:
    """Replace blocks the route cannot render by their text fallback.

    Returns the blocks to send and the block types that were degraded (text is always
    renderable; a control block the route does not take is dropped, it has no text).
    """
    adapted: list[ContentBlock] = []
    degraded: list[str] = []
    for block in blocks:
        if block.type == "text" or block.type in capabilities:
            adapted.append(block)
            continue
        degraded.append(block.type)
        if block.fallback:
            adapted.append(TextBlock(block.fallback))
    return tuple(adapted), degraded


def build_outbound(item: DeliveryItem, capabilities: frozenset[str], attempt: int
                   ) -> tuple[Outbound, list[str]]:
    blocks, degraded = adapt_blocks(item.blocks, capabilities)
    text = fallback_text(blocks) if degraded else item.text
    return Outbound(session_id=item.session_id, delivery_id=item.delivery_id, kind=item.kind,
                    blocks=blocks, text=text, channel=item.channel, metadata=item.metadata,
                    seq=item.seq, attempt=attempt), degraded


def item_from_row(row: OutboxRow) -> DeliveryItem:
    """A delivery item rebuilt from its outbox row (a refill after a backlog, or recovery)."""
    blocks = tuple(block_from_dict(_thaw(block)) for block in row.blocks)
    return DeliveryItem(delivery_id=row.delivery_id, session_id=row.session_id, kind=row.kind,
                        blocks=blocks, text=row.text, channel=row.channel,
                        metadata=row.metadata, seq=row.seq, status="scheduled", size=row.size)


def _thaw(value: Any) -> Any:
    """A block as stored, read back (read-only mappings, arrays as tuples), as plain JSON
    types again: dicts and lists, at any depth, as a live send hands it (a control block's
    ``data`` is its JSON read back, ``check_json_object``). Arrays were left tuples, and the
    objects in them read-only: a route got ``data["buttons"]`` as a list live and as a tuple
    for a row read back (after a restart, a backlog, a replay)."""
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_thaw(v) for v in value]
    return value
