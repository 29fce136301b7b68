"""The README ("Configuring ``tidings serve``"): a relative ``serve.db``, ``serve.workspace`` or
``gateway.token_file``, in the file or a flag, is taken from the directory ``tidings serve``
runs in, not the config file's; a leading ``~`` is the home directory. ``ServeInfo`` (as the
``event=serving`` line) gives the database and token file as absolute paths."""

from __future__ import annotations

import trio

from tidings.supervisor._config import load_config
from tidings.supervisor._serve import serve
from tidings.supervisor._signals import StopControl


async def _served(config) -> object:
    control = StopControl()
    async with trio.open_nursery() as nursery:
        info = await nursery.start(serve, config, control)
        control.request("test")
    return info


async def test_relative_paths_of_a_file_elsewhere_are_the_current_directorys(
        tmp_path, monkeypatch) -> None:
    conf, run = tmp_path / "conf", tmp_path / "run"
    conf.mkdir()
    (run / "ws").mkdir(parents=True)  # only here: taken from conf/, the workspace is no folder
    toml = conf / "tidings.toml"
    toml.write_text('[serve]\ndb = "state/rel.db"\nworkspace = "ws"\n'
                    '[gateway]\nport = 0\ntoken_file = "rel.token"\n')
    monkeypatch.chdir(run)
    info = await _served(load_config(toml))
    assert info.db == run / "state" / "rel.db"
    assert info.token_file == run / "rel.token"
    assert (run / "state" / "rel.db").is_file()
    assert (run / "rel.token").is_file()
    assert sorted(path.name for path in conf.iterdir()) == ["tidings.toml"]


async def test_a_leading_tilde_is_the_home_directory_in_the_file_and_a_flag(
        tmp_path, monkeypatch) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    (home / "ws").mkdir(parents=True)
    elsewhere.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(elsewhere)
    toml = tmp_path / "tidings.toml"
    toml.write_text('[serve]\ndb = "~/file.db"\nworkspace = "~/ws"\n'
                    '[gateway]\nport = 0\ntoken_file = "~/file.token"\n')
    info = await _served(load_config(toml))
    assert (info.db, info.token_file) == (home / "file.db", home / "file.token")
    info = await _served(load_config(db="~/flag.db", workspace="~/ws", port=0,
                                     token_file="~/flag.token"))
    assert (info.db, info.token_file) == (home / "flag.db", home / "flag.token")
    assert list(elsewhere.iterdir()) == []
