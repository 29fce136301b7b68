"""JSON metadata with characters beyond the BMP (an emoji: ``json.dumps`` writes it as the
surrogate *pair* ``\\ud83d\\ude00``) is taken without walking the whole tree in Python looking
for a lone surrogate: the walk (which names the place) runs only when the JSON holds a lone
one. It ran on every send whose metadata held an emoji, however large the tree."""

from __future__ import annotations

import pytest

from tidings.actors import _blocks
from tidings.actors._blocks import check_json_object
from tidings.errors import ValidationError


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The trees the lone-surrogate walk was run on."""
    seen: list[object] = []
    walk = _blocks._lone_surrogate_at

    def counted(value: dict) -> str | None:
        seen.append(value)
        return walk(value)

    monkeypatch.setattr(_blocks, "_lone_surrogate_at", counted)
    return seen


@pytest.mark.parametrize("value", [
    {"😀": ["é", "\U0001F600" * 50, {"deep": "🎉 party 🎉"}]},
    {"tags": ["\U0001F600\U0001F601", "\U00010000\U0010FFFF"]},
    {"text": "\\ud800 and \\udc00 are not surrogates, only text"},
    {"\\ud83d\\ude00": "\\\\ud800"},
], ids=["emoji", "pairs-back-to-back", "escaped-backslash", "escaped-backslash-key"])
def test_valid_json_past_the_bmp_is_taken_without_the_walk(walks, value) -> None:
    assert check_json_object(value, "metadata") == value
    assert walks == []


@pytest.mark.parametrize(("value", "where"), [
    ({"n": {"deep": ["a", ["b\ud83d"]]}}, "value at ['n']['deep'][1][0]"),
    ({"n": [1, {"x": "😀 ok \udfff"}]}, "value at ['n'][1]['x']"),
    ({"k": "\ud83d\U0001F600"}, "value at ['k']"),
    ({"k": "\U0001F600\ude00"}, "value at ['k']"),
    ({"k": "\\ud83d\udc00"}, "value at ['k']"),
    ({"k": "\\\ud800"}, "value at ['k']"),
    ({"k": "\\\\\udc80"}, "value at ['k']"),
    ({"\ud800": 1}, "key at the top"),
], ids=["high-at-depth", "low-after-emoji", "high-before-pair", "low-after-pair",
        "low-after-backslash-text", "high-after-backslash", "low-after-two-backslashes",
        "key"])
def test_a_lone_surrogate_is_still_refused_with_its_place(walks, value, where) -> None:
    with pytest.raises(ValidationError) as caught:
        check_json_object(value, "metadata")
    assert caught.value.field == "metadata"
    assert where in str(caught.value)
    assert len(walks) == 1
