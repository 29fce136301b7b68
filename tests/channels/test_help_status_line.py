"""``/help`` describes ``/status`` by what it shows (README, Commands: session state, access
policy, identity id, memory mode, dispatch mode). Its line left out the dispatch mode, which
``/status`` shows and a user checks to learn why a message steered or queued."""

from __future__ import annotations

from tidings.channels import ChannelConfig
from tidings.channels._commands import help_text, status_text


def test_the_help_line_of_status_names_every_part_status_shows() -> None:
    [line] = [line for line in help_text().splitlines() if line.startswith("/status ")]
    shown = [row.split(":")[0].lower() for row in
             status_text(ChannelConfig(name="ops"), session_id="s1").splitlines()]
    assert shown == ["session", "access", "identity id", "memory mode", "dispatch mode"]
    for part in shown:
        assert part.split()[0] in line, (part, line)
