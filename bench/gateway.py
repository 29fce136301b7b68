"""Websocket gateway throughput and ack round trip, against an in-memory route in the same run.

The server (runtime + gateway on 127.0.0.1, port 0) runs here; the clients run in a second
process (this script with ``--client-worker``) so their websocket work does not load the
server. A delivery is ``send_text`` (persist) in a session whose conversation has one
connected client; the client acks each delivery frame as it arrives; the delivery counts once
``sent`` is durable (``handle.wait()`` returns ``delivered``). Prints, each the median of
interleaved rounds:

  - deliveries/s over 1 and over 100 loopback connections (one session each), closed loop (a
    sender waits for the ack of each delivery before the next) and pipelined (100 senders
    send back to back; the ack window, 32, bounds what is in flight per session);
  - the delivery round trip p50/p99 (``send_text`` until the ack is durable) and the ack round
    trip p50/p99 (the client sends the ack until ``sent`` is durable and the sender wakes;
    ``time.monotonic`` is one clock for both processes on Linux);
  - the baseline: the same runtime and senders delivering to an in-memory route (no network,
    no ack), so the gateway's cost is the ratio.

    .venv/bin/python bench/gateway.py [--deliveries N] [--rounds R]
"""

from __future__ import annotations

import argparse
import functools
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import trio
from _args import at_least

import tidings
from tidings.channels import GatewayChannel, GatewayClient, GatewayConfig
from tidings.testing import MemoryRoute

TEXT = "The nightly build finished: 412 tests passed, 0 failed; artifacts are uploaded."
TOKEN = "bench-token-0123456789"


class Sample:
    def __init__(self) -> None:
        self.round_trips: list[float] = []
        self.delivered_at: dict[str, float] = {}


async def _send(rt, session_id: str, count: int, sample: Sample, *, pipelined: bool) -> None:
    handles = []
    async with rt.open_turn(session_id) as ctx:
        for _ in range(count):
            start = time.monotonic()
            handle = await ctx.output.send_text(TEXT)
            if pipelined:
                handles.append(handle)
                continue
            assert await handle.wait() == "delivered"
            done = time.monotonic()
            sample.round_trips.append(done - start)
            sample.delivered_at[handle.delivery_id] = done
    for handle in handles:
        assert await handle.wait() == "delivered"


# --- the clients: a separate process, so their websocket work does not load the server ---------


async def _client(url: str, conversation: str, acked: dict[str, float], *,
                   task_status=trio.TASK_STATUS_IGNORED) -> None:
    async with GatewayClient.connect(url, token=TOKEN, conversation=conversation) as client:
        task_status.started()
        while True:
            frame = await client.receive()
            if frame["type"] == "delivery":
                acked[frame["delivery_id"]] = time.monotonic()
                await client.ack(frame["delivery_id"])


async def client_worker(url: str, connections: int) -> None:
    """``--client-worker``: connect, say ``ready``, ack everything until stdin closes, then
    print when each delivery was acked (``time.monotonic``, comparable across processes)."""
    acked: dict[str, float] = {}
    async with trio.open_nursery() as nursery:
        for i in range(connections):
            await nursery.start(_client, url, f"c{i}", acked)
        print("ready", flush=True)
        await trio.to_thread.run_sync(sys.stdin.read)
        nursery.cancel_scope.cancel()
    print(json.dumps(acked), flush=True)


async def _watch_worker(worker: trio.Process) -> None:
    """Stop the run if the client worker exits while the senders run: its deliveries would
    wait for a client that never comes back, and the bench would wait with them forever."""
    code = await worker.wait()
    raise RuntimeError(f"the client worker exited mid-run (exit code {code})")


