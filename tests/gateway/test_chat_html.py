"""``docs/chat.html`` (the browser client) keeps under the ``rate`` and ``burst`` of its
``welcome``, as ``tidings chat`` does (``supervisor/_chat_limits.py``): lines sent faster than
that wait their turn instead of getting the connection closed ``4029``. Connecting again
closes the connection it replaces. A lost connection is retried as ``tidings chat`` retries it
(``supervisor/_chat_ws.py``): waits doubling from half a second to 8, 5 reconnects in a row at
most, all welcomed within 30 s of the drop, then it stops and says so.

The page's script runs under Node (skipped without it) against a stand-in DOM, WebSocket and
clock (no real time passes); the pace tests replay the frames it sent through the server's token
bucket (``channels/_gateway_conn.py``'s ``TokenBucket``)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tidings.supervisor._chat_ws import web_page

_PAGE = r"""
"use strict";
const fs = require("fs"), vm = require("vm");
const [page, welcomeJson, count, dropAfter] = process.argv.slice(1);
const script = fs.readFileSync(page, "utf8").match(/<script>([\s\S]*?)<\/script>/)[1];
let now = 0;
const timers = [];
const elements = {};
const log = [];
const element = (id) => elements[id] || (elements[id] = {
  id, value: "", scrollTop: 0, scrollHeight: 0, append(line) { log.push(line.textContent); }});
for (const id of ["url", "token", "conversation", "log", "text", "send", "connect"]) element(id);
elements.url.value = "ws://stand-in";
const sockets = [];
class FakeSocket {
  constructor(url) {
    this.url = url; this.readyState = 0; this.sent = []; this.pings = []; sockets.push(this); }
  send(data) {
    if (this.readyState !== 1) throw new Error("send on a socket that is not open");
    const f = JSON.parse(data);
    if (f.type === "message" && this.accepts) timers.push({at: now, fn: () => {  // answered
      if (this.readyState === 1) this.frame({type: "accepted", id: f.id, outcome: "queued"}); }});
    if (f.type !== "ping") return this.sent.push([now, f]);
    // A ping (kept apart, in `pings`) is answered at once, unless the server is `silent`.
    this.pings.push(now);
    if (!this.silent) timers.push({at: now, fn: () => {
      if (this.readyState === 1 && this.onmessage) this.frame({type: "pong"}); }});
  }
  open() { this.readyState = 1; this.onopen(); }
  close() { this.readyState = 3; this.closed = true; }
  frame(f) { this.onmessage({data: JSON.stringify(f)}); }
  drop() { this.readyState = 3; this.onclose({code: 1006, reason: ""}); }
}
FakeSocket.OPEN = 1;
const sandbox = {
  document: {getElementById: element, createElement: () => ({textContent: "", className: ""})},
  WebSocket: FakeSocket, JSON, Math, Number, Date: {now: () => now},
  performance: {now: () => now},
  setTimeout: (fn, ms) => {
    const timer = {at: now + Math.max(0, ms || 0), fn};
    timers.push(timer);
    return timer;
  },
  clearTimeout: (timer) => { const i = timers.indexOf(timer); if (i >= 0) timers.splice(i, 1); },
};
vm.createContext(sandbox);
vm.runInContext(script, sandbox);
const event = {preventDefault() {}};
function run(until) {  // fire the timers due by `until` (ms), in order; the clock jumps
  for (;;) {
    timers.sort((a, b) => a.at - b.at);
    if (!timers.length || timers[0].at > until) break;
    const timer = timers.shift();
    now = Math.max(now, timer.at);
    timer.fn();
  }
  now = Math.max(now, until);
}
const welcome = JSON.parse(welcomeJson);
"""
"""The page's script in a stand-in DOM (``elements``, ``log``: the lines shown), WebSocket
(``sockets``, each with the frames it sent) and clock (``now``, ``run(until)``)."""

_PACED = _PAGE + r"""
FakeSocket.prototype.accepts = true;  // the server answers each message it takes
elements.connect.onsubmit(event);
sockets[0].open();
sockets[0].frame(welcome);
for (let i = 0; i < Number(count); i++) {  // typed (or pasted) at once
  elements.text.value = `line ${i}`;
  elements.send.onsubmit(event);
}
if (Number(dropAfter) >= 0) {
  run(Number(dropAfter));
  sockets[0].drop();
  run(now + 1500);  // the page reconnects after half a second
  sockets[1].open();
  sockets[1].frame(welcome);
}
run(3600 * 1000);
console.log(JSON.stringify({
  sockets: sockets.map((s) => s.sent.filter(([, f]) => f.type !== "hello")
                                   .map(([at, f]) => [at / 1000, f.text])),
  log}));
