"""``docs/chat.html`` shows no history from before it began, also of a session another device
``/resume``'d while the page was away: the reconnect's replay brings that session from its
start, its history and the ``/resume`` answer alike, none marked ``catch_up``. Each replayed
row says when it was written (``created_at``), the first welcome the server's time
(``server_time``): the rows written before it are history (acked, not shown, not followed),
the answer written after is shown and followed. So too a caught-up row written while the page
was away (shown, never followed). A server that says neither leaves the page as it was.

The page's script runs under Node against the stand-in DOM, socket and clock of
test_chat_html.py."""

from __future__ import annotations

import pytest

from .test_chat_html import _HELLOS, NODE, WELCOME, _page

pytestmark = pytest.mark.skipif(NODE is None, reason="no node to run the page's script")

_AWAY = _HELLOS + r"""
const reconnect = (n) => { sockets[n].drop(); run(now + 10 * 1000); sockets[n + 1].open(); };
const row = (session_id, seq, created_at, extra) => ({...delivery(session_id, seq),
                                                      ...(created_at === null ? {} : {created_at}),
                                                      ...extra});
reconnect(0);  // meanwhile another device /resume'd s0, a session the page never saw
sockets[1].frame({...welcome, session_id: "s0", last_seq: 3, server_time: 2000});
sockets[1].frame(row("s0", 1, T1, {}));
sockets[1].frame(row("s0", 2, T2, {}));
sockets[1].frame(row("s0", 3, T3, {kind: "notice", command: "resume", text: "resumed"}));
reconnect(1);
console.log(JSON.stringify({hellos: hellos(), log}));
"""


def _run(welcome: dict[str, object], *times: float | None) -> dict:
    body = _AWAY
    for n, time in enumerate(times, 1):
        body = body.replace(f"T{n}", "null" if time is None else repr(time))
    return _page(body, welcome=welcome)


def test_a_session_resumed_while_away_shows_only_what_was_written_after_the_page_began(
        ) -> None:
    outcome = _run({**WELCOME, "server_time": 1000.5}, 900.0, 1000.0, 1500.0)
    assert [line for line in outcome["log"] if not line.startswith("(")] == ["* resumed"]
    assert outcome["hellos"][2]["session_id"] == "s0", outcome


def test_a_row_written_while_away_is_shown() -> None:
    outcome = _run({**WELCOME, "server_time": 1000.5}, 900.0, 1200.0, 1500.0)
    assert [line for line in outcome["log"] if not line.startswith("(")] == ["m2", "* resumed"]


def test_a_caught_up_row_written_while_away_is_shown_and_not_followed() -> None:
    outcome = _page(_HELLOS + r"""
sockets[0].frame({...delivery("s0", 1), created_at: 900, catch_up: true});
sockets[0].frame({...delivery("s0", 2), created_at: 1200, catch_up: true, kind: "notice",
                  command: "new", text: "new"});
sockets[0].frame({...delivery("s0", 3), created_at: 1300});
sockets[0].drop(); run(now + 10 * 1000); sockets[1].open();
console.log(JSON.stringify({hellos: hellos(), log}));
""", welcome={**WELCOME, "server_time": 1000.5})
    assert [line for line in outcome["log"] if not line.startswith("(")] == ["* new", "m3"]
    assert outcome["hellos"][1]["session_id"] == "s1", outcome


def test_a_server_that_does_not_say_leaves_the_replay_shown() -> None:
    outcome = _run(WELCOME, None, None, None)
    assert [line for line in outcome["log"] if not line.startswith("(")] == [
        "m1", "m2", "* resumed"]