async def gateway_run(path: pathlib.Path, deliveries: int, connections: int, *,
                      pipelined: bool) -> tuple[float, Sample, list[float]]:
    sample = Sample()
    async with tidings.open_runtime(path, workspace=path.parent) as rt:
        gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, port=0, rate=1e6,
                                                   burst=1_000_000, heartbeat_s=600))
        try:
            async with gateway.serving() as port:
                worker = await trio.lowlevel.open_process(
                    [sys.executable, __file__, "--client-worker", f"ws://127.0.0.1:{port}",
                     str(connections)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                assert worker.stdin is not None
                assert worker.stdout is not None
                output = b""
                while b"ready\n" not in output:
                    chunk = await worker.stdout.receive_some()
                    if not chunk:  # EOF: it will never be ready
                        raise RuntimeError("the client worker exited before it was ready "
                                           f"(exit code {await worker.wait()})")
                    output += chunk
                output = output.split(b"ready\n", 1)[1]
                sessions = [await rt.conversation_session("gateway", f"gateway:conv:c{i}")
                            for i in range(connections)]
                per = deliveries // connections
                async with trio.open_nursery() as watched:
                    watched.start_soon(_watch_worker, worker)
                    start = time.monotonic()
                    async with trio.open_nursery() as senders:
                        for session_id in sessions:
                            senders.start_soon(functools.partial(_send, rt, session_id, per,
                                                                 sample, pipelined=pipelined))
                    elapsed = time.monotonic() - start
                    watched.cancel_scope.cancel()
                await worker.stdin.aclose()
                while chunk := await worker.stdout.receive_some():
                    output += chunk
                await worker.wait()
        finally:
            with trio.CancelScope(shield=True):
                await gateway.aclose()
    acked = json.loads(output)
    ack_trips = [done - acked[delivery_id] for delivery_id, done
                 in sample.delivered_at.items() if delivery_id in acked]
    return per * connections / elapsed, sample, ack_trips


async def memory_run(path: pathlib.Path, deliveries: int, senders: int, *,
                     pipelined: bool) -> tuple[float, Sample, list[float]]:
    sample = Sample()
    async with tidings.open_runtime(path, workspace=path.parent) as rt:
        sessions = [await rt.create_session(channel="bench") for _ in range(senders)]
        for session_id in sessions:
            rt.router.bind(session_id, MemoryRoute())
        per = deliveries // senders
        start = time.monotonic()
        async with trio.open_nursery() as nursery:
            for session_id in sessions:
                nursery.start_soon(functools.partial(_send, rt, session_id, per, sample,
                                                     pipelined=pipelined))
        elapsed = time.monotonic() - start
    return per * senders / elapsed, sample, []


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries",
                        type=at_least(100, "one per connection at 100 connections"), default=3000)
    parser.add_argument("--rounds", type=at_least(1), default=3)
    parser.add_argument("--client-worker", nargs=2, metavar=("URL", "CONNECTIONS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client_worker:
        trio.run(client_worker, args.client_worker[0], int(args.client_worker[1]))
        return
    n = args.deliveries
    cases = (("1 connection", 1, n // 6, False), ("100 connections", 100, n, False),
             ("100 connections pipelined", 100, n, True))
    rates: dict[tuple[str, str], list[float]] = {}
    trips: dict[str, list[float]] = {}
    acks: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = pathlib.Path(tmp)
        for r in range(args.rounds):
            for name, count, total, pipelined in cases:
                for kind, run in (("memory", memory_run), ("gateway", gateway_run)):
                    rate, sample, ack_trips = trio.run(functools.partial(
                        run, base / f"{kind}-{name}-{r}.db".replace(" ", "_"), total, count,
                        pipelined=pipelined))
                    rates.setdefault((name, kind), []).append(rate)
                    if kind == "gateway" and not pipelined:
                        trips.setdefault(name, []).extend(sample.round_trips)
                        acks.setdefault(name, []).extend(ack_trips)
    print(f"gateway bench: {n} deliveries (1 connection: {n // 6}), median of "
          f"{args.rounds} rounds; clients in a second process on loopback")
    print(f"{'case':<28}{'gateway/s':>12}{'memory route/s':>16}{'ratio':>8}")
    for name, _, _, _ in cases:
        gateway = statistics.median(rates[(name, "gateway")])
        memory = statistics.median(rates[(name, "memory")])
        print(f"{name:<28}{gateway:>12.0f}{memory:>16.0f}{gateway / memory:>8.2f}")
    print("round trips (closed loop), ms:")
    for name in trips:
        print(f"  {name:<26} delivery p50 {_pct(trips[name], .5) * 1e3:6.2f}  "
              f"p99 {_pct(trips[name], .99) * 1e3:6.2f}   ack p50 "
              f"{_pct(acks[name], .5) * 1e3:6.2f}  p99 {_pct(acks[name], .99) * 1e3:6.2f}")


if __name__ == "__main__":
    main()
