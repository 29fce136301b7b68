"""``docs/chat.html`` acks a ``notice`` that answers a message of its own (a command answered
with no session names it: ``message_id``), by ``{"type": "ack", "message_ids": [...]}``: the
gateway sends it again to a resend of that message until then. A repeat (its ack lost with a
connection, the line sent again at the reconnect) is acked again, not shown twice; another
device's notice is shown, not acked; one from a gateway that names no message is shown as
before, not acked.

The page's script runs under Node against the stand-in DOM, socket and clock of
test_chat_html.py."""

from __future__ import annotations

import pytest

from .test_chat_html import _HELLOS, NODE, _page

pytestmark = pytest.mark.skipif(NODE is None, reason="no node to run the page's script")

_CLEARED = "Cleared. Your next message starts a new session."

_SCRIPT = _HELLOS + r"""
elements.text.value = "/clear";
elements.send.onsubmit(event);
run(now + 1000);
const [message] = sent(sockets[0]).filter((f) => f.type === "message");
const notice = {type: "notice", text: CLEARED, command: "clear", message_id: message.id};
sockets[0].frame(notice);  // read; the ack and the accepted are lost with the connection
sockets[0].drop(); run(now + 10 * 1000); sockets[1].open();
sockets[1].frame(welcome);
run(now + 1000);  // the line is sent again, with its id: the server sends the notice again
sockets[1].frame(notice);
sockets[1].frame({type: "notice", text: "other", command: "clear", message_id: "phone-1"});
sockets[1].frame({type: "notice", text: "older", command: "clear"});
sockets[1].frame({type: "accepted", id: message.id, outcome: "command", duplicate: true});
console.log(JSON.stringify({
  id: message.id, log,
  acks: sockets.map((s) => sent(s).filter((f) => f.type === "ack")),
  resent: sent(sockets[1]).filter((f) => f.type === "message").map((f) => f.id)}));
"""


def test_the_page_acks_its_own_notice_and_shows_a_repeat_once() -> None:
    outcome = _page(_SCRIPT.replace("CLEARED", repr(_CLEARED)))
    shown = [line for line in outcome["log"] if line.startswith("* ")]
    assert shown == [f"* {_CLEARED}", "* other", "* older"], outcome["log"]
    assert outcome["resent"] == [outcome["id"]]
    ack = {"type": "ack", "message_ids": [outcome["id"]]}
    assert outcome["acks"] == [[ack], [ack]], outcome["acks"]
