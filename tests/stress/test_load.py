"""Load, functionally: many sessions with concurrent turns and one stalled client. The others'
deliveries all complete while it is still stalled (no head-of-line blocking), its backlog waits
in the outbox (not in memory: one delivery attempt), and drains in order once it is back. The
figures (throughput, p99 with and without the stalled client) are in ``bench/load.py``."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.testing import InvariantChecker, MemoryRoute


@pytest.mark.parametrize("sessions", [200, pytest.param(1000, marks=pytest.mark.slow)])
async def test_one_stalled_client_delays_no_other_session(db_path, workspace,
                                                          sessions: int) -> None:
    checker = InvariantChecker()
    with checker.watch(), trio.fail_after(120):  # a watchdog: a hang is the failure
        async with tidings.open_runtime(db_path, workspace=workspace) as rt:
            ids = [await rt.create_session(channel="load") for _ in range(sessions)]
            routes = {session_id: MemoryRoute() for session_id in ids}
            for session_id, route in routes.items():
                rt.router.bind(session_id, route)
            victim = ids[0]
            routes[victim].stall()
            handles: dict[str, list] = {session_id: [] for session_id in ids}

            async def turns(session_id: str) -> None:
                for turn in range(3):
                    async with rt.open_turn(session_id) as ctx:
                        for n in range(3):
                            handles[session_id].append(
                                await ctx.output.send_text(f"{session_id} {turn}.{n}"))

            async with trio.open_nursery() as nursery:
                for session_id in ids:
                    nursery.start_soon(turns, session_id)
            for session_id in ids[1:]:
                assert [await h.wait() for h in handles[session_id]] == ["delivered"] * 9
            # every other session is done; the stalled one has started one delivery only
            assert len(routes[victim].attempted) == 1
            assert rt.dispatcher.lane(victim) is not None
            statuses = [d.status for d in await rt.deliveries(session_id=victim)]
            assert statuses == ["sending"] + ["queued"] * 8
            routes[victim].release()
            assert [await h.wait() for h in handles[victim]] == ["delivered"] * 9
    checker.check_database(db_path)
    checker.check_routes(routes, db_path=db_path)
    checker.assert_ok()
    for route in routes.values():
        assert [o.seq for o in route.delivered] == list(range(1, 10))
