"""The running turn ``/cancel`` cancels has its messages released by the ``/cancel`` itself, as
a waiting one's are (test_cancel_waiting_released.py): a crash after the ``/cancel`` (before
the turn's end was written) leaves nothing for the next start to say about a message the user
had cancelled. Before, they stayed held until the turn's end released them, and the next
start's recovery sent "your message was not answered" for it.

Safe for the answer: a cancel the turn takes is one it took before it began writing its reply
(``ActiveTurn.finishing``), and it then ends cancelled, never completed; a later one is refused
(and releases nothing), so the reply still releases them in its own commit."""

from __future__ import annotations

import pytest

from .test_cancel_waiting_released import told_after_cancels


@pytest.mark.parametrize("how", ["command", "press", "press_id"])
async def test_a_crash_after_cancel_says_nothing_of_the_running_turn_it_cancelled(
        how, db_path, workspace, tmp_path, autojump_clock) -> None:
    told = await told_after_cancels(how, 1, db_path, workspace, tmp_path)
    # The next start on what the crash left: the cancelled turn was dealt with; the one
    # behind it, neither run nor cancelled, was not.
    assert any('"second"' in text for text in told), told
    assert not any('"first"' in text for text in told), told
