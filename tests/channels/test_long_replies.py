"""A channel agent's reply over ``MAX_TEXT_BYTES`` is sent as several consecutive messages of
the same turn, each within the cap, cut at a line break or a space near the cut when there is
one and never inside a character; the last part releases the turn's held message."""

from __future__ import annotations

from tidings.actors import MAX_TEXT_BYTES
from tidings.channels import ChannelConfig

from .conftest import RecordingChannel, rows

LINE = "The quick brown fox jumps over the lazy dog, again and again. " * 3 + "\n"


class LongAgent:
    """Streams *reply* in chunks of *chunk* characters."""

    def __init__(self, reply: str, chunk: int = 1 << 18) -> None:
        self.reply = reply
        self.chunk = chunk

    async def run(self, turn) -> None:
        for start in range(0, len(self.reply), self.chunk):
            await turn.send_chunk(self.reply[start:start + self.chunk])


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


async def _answered(rt, reply: str) -> tuple[RecordingChannel, list[str]]:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=LongAgent(reply))
    await channel.say("write a lot", message_id="m1")
    await channel.wait_for(lambda: channel.types()[-1:] in (["completed"], ["failed"]))
    assert channel.types()[-1] == "completed", channel.events[-1]
    session_id = channel.events[0].session_id
    texts = [row.text for row in await rt.deliveries(session_id=session_id)]
    return channel, texts


async def test_a_long_reply_is_sent_as_several_messages_cut_at_line_breaks(
        rt, db_path) -> None:
    reply = LINE * (int(2.5 * MAX_TEXT_BYTES) // len(LINE))
    assert _size(reply) > 2 * MAX_TEXT_BYTES
    channel, texts = await _answered(rt, reply)
    assert channel.types()[0] == "started"
    assert len(texts) == 3
    assert "".join(texts) == reply  # in order, nothing lost or added
    assert all(_size(text) <= MAX_TEXT_BYTES for text in texts)
    assert all(text.endswith("\n") for text in texts)  # cut after a line break
    # Model context is what the agent said: the parts, in order, joined.
    history = await rt.history(channel.events[0].session_id, model_context=True)
    assert [m.role for m in history] == ["user", "assistant", "assistant", "assistant"]
    assert "".join(m.text for m in history[1:]) == reply
    assert rows(db_path, "SELECT count(*) FROM inbound_messages") == [(0,)]  # answered


async def test_a_reply_without_line_breaks_is_cut_after_a_space(rt) -> None:
    reply = "x" * 700_000 + "\n" + "word\u00e9 " * (2 * MAX_TEXT_BYTES // 7)
    _, texts = await _answered(rt, reply)
    assert len(texts) == 3
    assert "".join(texts) == reply
    assert all(_size(text) <= MAX_TEXT_BYTES for text in texts)
    # The line break is too far back from the first cut (over a quarter of the cap): a space.
    assert texts[0].endswith("\u00e9 ")
    assert texts[1].endswith("\u00e9 ")


async def test_a_reply_without_whitespace_is_never_cut_inside_a_character(rt) -> None:
    reply = "a" + "\N{GRINNING FACE}é" * (int(2.5 * MAX_TEXT_BYTES) // 6)
    _, texts = await _answered(rt, reply)
    assert len(texts) == 3
    assert "".join(texts) == reply
    assert all(0 < _size(text) <= MAX_TEXT_BYTES for text in texts)
    assert _size(texts[0]) > MAX_TEXT_BYTES - 4  # as full as a character boundary allows


async def test_only_the_last_part_releases_the_held_message(rt, monkeypatch) -> None:
    """A crash between parts leaves the message held: recovery tells the user it was not
    answered (the parts already written go out too); never answered-looking but cut short."""
    pipeline = rt.pipeline
    enqueue = pipeline.enqueue
    releases: list[tuple[str, ...]] = []

    async def recording(request, **kwargs):
        if request.kind == "message":
            releases.append(request.releases)
        return await enqueue(request, **kwargs)

    monkeypatch.setattr(pipeline, "enqueue", recording)
    _, texts = await _answered(rt, LINE * (int(2.5 * MAX_TEXT_BYTES) // len(LINE)))
    assert len(texts) == len(releases) == 3
    assert releases[:2] == [(), ()]
    assert len(releases[2]) == 1


async def test_a_streamed_chunk_over_the_cap_is_emitted_in_parts(rt) -> None:
    """A gateway client gets each ``text_chunk`` as a lifecycle frame (its own client takes
    4 MiB frames): one chunk is never over MAX_TEXT_BYTES either."""
    reply = LINE * (int(2.5 * MAX_TEXT_BYTES) // len(LINE))
    channel = RecordingChannel(rt, ChannelConfig(name="ops"),
                               agent=LongAgent(reply, chunk=len(reply)))
    await channel.say("write a lot", message_id="m1")
    await channel.wait_for(lambda: channel.types()[-1:] in (["completed"], ["failed"]))
    chunks = [event.chunk for event in channel.events if event.type == "text_chunk"]
    assert len(chunks) == 3
    assert "".join(chunks) == reply
    assert all(_size(chunk) <= MAX_TEXT_BYTES for chunk in chunks)
    assert channel.types()[-1] == "completed"


async def test_a_long_reply_that_cannot_be_sent_sends_no_part_of_it(rt) -> None:
    """A lone surrogate in the last part: the turn fails as a short reply's would, and no
    earlier part went out on its own (nothing is half-written)."""
    reply = LINE * (int(1.5 * MAX_TEXT_BYTES) // len(LINE)) + "\ud800"
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=LongAgent(reply))
    await channel.say("write a lot", message_id="m1")
    await channel.wait_for(lambda: channel.types()[-1:] in (["completed"], ["failed"]))
    assert channel.types()[-1] == "failed"
    assert "text: is not valid Unicode" in channel.events[-1].error
    assert await rt.deliveries(session_id=channel.events[0].session_id) == []