"""

NODE = shutil.which("node")


def _run_page(welcome: dict[str, object], count: int, drop_after_ms: int = -1) -> dict:
    result = subprocess.run(
        [NODE, "-e", _PACED, "--", str(web_page()), json.dumps(welcome), str(count),
         str(drop_after_ms)], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _within(sends: list[list], rate: float, burst: int) -> bool:
    """Whether the server's token bucket (``TokenBucket`` in channels/_gateway_conn.py, full
    at the welcome) takes every one of *sends*, on the page's clock."""
    tokens, stamp = float(burst), 0.0
    for at, _text in sends:
        tokens = min(burst, tokens + (at - stamp) * rate)
        stamp = at
        if tokens < 1:
            return False
        tokens -= 1
    return True


WELCOME = {"type": "welcome", "protocol": 1, "conversation": "default", "session_id": "s1",
           "last_seq": 0, "rate": 5.0, "burst": 10}

pytestmark = pytest.mark.skipif(NODE is None, reason="no node to run the page's script")


def test_the_page_paces_a_burst_of_lines_by_the_welcome() -> None:
    result = _run_page(WELCOME, 40)
    [sends] = result["sockets"]
    assert [text for _at, text in sends] == [f"line {i}" for i in range(40)]
    assert _within(sends, rate=5.0, burst=10), sends
    assert sends[-1][0] < 40 / (5.0 * 0.8) + 1  # paced, not held back for nothing


def test_a_welcome_without_usable_numbers_gets_the_server_defaults() -> None:
    welcome = {**WELCOME, "rate": "fast", "burst": 0}
    [sends] = _run_page(welcome, 100)["sockets"]
    assert len(sends) == 100
    assert _within(sends, rate=20.0, burst=60), sends


def test_lines_still_waiting_when_the_connection_drops_go_on_the_next_one() -> None:
    result = _run_page(WELCOME, 30, drop_after_ms=1000)
    first, second = result["sockets"]
    texts = [text for _at, text in first + second]
    assert texts == [f"line {i}" for i in range(30)]
    assert first, "nothing sent before the drop"
    assert second, "nothing left for the next connection: the drop did not cut the lines"
    assert _within(second, rate=5.0, burst=10), second


_CONNECT_TWICE = _PAGE + r"""
elements.connect.onsubmit(event);
sockets[0].open();
sockets[0].frame(welcome);
elements.connect.onsubmit(event);  // connect pressed again (another token, say)
sockets[1].open();
sockets[1].frame(welcome);
const delivery = {type: "delivery", session_id: "s1", seq: 1, delivery_id: "d1",
                  kind: "message", text: "hi"};
for (const socket of sockets) if (socket.readyState === 1) socket.frame(delivery);
if (sockets[0].onclose) sockets[0].onclose({code: 1006, reason: ""});  // it drops later
run(60 * 1000);
console.log(JSON.stringify({closed: sockets.map((s) => Boolean(s.closed)),
                            count: sockets.length, log}));
"""


