"""Stop signals that come close together: each one counts. trio's signal receiver keeps one of
a signal not taken yet, so a second Ctrl-C (or SIGTERM, SIGHUP) that came while the event loop
was busy (importing a slow agent, say) was lost: the stop was the graceful one, after a whole
start, not the immediate one the README promises for a second signal."""

from __future__ import annotations

import signal
import subprocess

import trio
import trio.testing

from tidings.supervisor._signals import StopControl, watch_signals

from .serve_process import environment, tidings_command


async def test_two_signals_before_the_loop_takes_the_first_are_two_requests() -> None:
    control = StopControl()
    async with trio.open_nursery() as nursery:
        await nursery.start(watch_signals, control)
        signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGTERM)  # no checkpoint between: the loop is busy
        signal.raise_signal(signal.SIGINT)  # (not SIGHUP: under nohup it is not watched)
        await trio.testing.wait_all_tasks_blocked()
        assert control.requests == 3
        assert control.immediate.is_set()
        nursery.cancel_scope.cancel()


async def test_watching_ends_with_the_handlers_as_they_were() -> None:
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    async with trio.open_nursery() as nursery:
        await nursery.start(watch_signals, StopControl())
        assert signal.getsignal(signal.SIGTERM) != before[signal.SIGTERM]
        nursery.cancel_scope.cancel()
    assert {signum: signal.getsignal(signum) for signum in before} == before


def test_ctrl_c_twice_while_the_agent_loads_abandons_the_start(tmp_path) -> None:
    result = subprocess.run(
        tidings_command("serve", "--port", "0", "--agent", "ctrl_c_twice_agent:Agent"),
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=environment(),
        stdin=subprocess.DEVNULL, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    log = result.stderr
    assert "event=stop_requested signal=SIGINT mode=graceful" in log, log
    assert "event=stop_requested signal=SIGINT mode=immediate" in log, log
    assert "event=start_abandoned" in log, log
    assert "event=serving" not in log, log
    assert "Traceback" not in log, log
    assert not (tmp_path / "tidings.db.token").exists()
