"""``docs/chat.html`` follows the session the server makes current, as ``tidings chat`` does
since bad6bbe, not the session of whatever delivery came last. After another device's ``/new``
the old session's running turn goes on: its reply, in the session ``/new`` left, came after
the new session's first rows, and the page named that old session in its next hello. The
gateway then replays the old session after ``after_seq`` and the current one from its start
(channels/_gateway_admit.py): the page, which shows every delivery it gets, showed the
current session's rows a second time.

The page's script runs under Node against the stand-in DOM, socket and clock of
test_chat_html.py; each test plays the server's frames and reads the hellos the page said."""

from __future__ import annotations

import pytest

from .test_chat_html import _HELLOS, NODE, _page

pytestmark = pytest.mark.skipif(NODE is None, reason="no node to run the page's script")

_SWITCH = r"""
const answer = (session_id, seq, command) => ({...delivery(session_id, seq), kind: "notice",
                                               command, text: `answer of /${command}`});
const reconnect = (n) => { sockets[n].drop(); run(now + 10 * 1000); sockets[n + 1].open(); };
"""


def test_a_late_reply_in_the_session_another_device_left_is_not_followed() -> None:
    outcome = _page(_HELLOS + _SWITCH + r"""
sockets[0].frame(delivery("s1", 3));
sockets[0].frame(answer("s2", 1, "new"));  // another device's /new
sockets[0].frame(delivery("s1", 4));  // the reply of a turn /new left running in s1
reconnect(0);
console.log(JSON.stringify({hellos: hellos(), log}));
""")
    hello = outcome["hellos"][1]
    assert (hello["session_id"], hello["after_seq"]) == ("s2", 1), outcome


def test_a_resume_is_followed_and_the_welcome_names_the_current_session() -> None:
    # Back after a drop, welcomed in s3 (the conversation moved while the page was away): a
    # late row of the session its hello named does not take it back there; a /resume does.
    outcome = _page(_HELLOS + _SWITCH + r"""
sockets[0].frame(delivery("s1", 3));
reconnect(0);
sockets[1].frame({...welcome, session_id: "s3", last_seq: 2});
sockets[1].frame(delivery("s3", 1));
sockets[1].frame(delivery("s3", 2));
sockets[1].frame(delivery("s1", 4));
reconnect(1);
sockets[2].frame({...welcome, session_id: "s3", last_seq: 2});
sockets[2].frame(answer("s1", 5, "resume"));
reconnect(2);
console.log(JSON.stringify({hellos: hellos(), log}));
""")
    hellos = outcome["hellos"]
    assert (hellos[1]["session_id"], hellos[1]["after_seq"]) == ("s1", 3), outcome
    assert (hellos[2]["session_id"], hellos[2]["after_seq"]) == ("s3", 2), outcome
    assert (hellos[3]["session_id"], hellos[3]["after_seq"]) == ("s1", 5), outcome


def test_after_a_clear_the_next_session_is_followed_not_a_late_row_of_the_cleared_one() -> None:
    outcome = _page(_HELLOS + _SWITCH + r"""
sockets[0].frame(delivery("s1", 3));
sockets[0].frame(answer("s1", 4, "clear"));  // another device's /clear
sockets[0].frame({type: "lifecycle", event: "started", session_id: "s2", message_id: "m"});
sockets[0].frame(delivery("s2", 1));  // the next session, a message started it
sockets[0].frame(delivery("s1", 5));  // a late row of the cleared session
reconnect(0);
console.log(JSON.stringify({hellos: hellos(), log}));
""")
    hello = outcome["hellos"][1]
    assert (hello["session_id"], hello["after_seq"]) == ("s2", 1), outcome


def test_a_session_sent_again_from_its_start_is_not_shown_again() -> None:
    # As tidings chat (45f7435): after a reconnect (a hello with after_seq) the gateway writes
    # a session's rows from its start before the first of them that reaches the connection
    # live, here the reply of a turn /new left running in s1: rows the page showed already are
    # repeats (acked, not shown again), and s1's own /new answer among them is no switch.
    outcome = _page(_HELLOS + _SWITCH + r"""
sockets[0].frame(answer("s1", 1, "new"));
sockets[0].frame(delivery("s1", 2));
sockets[0].frame(answer("s2", 1, "new"));  // another device's /new
reconnect(0);
sockets[1].frame({...welcome, session_id: "s2", last_seq: 1});
for (const seq of [1, 2]) sockets[1].frame(seq === 1 ? answer("s1", 1, "new")
                                                     : delivery("s1", seq));
sockets[1].frame(delivery("s1", 3));  // the late reply, live
reconnect(1);
console.log(JSON.stringify({hellos: hellos(), acked: sent(sockets[1]).filter(
  (f) => f.type === "ack").map((f) => f.delivery_ids[0]), log}));
""")
    shown = [line for line in outcome["log"] if not line.startswith("(")]
    assert shown == ["* answer of /new", "m2", "* answer of /new", "m3"], outcome["log"]
    assert outcome["acked"] == ["d1", "d2", "d3"], outcome  # repeats acked all the same
    hello = outcome["hellos"][2]
    assert (hello["session_id"], hello["after_seq"]) == ("s2", 1), outcome


def test_a_caught_up_session_it_never_saw_is_not_shown_nor_followed() -> None:
    # As tidings chat: after a reconnect the gateway writes a session the page has none of
    # from its start (each such frame "catch_up": true) before its first row that reaches
    # the page live, here a late reply in s0, which another device's /new left before the
    # page began. That history was shown as news, and the old /new answer in it taken for a
    # switch: the next hello named s0. The live row is news.
    outcome = _page(_HELLOS + _SWITCH + r"""
sockets[0].frame(delivery("s1", 1));
reconnect(0);
sockets[1].frame({...welcome, session_id: "s1", last_seq: 1});
sockets[1].frame({...answer("s0", 1, "new"), catch_up: true});
sockets[1].frame({...delivery("s0", 2), catch_up: true});
sockets[1].frame(delivery("s0", 3));  // the late reply, live
reconnect(1);
console.log(JSON.stringify({hellos: hellos(), acked: sent(sockets[1]).filter(
  (f) => f.type === "ack").map((f) => f.delivery_ids[0]), log}));
""")
    shown = [line for line in outcome["log"] if not line.startswith("(")]
    assert shown == ["m1", "m3"], outcome["log"]
    assert outcome["acked"] == ["d1", "d2", "d3"], outcome  # history acked all the same
    hello = outcome["hellos"][2]
    assert (hello["session_id"], hello["after_seq"]) == ("s1", 1), outcome
