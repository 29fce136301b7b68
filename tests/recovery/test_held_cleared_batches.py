"""Recovery releases the held messages of sessions cleared since (no notice is sent for them)
:data:`MAX_IDS_PER_CALL` per commit, as ``release_inbound`` does: a release goes with nothing
else, and one commit of every such message (a crash after many ``/clear``) would hold the
store's only writer, every session's sends, for as long as it takes. Before, they were all
released in one commit at the end of the pass. The cap is patched small to keep this fast."""

from __future__ import annotations

from typing import Any

import tidings
from tidings.actors import _held

from .conftest import held_count


async def test_held_messages_of_cleared_sessions_are_released_in_capped_commits(
        db_path, workspace, monkeypatch) -> None:
    count, cap = 10, 3
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        sessions = []
        for n in range(count):
            session_id, _ = await rt.resolve_conversation("web", f"chat:{n}")
            await rt.hold_inbound(session_id, notice=f"not answered {n}")
            sessions.append(session_id)
        kept, _ = await rt.resolve_conversation("web", "chat:kept")
        await rt.hold_inbound(kept, notice="told")
        for n in range(count):
            assert await rt.forget_conversation("web", f"chat:{n}") == sessions[n]
    assert held_count(db_path) == count + 1
    released: list[int] = []
    real = _held.release_inbound

    def counting(ids: Any) -> Any:
        ids = list(ids)
        released.append(len(ids))
        return real(ids)

    monkeypatch.setattr(_held, "MAX_IDS_PER_CALL", cap)
    monkeypatch.setattr(_held, "release_inbound", counting)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        assert rt.scanner.statistics().totals.unanswered == 1
        for session_id in sessions:
            assert [d for d in await rt.deliveries(session_id) if d.kind == "notice"] == []
    assert held_count(db_path) == 0
    assert sum(released) == count
    assert max(released) <= cap, released
