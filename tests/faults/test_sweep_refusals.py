"""The sweep's and one path run's own options: refused by name, before any run."""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError
from tidings.testing import delivery_path_run, sweep_delivery_path


async def _refuses(run, path, workspace, **option) -> None:
    """``run(path, workspace, **option)`` (the sweep or one path run) refuses its one
    *option* by name, and has made nothing at *path*."""
    [name] = option
    with pytest.raises(ValidationError) as raised:
        await run(path, workspace, **option)
    assert raised.value.field == name
    assert not path.exists()


@pytest.mark.parametrize("messages", [0, -2, True, "3", 1.0])
async def test_a_sweep_refuses_messages_that_are_no_count_by_name(tmp_path, workspace,
                                                                  messages) -> None:
    # messages=0 (or -2) ran a path that sends nothing: with the default target the sweep
    # blamed it ('target: no task of route:* ran a step'), with target='writer' it swept the
    # writer's steps over no delivery at all and passed; "3" and 1.0 were a TypeError from
    # range() naming nothing, True one message.
    with pytest.raises(ValidationError) as raised:
        await sweep_delivery_path(tmp_path / "sweep", workspace, target="writer",
                                  messages=messages)
    assert raised.value.field == "messages"
    assert not (tmp_path / "sweep").exists()
    await _refuses(delivery_path_run, tmp_path / "one.db", workspace, messages=messages)


@pytest.mark.parametrize("watchdog", [-1, "5", float("nan")])
async def test_a_path_run_refuses_a_watchdog_that_is_no_duration_by_name(tmp_path, workspace,
                                                                         watchdog) -> None:
    # It was taken, and trio refused it mid-run ("`seconds` must be non-negative", a
    # TypeError about '<'), naming nothing, with the runtime open.
    await _refuses(delivery_path_run, tmp_path / "one.db", workspace, watchdog=watchdog)


@pytest.mark.parametrize("target", ["", 3, None])
async def test_a_sweep_refuses_a_target_that_is_no_name_by_name(tmp_path, workspace,
                                                                target) -> None:
    # It was checked by the injector, inside the clean run's open runtime: refused as 'child'
    # (an option the sweep has none of), or an AttributeError ('startswith') for 3 and None;
    # and the clean run's database it left made the corrected sweep refuse the directory.
    await _refuses(sweep_delivery_path, tmp_path / "sweep", workspace, target=target)
    await _refuses(delivery_path_run, tmp_path / "one.db", workspace, target=target)


@pytest.mark.parametrize("at", [0, -1, True, "2"])
async def test_a_path_run_refuses_an_at_that_is_no_step_before_opening_its_database(
        tmp_path, workspace, at) -> None:
    # The injector refused it, but inside the run's open runtime: the database was made, and
    # the corrected run on the same path was refused for it ('db_path: must be a path where
    # nothing is yet').
    await _refuses(delivery_path_run, tmp_path / "one.db", workspace, at=at)
