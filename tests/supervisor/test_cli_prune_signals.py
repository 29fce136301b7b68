"""``tidings prune`` cut by SIGTERM (``timeout 60 tidings prune ...`` in cron) or SIGHUP (a
closed ssh session): as by Ctrl-C (``test_cli_prune.py``), the chunk in progress is rolled
back, the counts of the chunks committed before are printed and the cut said on stderr; exit
143 or 129. Before, either killed it silently: the committed chunks stayed deleted, and
nothing said how much went. Under ``nohup`` (SIGHUP ignored) a hangup does nothing.

A real ``tidings prune`` process and a real signal: its second chunk (a chunk is one
delivery here) holds, once it has deleted, until the signal comes."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
import trio

from tidings.supervisor._signals import Signalled, raising_signals

from ..pipes import read_to_end
from .serve_process import environment
from .test_cli_prune import _count, database  # noqa: F401 - the fixture

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="a platform with SIGHUP")

TIMEOUT = 60

HOLDING = "holding the second chunk\n"

# The child starts as from a terminal (SIGTERM and SIGHUP at their default action, whatever
# the suite's), or, as `nohup` starts it, with SIGHUP ignored.
_PRUNE = """
import os, signal, sys
from tidings.store import _prune
_prune.DELIVERIES_PER_STEP = 1
real, steps = _prune.prune_step, []

def held_in_the_second_chunk(conn, cutoff, sweep_from=None):
    step = real(conn, cutoff, sweep_from)
    steps.append(step)
    if len(steps) == 2:  # deleted in its transaction, not committed
        sys.stderr.write({holding!r})
        sys.stderr.flush()
        while True:
            signal.pause()  # until a signal that is not ignored cuts it
    return step

_prune.prune_step = held_in_the_second_chunk
signal.signal(signal.SIGTERM, signal.SIG_DFL)
signal.signal(signal.SIGHUP, signal.{hangup})
from tidings.supervisor.cli import main
sys.exit(main())
"""


async def _prune_cut_by(db, sent: tuple[int, ...], hangup: str, *args: str
                        ) -> tuple[int, str, str]:
    """Run ``tidings prune DB --older-than 30d ARGS``; once its second chunk holds, send it
    *sent*: its exit code, stdout and stderr (less the holding line)."""
    process = await trio.lowlevel.open_process(
        [sys.executable, "-c", _PRUNE.format(holding=HOLDING, hangup=hangup), "prune",
         str(db), "--older-than", "30d", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment(),
        start_new_session=True)
    try:
        with trio.fail_after(TIMEOUT):
            assert process.stderr is not None
            err = b""
            while HOLDING.encode() not in err:
                chunk = await process.stderr.receive_some()
                assert chunk, err
                err += chunk
            for signum in sent:
                process.send_signal(signum)
            async with trio.open_nursery() as nursery:
                out: list[bytes] = []

                async def read_out() -> None:
                    out.append(await read_to_end(process.stdout))

                nursery.start_soon(read_out)
                err += await read_to_end(process.stderr)
            code = await process.wait()
    finally:
        process.kill()
        await process.wait()
    return code, out[0].decode(), err.decode().replace(HOLDING, "", 1)


@pytest.mark.parametrize(("sent", "hangup", "code", "by"), [
    ((signal.SIGTERM,), "SIG_DFL", 143, "SIGTERM"),
    ((signal.SIGHUP,), "SIG_DFL", 129, "SIGHUP"),
    ((signal.SIGHUP, signal.SIGTERM), "SIG_IGN", 143, "SIGTERM"),
], ids=["sigterm", "sighup", "nohup"])
async def test_a_prune_cut_by_sigterm_or_sighup_says_what_it_deleted(
        database, sent, hangup, code, by) -> None:  # noqa: F811 - the fixture
    """Under ``nohup`` the hangup is discarded: the SIGTERM after it cuts the prune (143),
    where a hangup taken would have cut it first (129)."""
    exit_code, out, err = await _prune_cut_by(database, sent, hangup)
    assert exit_code == code, err
    assert out.startswith("deleted: deliveries 1  work_items 1  events "), out
    assert err == (f"tidings prune: interrupted by {by}: the counts printed went; run it "
                   "again for the rest\n")
    # the first chunk's delivery stays deleted; the second's, rolled back, is there again
    assert _count(database, "outbox") == 3


async def test_a_dry_run_cut_by_sigterm_says_nothing_changed(database) -> None:  # noqa: F811
    exit_code, out, err = await _prune_cut_by(database, (signal.SIGTERM,), "SIG_DFL",
                                              "--dry-run", "--json")
    assert (exit_code, out) == (143, ""), err
    assert err == "tidings prune: interrupted by SIGTERM (a dry run: nothing changed)\n"
    assert _count(database, "outbox") == 4


def _signalled_twice(unwound: list[str]) -> None:
    """SIGTERM, and again as the first unwinds."""
    with raising_signals({signal.SIGTERM: 143}):
        try:
            signal.raise_signal(signal.SIGTERM)
        finally:
            signal.raise_signal(signal.SIGTERM)
            unwound.append("the rest of the finally block ran")


def test_a_second_signal_while_the_first_unwinds_is_let_go() -> None:
    """GNU ``timeout`` sends its SIGTERM to the command and then to its process group: a
    second one taken while the first unwinds must not cut that (a rollback, the counts), nor
    kill the process; once out, the handler before is back."""
    before = signal.getsignal(signal.SIGTERM)
    unwound: list[str] = []
    with pytest.raises(Signalled) as caught:
        _signalled_twice(unwound)
    assert (caught.value.signum, caught.value.exit_code) == (signal.SIGTERM, 143)
    assert unwound == ["the rest of the finally block ran"]
    assert signal.getsignal(signal.SIGTERM) == before
