"""``docs/chat.html`` starts with no history (its first hello has no ``after_seq``), but it
counted nothing of its first session as had: the next reconnect said ``after_seq`` 0 (or the
last seq it got) and the gateway replayed that session's rows from its start, which the page
showed, its whole history in the middle of the chat. The welcome's ``history_seq`` (below the
first row still waiting for a client) is where its history ends: counted as had and shown, so
neither replayed nor shown when the gateway sends the session from its start; a row waiting
when the page began still comes. A welcome without it (an older gateway) leaves the page as
it was: nothing is taken for had that the page never got.

The page's script runs under Node against the stand-in DOM, socket and clock of
test_chat_html.py."""

from __future__ import annotations

import pytest

from .test_chat_html import _HELLOS, NODE, WELCOME, _page

pytestmark = pytest.mark.skipif(NODE is None, reason="no node to run the page's script")

_RECONNECT = r"""
const reconnect = (n) => { sockets[n].drop(); run(now + 10 * 1000); sockets[n + 1].open(); };
"""


def test_the_first_reconnect_says_after_seq_from_the_welcomes_history_seq() -> None:
    outcome = _page(_HELLOS + _RECONNECT + r"""
reconnect(0);  // the row that waited for a client (5) lost with the first connection
sockets[1].frame({...welcome, last_seq: 5});
sockets[1].frame(delivery("s1", 5));  // replayed: news
reconnect(1);
console.log(JSON.stringify({hellos: hellos(), log}));
""", welcome={**WELCOME, "last_seq": 5, "history_seq": 4})
    hellos = outcome["hellos"]
    assert (hellos[1]["session_id"], hellos[1]["after_seq"]) == ("s1", 4), outcome
    assert (hellos[2]["session_id"], hellos[2]["after_seq"]) == ("s1", 5), outcome
    assert [line for line in outcome["log"] if not line.startswith("(")] == ["m5"]


def test_history_sent_again_from_its_start_is_not_shown() -> None:
    outcome = _page(_HELLOS + _RECONNECT + r"""
reconnect(0);
sockets[1].frame({...welcome, session_id: "s2", last_seq: 1});
sockets[1].frame({...delivery("s2", 1), kind: "notice", command: "new", text: "new"});
for (const seq of [1, 2, 3]) sockets[1].frame({...delivery("s1", seq), catch_up: true});
sockets[1].frame(delivery("s1", 4));  // a late reply in s1, live
console.log(JSON.stringify({hellos: hellos(), log}));
""", welcome={**WELCOME, "last_seq": 3, "history_seq": 3})
    assert outcome["hellos"][1]["after_seq"] == 3, outcome
    assert [line for line in outcome["log"] if not line.startswith("(")] == ["* new", "m4"]


def test_a_welcome_without_history_seq_takes_nothing_for_had() -> None:
    outcome = _page(_HELLOS + _RECONNECT + r"""
reconnect(0);
console.log(JSON.stringify({hellos: hellos(), log}));
""", welcome={**WELCOME, "last_seq": 5})
    assert outcome["hellos"][1]["after_seq"] == 0, outcome