def test_connecting_again_closes_the_connection_it_replaces() -> None:
    """Before, the first socket stayed open: every delivery was shown twice (both connections
    of the conversation get it), and its later drop reconnected over the current one."""
    result = subprocess.run([NODE, "-e", _CONNECT_TWICE, "--", str(web_page()),
                             json.dumps(WELCOME), "0", "-1"], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["closed"] == [True, False]
    assert outcome["count"] == 2  # no reconnect for the replaced one
    assert outcome["log"].count("hi") == 1, outcome["log"]


_RECONNECTS = _PAGE + r"""
// Connected and welcomed for `upFor` ms; then the connection drops and every reconnect
// fails (`mode` "refused": closed at once; "hung": never opens nor closes) or is welcomed
// and dropped again `upFor` ms later ("flaky").
const [mode, upFor] = [welcome.mode, Number(welcome.upFor)];
elements.connect.onsubmit(event);
sockets[0].open();
sockets[0].frame(welcome);
run(upFor);
sockets[0].drop();
let handled = 1;
while (now < 600 * 1000) {  // a millisecond at a time: a refused socket closes at once
  run(now + 1);
  while (handled < sockets.length) {
    const socket = sockets[handled++];
    if (mode === "refused") socket.drop();
    if (mode === "flaky") {
      socket.open();
      socket.frame(welcome);
      timers.push({at: now + upFor, fn: () => socket.drop()});
    }
  }
}
console.log(JSON.stringify({opened: sockets.slice(1).map((s) => s.opened_at / 1000), log}));
"""


def _reconnects(mode: str, up_for_ms: int = 1000) -> dict:
    script = _RECONNECTS.replace(
        "sockets.push(this); }", "sockets.push(this); this.opened_at = now; }")
    result = subprocess.run(
        [NODE, "-e", script, "--", str(web_page()),
         json.dumps({**WELCOME, "mode": mode, "upFor": up_for_ms}), "0", "-1"],
        capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_lost_connection_is_retried_with_waits_doubling_and_then_given_up() -> None:
    """Before, the page reconnected every second for ever: ten minutes of a server that
    refuses made 600 connections."""
    outcome = _reconnects("refused")
    opened = [1.0, *outcome["opened"]]  # the drop (after 1 s up), then each reconnect
    waits = [round(opened[i + 1] - opened[i], 1) for i in range(len(opened) - 1)]
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0]  # as tidings chat: 0.25 s doubled, 8 s at most
    assert outcome["log"][-1] == ("(gave up after 5 reconnects in a row: press connect to "
                                  "try again)")


def test_reconnects_not_welcomed_within_30_s_of_the_drop_are_given_up() -> None:
    outcome = _reconnects("hung")
    assert outcome["opened"] == [1.5]  # one attempt, given all that is left of the 30 s
    assert outcome["log"][-1] == ("(gave up: not welcomed again within 30 s of the drop: "
                                  "press connect to try again)")


def test_a_connection_that_stayed_up_10_s_starts_a_fresh_count() -> None:
    # each reconnect welcomed, then dropped: after 2 s, the count goes on (and runs out);
    # after 10 s, its drop is a new trouble, with a new count: it goes on reconnecting
    short = _reconnects("flaky", up_for_ms=2_000)
    assert len(short["opened"]) == 5
    assert short["log"][-1].startswith("(gave up after 5 reconnects in a row")
    stable = _reconnects("flaky", up_for_ms=10_000)
    assert len(stable["opened"]) > 50
    assert not any(line.startswith("(gave up") for line in stable["log"])
    assert stable["log"].count("(reconnect 1 of 5 in 0.5 s)") == len(stable["opened"])


_CONNECT_WHILE_WAITING = _PAGE + r"""
elements.connect.onsubmit(event);
sockets[0].open();
sockets[0].frame(welcome);
sockets[0].drop();  // a reconnect is due in half a second
elements.connect.onsubmit(event);  // connect pressed meanwhile
run(60 * 1000);
console.log(JSON.stringify({count: sockets.length, log}));
"""


def test_connecting_while_a_reconnect_waits_cancels_it() -> None:
    result = subprocess.run([NODE, "-e", _CONNECT_WHILE_WAITING, "--", str(web_page()),
                             json.dumps(WELCOME), "0", "-1"], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["count"] == 2  # the one pressed for, no second one


_TWO_QUESTIONS = _PAGE + r"""
elements.connect.onsubmit(event);
sockets[0].open();
sockets[0].frame(welcome);
sockets[0].frame({type: "prompt", prompt_id: "p1", session_id: "s1", text: "first?",
                  expires_at: 1e10});
sockets[0].frame({type: "approval_request", request_id: "r2", session_id: "s1",
                  action: "deploy", details: {branch: "main"}, expires_at: 1e10});
for (const line of ["one", "yes", "hello"]) {
  elements.text.value = line;
  elements.send.onsubmit(event);
}
run(3600 * 1000);
console.log(JSON.stringify({sent: sockets[0].sent.map(([, f]) => f)
                                          .filter((f) => f.type !== "hello"), log}));
"""


def test_two_open_questions_are_answered_oldest_first() -> None:
    """As ``tidings chat`` and ``--local`` do. The page kept the last question only: the
    first line answered the second question, and the next went as a message (which steers:
    the turn that asked both was cancelled), the first question left open for nobody."""
    result = subprocess.run([NODE, "-e", _TWO_QUESTIONS, "--", str(web_page()),
                             json.dumps(WELCOME), "0", "-1"], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    sent = json.loads(result.stdout)["sent"]
    assert [{k: v for k, v in f.items() if k != "id"} for f in sent] == [
        {"type": "answer", "prompt_id": "p1", "text": "one"},
        {"type": "approval", "request_id": "r2", "decision": "allow"},
        {"type": "message", "text": "hello"}]
    # The approval is shown with its details, as both terminal clients show them: the page
    # showed the action alone, so a person approved what they could not read.
    assert '? approve deploy {"branch":"main"}? (y/n)' in json.loads(result.stdout)["log"]


_QUESTION_CLOSED = _PAGE + r"""
elements.connect.onsubmit(event);
sockets[0].open();
sockets[0].frame(welcome);
sockets[0].frame({type: "prompt", prompt_id: "p1", session_id: "s1", text: "quick?",
                  expires_at: 1e10});
sockets[0].frame({type: "prompt_closed", id: "p1", reason: "expired"});
sockets[0].frame({type: "prompt", prompt_id: "p2", session_id: "s1", text: "again?",
                  expires_at: 1e10});
elements.text.value = "mine";
elements.send.onsubmit(event);
sockets[0].frame({type: "prompt_closed", id: "p2", reason: "answered"});
run(3600 * 1000);
console.log(JSON.stringify({sent: sockets[0].sent.map(([, f]) => f)
                                          .filter((f) => f.type !== "hello"), log}));
"""


def test_a_question_that_closes_unanswered_is_said_closed() -> None:
    """As ``tidings chat`` does: a question the page showed that closed without its answer
    (expired, answered on another device) was forgotten silently, and the answer the person
    then typed went as a message (which steers the turn). One it answered itself is not."""
    result = subprocess.run([NODE, "-e", _QUESTION_CLOSED, "--", str(web_page()),
                             json.dumps(WELCOME), "0", "-1"], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)["log"]
    assert [line for line in shown if "question closed" in line] == [
        "(question closed: expired)"]
    assert shown.index("? quick?") < shown.index("(question closed: expired)")
    sent = json.loads(result.stdout)["sent"]
    assert [f["type"] for f in sent] == ["answer"]


def _page(body: str, welcome: dict[str, object] = WELCOME) -> dict:
    """Run *body* after the page's script in the stand-in (see ``_PAGE``); what it printed."""
    result = subprocess.run([NODE, "-e", _PAGE + body, "--", str(web_page()),
                             json.dumps(welcome), "0", "-1"], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


_HELLOS = r"""
const hellos = () => sockets.map((s) => (s.sent.find(([, f]) => f.type === "hello") || [])[1]);
const sent = (s) => s.sent.map(([, f]) => f).filter((f) => f.type !== "hello");
const refuse = (s, code, reason) => { s.readyState = 3; s.onclose({code, reason}); };
const delivery = (session_id, seq) => ({type: "delivery", session_id, seq,
                                       delivery_id: `d${seq}`, kind: "message", text: `m${seq}`});
elements.connect.onsubmit(event);
sockets[0].open();
sockets[0].frame(welcome);
"""


def test_a_server_that_does_not_know_the_pages_session_is_joined_afresh() -> None:
    """As ``tidings chat`` does (dec23c4): a reconnect to a server that no longer knows the
    session (restarted on another database, or one restored from an older copy) is refused
    4000 naming hello.session_id; the page stopped there as for a bad token, though a hello
    naming no session is welcomed. Its next hello names none, once, and it goes on in the
    session that welcome gives."""
    outcome = _page(_HELLOS + r"""
sockets[0].frame(delivery("s1", 3));
sockets[0].drop();
run(now + 600);
sockets[1].open();
refuse(sockets[1], 4000, "bad hello: hello.session_id: not a session of this conversation");
run(now + 1100);
if (sockets[2]) {
  sockets[2].open();
  sockets[2].frame({...welcome, session_id: "s9", last_seq: 4});
  elements.text.value = "again";
  elements.send.onsubmit(event);
  sockets[2].frame(delivery("s9", 5));
  sockets[2].drop();
  run(now + 2100);  // the count goes on: the third reconnect in a row waits 2 s
  sockets[3].open();
  refuse(sockets[3], 4000, "bad hello: hello.session_id: not a session of this conversation");
  run(now + 4100);
  sockets[4].open();  // names no session: refused too, the page stops
  refuse(sockets[4], 4000, "bad hello: hello.session_id: not a session of this conversation");
  run(now + 60 * 1000);
}
console.log(JSON.stringify({hellos: hellos(), sent: sockets[2] && sent(sockets[2]),
                            count: sockets.length, log}));
""")
    hellos = outcome["hellos"]
    assert outcome["count"] == 5, outcome["log"]
    assert (hellos[1]["session_id"], hellos[1]["after_seq"]) == ("s1", 3)
    assert "session_id" not in hellos[2]
    assert "after_seq" not in hellos[2]
    assert (hellos[3]["session_id"], hellos[3]["after_seq"]) == ("s9", 5)
    assert "session_id" not in hellos[4]
    assert [f["type"] for f in outcome["sent"]] == ["message", "ack"]
    assert any("going on in session s9" in line for line in outcome["log"]), outcome["log"]
    # Once in a row: a hello naming no session refused too ends it, as a bad hello does.
    assert outcome["log"][-1].startswith("(closed 4000")


def test_a_server_behind_the_page_has_its_marks_put_back() -> None:
    """As ``tidings chat`` does (cd10c8a): a server whose session is behind what the page has
    seen (its database restored from an older copy) assigns those seqs again. The page kept
    its old mark and named it in the next reconnect's after_seq, which makes the server take
    every row up to it still unacked for ``sent``: the new rows sent during that drop were
    never replayed. The welcome's last_seq puts the mark back, said on the page."""
    outcome = _page(_HELLOS + r"""
for (let seq = 1; seq <= 5; seq++) sockets[0].frame(delivery("s1", seq));
sockets[0].drop();
run(now + 600);
sockets[1].open();
sockets[1].frame({...welcome, last_seq: 2});  // restored from an older copy
sockets[1].frame(delivery("s1", 3));  // a new row, its seq assigned again
sockets[1].drop();
run(now + 1100);
sockets[2].open();
console.log(JSON.stringify({hellos: hellos(), log}));
""")
    hellos = outcome["hellos"]
    assert (hellos[1]["session_id"], hellos[1]["after_seq"]) == ("s1", 5)
    assert (hellos[2]["session_id"], hellos[2]["after_seq"]) == ("s1", 3)
    assert outcome["log"].count("m3") == 2  # shown (and acked) again: it is a new row
    assert any("behind the 5 this page has seen" in line for line in outcome["log"])


_SILENT = _HELLOS.replace("sockets[0].open();", "sockets[0].silent = !welcome.answers;\n"
                                                "sockets[0].open();") + r"""
// The server answers each ping of the page's (`answers`) or has gone silent (its host frozen,
// a network that dropped the connection without a word): nothing more comes on it.
while (now < 10 * 60 * 1000 && sockets.length === 1) run(now + 1000);
console.log(JSON.stringify({pings: sockets[0].pings.map((at) => at / 1000),
                            closed: Boolean(sockets[0].closed), count: sockets.length, log}));
"""


def test_a_server_that_goes_silent_is_taken_for_a_dropped_connection() -> None:
    """As ``tidings chat`` does (634ee2a): a connection that died without a close was never
    noticed, as the page only answered pings: lines typed into it went nowhere, for good. A
    server not heard from for the welcome's heartbeat_s is pinged; nothing heartbeat_s after
    that is a drop (closed, said, reconnected)."""
    outcome = _page(_SILENT, {**WELCOME, "heartbeat_s": 20, "answers": False})
    assert outcome["pings"] == [20.0]
    assert outcome["closed"]
    assert outcome["count"] == 2, outcome["log"]  # reconnecting
    assert ("(closed 1006: nothing from the server for 40 s, a ping unanswered)"
            in outcome["log"]), outcome["log"]


def test_an_idle_page_with_a_live_server_is_not_reconnected() -> None:
    outcome = _page(_SILENT, {**WELCOME, "answers": True})  # no heartbeat_s: the default, 20
    assert outcome["count"] == 1
    assert not outcome["closed"]
    assert outcome["pings"][:3] == [20.0, 40.0, 60.0]  # one per silence, each answered


def test_a_question_that_closes_while_reconnecting_is_said_closed() -> None:
    """As ``tidings chat`` does (77c4761): a question the page showed that closed while it was
    away (expired during a reconnect, answered on another device, its server restarted) was
    forgotten at the welcome in silence, as the server does not ask it again and no
    prompt_closed comes: the person, still looking at '? quick?', typed its answer, which went
    as a message and steered (cancelled) the turn that asked. The page asks the server to
    sync once welcomed with questions open; one not asked again by its answer is said closed.
    """
    outcome = _page(_HELLOS + r"""
const prompt = (id, text) => ({type: "prompt", prompt_id: id, session_id: "s1", text,
                               expires_at: 1e10});
sockets[0].frame(prompt("p1", "quick?"));
sockets[0].frame(prompt("p2", "still?"));
sockets[0].drop();
run(now + 600);
sockets[1].open();
sockets[1].frame(welcome);
sockets[1].frame(prompt("p2", "still?"));  // the server asks again what still waits
run(now + 100);
if (sent(sockets[1]).some((f) => f.type === "sync"))
  sockets[1].frame({type: "synced", session_id: "s1", last_seq: 0});
elements.text.value = "mine";
elements.send.onsubmit(event);
run(now + 100);
console.log(JSON.stringify({sent: sent(sockets[1]), log}));
""")
    assert [f["type"] for f in outcome["sent"]] == ["sync", "answer"]
    assert outcome["sent"][1] == {"type": "answer", "prompt_id": "p2", "text": "mine"}
    closed = [line for line in outcome["log"] if "question closed" in line]
    assert closed == ["(question closed while reconnecting)"], outcome["log"]


def test_a_question_closed_while_away_says_its_reason_once() -> None:
    outcome = _page(_HELLOS + r"""
sockets[0].frame({type: "prompt", prompt_id: "p1", session_id: "s1", text: "quick?",
                  expires_at: 1e10});
sockets[0].drop();
run(now + 600);
sockets[1].open();
sockets[1].frame(welcome);
sockets[1].frame({type: "prompt_closed", id: "p1", reason: "expired"});
run(now + 100);
sockets[1].frame({type: "synced", session_id: "s1", last_seq: 0});
console.log(JSON.stringify({log}));
""")
    closed = [line for line in outcome["log"] if "question closed" in line]
    assert closed == ["(question closed: expired)"], outcome["log"]


def test_a_question_asked_again_and_answered_before_the_sync_is_not_said_closed() -> None:
    outcome = _page(_HELLOS + r"""
const p1 = {type: "prompt", prompt_id: "p1", session_id: "s1", text: "quick?", expires_at: 1e10};
sockets[0].frame(p1);
sockets[0].drop();
run(now + 600);
sockets[1].open();
sockets[1].frame(welcome);
sockets[1].frame(p1);
elements.text.value = "mine";  // answered at once, before the answer to the sync
elements.send.onsubmit(event);
run(now + 100);
sockets[1].frame({type: "synced", session_id: "s1", last_seq: 0});
console.log(JSON.stringify({sent: sent(sockets[1]), log}));
""")
    assert not [line for line in outcome["log"] if "question closed" in line], outcome["log"]
    assert {"type": "answer", "prompt_id": "p1", "text": "mine"} in outcome["sent"]


def test_messages_unanswered_at_a_drop_are_sent_again_with_their_ids() -> None:
    """As ``tidings chat`` does (its _resend, and 9ad2b91 for a refusal as the server stops):
    a message the connection dropped before the server answered it, or that the server
    refused as it stopped (``shutting_down``: send it again later), was lost, the page never
    sending it again though it reconnects by itself. They go again once welcomed, in order and
    with their ids (the server takes an id once); one answered, or refused for good, does not.
    """
    outcome = _page(_HELLOS + r"""
for (const line of ["one", "two", "three", "four"]) {
  elements.text.value = line;
  elements.send.onsubmit(event);
}
run(now + 100);
const ids = Object.fromEntries(sent(sockets[0]).map((f) => [f.text, f.id]));
sockets[0].frame({type: "accepted", id: ids.one, outcome: "started"});
sockets[0].frame({type: "error", code: "bad_field", message: "no", field: "text",
                  ref: ids.four});
sockets[0].frame({type: "error", code: "shutting_down",
                  message: "the server is stopping; send it again later", ref: ids.two});
sockets[0].frame({type: "prompt", prompt_id: "p1", session_id: "s1", text: "quick?",
                  expires_at: 1e10});  // open at the drop: its sync goes first
sockets[0].readyState = 3;
sockets[0].onclose({code: 1001, reason: "server shutting down"});
run(now + 600);
sockets[1].open();
sockets[1].frame(welcome);
run(now + 100);
console.log(JSON.stringify({ids, again: sent(sockets[1]), log}));
""")
    ids = outcome["ids"]
    assert [(f["type"], f.get("text"), f.get("id")) for f in outcome["again"]] == [
        ("sync", None, None), ("message", "two", ids["two"]),
        ("message", "three", ids["three"])]
    assert any("sent again" in line for line in outcome["log"]), outcome["log"]


def test_lines_typed_while_reconnecting_are_sent_in_order_once_welcomed() -> None:
    """As ``tidings chat`` does (it reads a line only once connected): a line typed while the
    page reconnected was dropped with '(not connected)', though the page reconnects by itself
    and sends again what the drop cut. It is kept and sent once welcomed, in order, after the
    messages sent again; typed while nothing reconnects it is '(not connected)' as before."""
    outcome = _page(_HELLOS + r"""
FakeSocket.prototype.accepts = true;
elements.text.value = "before";
elements.send.onsubmit(event);
sockets[0].readyState = 3;  // dropped before the server answered "before"
sockets[0].onclose({code: 1006, reason: ""});
for (const line of ["during", "the drop"]) {  // the reconnect waits its turn
  elements.text.value = line;
  elements.send.onsubmit(event);
}
run(now + 600);
sockets[1].open();
elements.text.value = "opened";  // open, not welcomed yet
elements.send.onsubmit(event);
sockets[1].frame(welcome);
run(now + 100);
const again = sent(sockets[1]);
refuse(sockets[1], 4001, "unauthorized");  // no reconnect comes after this one
elements.text.value = "nowhere";
elements.send.onsubmit(event);
console.log(JSON.stringify({again, count: sockets.length, log}));
""")
    assert [(f["type"], f.get("text")) for f in outcome["again"]] == [
        ("message", "before"), ("message", "during"), ("message", "the drop"),
        ("message", "opened")]
    assert outcome["count"] == 2
    assert outcome["log"][-1] == "(not connected)"
    assert "(not connected)" not in outcome["log"][:-1], outcome["log"]


def test_a_line_typed_while_reconnecting_answers_the_question_asked_again() -> None:
    """A question open at the drop: the line typed meanwhile is read once the sync has told
    which questions still wait (as ``tidings chat``'s _asked_again), so it answers the one the
    server asks again, and goes as a message when none is (said closed first)."""
    outcome = _page(_HELLOS + r"""
const prompt = (id, text) => ({type: "prompt", prompt_id: id, session_id: "s1", text,
                               expires_at: 1e10});
sockets[0].frame(prompt("p1", "quick?"));
sockets[0].drop();
elements.text.value = "yes please";
elements.send.onsubmit(event);
run(now + 600);
sockets[1].open();
sockets[1].frame(welcome);
sockets[1].frame(prompt("p1", "quick?"));  // the server asks again what still waits
run(now + 100);
sockets[1].frame({type: "synced", session_id: "s1", last_seq: 0});
run(now + 100);
sockets[1].frame(prompt("p2", "other?"));
sockets[1].drop();  // p2 closes while away; a line typed meanwhile is then a message
elements.text.value = "hello";
elements.send.onsubmit(event);
run(now + 1100);
sockets[2].open();
sockets[2].frame(welcome);
run(now + 100);
sockets[2].frame({type: "synced", session_id: "s1", last_seq: 0});
run(now + 100);
console.log(JSON.stringify({first: sent(sockets[1]), second: sent(sockets[2]), log}));
""")
    assert outcome["first"] == [{"type": "sync"},
                                {"type": "answer", "prompt_id": "p1", "text": "yes please"}]
    assert [(f["type"], f.get("text")) for f in outcome["second"]] == [
        ("sync", None), ("message", "hello")]
    shown = outcome["log"]
    assert shown.index("(question closed while reconnecting)") < shown.index("> hello")
