"""Retention of a message id record that owes its command's direct answer (schema v8).

Such a record was never pruned, however old: the retry of its id is to get the answer, and
would otherwise run the command again. But a platform that never retries (it gave up, the
user left) kept it for ever, and nothing counted it. Now it is kept one retry window
(:data:`~tidings.store._prune.OWED_ANSWER_GRACE`) past the cutoff that prunes the other ids,
then pruned with them and counted apart (``PruneReport.owed_answers``: answers given up).
"""

from __future__ import annotations

import pytest

import tidings
from tidings.channels import ChannelConfig
from tidings.store._prune import OWED_ANSWER_GRACE
from tidings.supervisor import cli

from .test_owed_direct_answer import FailingOnce, PlatformDown
from .test_owed_direct_answer_restart import owed_on_records

DEDUPE = ChannelConfig("ops", dedupe_message_ids=True)
CLEARED = "Cleared. Your next message starts a new session."


async def test_an_id_owing_its_answer_is_pruned_a_retry_window_past_the_cutoff_and_counted(
        db_path, workspace) -> None:
    clock = [1_000_000.0]
    async with tidings.open_runtime(db_path, workspace=workspace,
                                    clock=lambda: clock[0]) as rt:
        channel = FailingOnce(rt, DEDUPE)
        channel.failures = 1
        with pytest.raises(PlatformDown):
            await channel.say("/clear", message_id="c1")
        await rt.remember_client_message("ops", "ops:chat:c2", "m1", session_id=None,
                                         outcome="command")  # owes nothing
        clock[0] += OWED_ANSWER_GRACE  # within the retry window past the cutoff: kept
        report = await rt.prune(older_than=0)
        assert (report.client_messages, report.owed_answers) == (1, 0)
        assert owed_on_records(db_path) == [("c1", CLEARED)]
        clock[0] += 1
        report = await rt.prune(older_than=0)
        assert (report.client_messages, report.owed_answers) == (1, 1)
        assert report.total == 1  # the owed ones are among the client_messages
    assert owed_on_records(db_path) == []


async def test_tidings_prune_says_how_many_owed_answers_it_gave_up(
        db_path, workspace, capsys) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace,
                                    clock=lambda: 1_000_000.0) as rt:  # long ago
        channel = FailingOnce(rt, DEDUPE)
        channel.failures = 1
        with pytest.raises(PlatformDown):
            await channel.say("/clear", message_id="c1")
    assert owed_on_records(db_path) == [("c1", CLEARED)]
    assert cli.main(["prune", str(db_path), "--older-than", "0s", "--dry-run"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("client_messages 1  owed_answers 1")
    assert owed_on_records(db_path) == [("c1", CLEARED)]  # a dry run changes nothing
