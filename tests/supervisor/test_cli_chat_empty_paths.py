"""``tidings chat`` takes an empty path flag for bad usage, as serve, status and prune do: ""
was taken for the current directory ('config: cannot read .: Is a directory',
'--token-file: /the/cwd is not a regular file'), a path the user never gave."""

from __future__ import annotations

import pytest

from tidings.supervisor import cli


@pytest.mark.parametrize("argv", [["chat", "--local", "--config", ""],
                                  ["chat", "--url", "ws://127.0.0.1:9", "--token-file", ""]],
                         ids=["--config", "--token-file"])
def test_an_empty_path_flag_is_refused_as_such(tmp_path, capsys, monkeypatch, argv) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {argv[-2]}: expected a path, got an empty string" in err
    assert "directory" not in err
    assert "regular file" not in err
    assert list(tmp_path.iterdir()) == []
