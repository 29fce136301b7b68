"""The folders ``tidings serve`` makes for ``--token-file`` are private (0700), as those it
makes for the database are: the token admits every client, and they were made with the
umask's mode (0755), which let any local user list (and, with a looser umask, change) the
folder that holds the secret."""

from __future__ import annotations

import functools
import os
import stat

import trio

from tidings.supervisor._config import load_config
from tidings.supervisor._serve import serve
from tidings.supervisor._signals import StopControl


async def test_the_folders_made_for_a_token_file_are_private(tmp_path) -> None:
    token_file = tmp_path / "secrets" / "gateway" / "gw.token"
    config = load_config(db=str(tmp_path / "state" / "serve.db"), port=0,
                         workspace=str(tmp_path), token_file=str(token_file))
    control = StopControl()
    before = os.umask(0o022)  # the usual one: a folder made with mkdir's default is 0755
    try:
        with trio.fail_after(30):  # hang guard (a real listener, threads: a real clock)
            async with trio.open_nursery() as nursery:
                await nursery.start(functools.partial(serve, config, control))
                control.request("test")
    finally:
        os.umask(before)
    assert token_file.is_file()
    for folder in (tmp_path / "secrets", tmp_path / "secrets" / "gateway",
                   tmp_path / "state"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
