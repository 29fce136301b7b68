"""A body error raised while the supervisor gives up is not hidden behind the escalation.

README ("Escalation"): giving up cancels the ``async with`` body and ``open_supervisor``
raises ``RestartIntensityExceeded``, whose ``__cause__`` is the child's last failure. If the
body raises as it is cancelled (its cleanup breaks, a send finds the mailbox closed), that is
the body's own error: it stays reachable as ``__context__`` and a printed traceback shows it.
"""

from __future__ import annotations

import traceback

import pytest
import trio
import trio.testing

from tidings.errors import MailboxClosedError, RestartIntensityExceeded
from tidings.supervisor import ChildSpec, Intensity, open_supervisor


async def _crasher(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
    task_status.started()
    async for message in ctx.mailbox:
        if message == "crash":
            raise ValueError("the child broke")


class BodyBroke(Exception):
    """The body's own error."""


@pytest.mark.parametrize("how", ["cleanup", "closed mailbox"])
@pytest.mark.parametrize("strategy", ["one_for_one", "one_for_all", "rest_for_one"])
async def test_a_body_error_during_an_escalation_is_the_context_and_shown(
        autojump_clock, strategy, how):
    body_errors: list[BaseException] = []

    async def run() -> None:
        async with open_supervisor([ChildSpec("a", _crasher), ChildSpec("b", _crasher)],
                                   strategy=strategy,
                                   intensity=Intensity(max_restarts=0)) as sup:
            try:
                if how == "cleanup":
                    await sup.mailbox("b").send("crash")
                    await trio.sleep_forever()
                else:  # shielded, the body sends again after b escalated: refused
                    sup.mailbox("b").send_nowait("crash")
                    with trio.CancelScope(shield=True):
                        await trio.testing.wait_all_tasks_blocked()
                        sup.mailbox("b").send_nowait("again")
            except (trio.Cancelled, MailboxClosedError) as exc:
                error = BodyBroke(f"body cleanup broke after {type(exc).__name__}")
                body_errors.append(error)
                raise error from None

    with pytest.raises(RestartIntensityExceeded) as caught:
        await run()
    error = caught.value
    assert type(error.__cause__) is ValueError
    assert error.__context__ is body_errors[0]
    printed = "".join(traceback.format_exception(error))
    assert "the child broke" in printed
    assert "BodyBroke: body cleanup broke" in printed
    assert error.__notes__ == [
        f"the body raised BodyBroke: body cleanup broke after "
        f"{'Cancelled' if how == 'cleanup' else 'MailboxClosedError'} as the supervisor "
        f"gave up (it is this error's __context__)"]


async def test_an_escalation_without_a_body_error_has_no_note(autojump_clock):
    async def run() -> None:
        async with open_supervisor([ChildSpec("a", _crasher)],
                                   intensity=Intensity(max_restarts=0)) as sup:
            await sup.mailbox("a").send("crash")
            await trio.sleep_forever()

    with pytest.raises(RestartIntensityExceeded) as caught:
        await run()
    assert getattr(caught.value, "__notes__", []) == []
