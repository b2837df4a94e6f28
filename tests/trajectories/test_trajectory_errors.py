"""Malformed trajectories: every error is a TrajectoryFormatError naming the JSON path."""

import json
from pathlib import Path

import pytest

from grading.domain.trajectories import (
    TrajectoryFormatError,
    detect_format,
    events_from_object,
    iter_events_from_file,
)


def _write(tmp_path: Path, obj: object) -> Path:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(obj))
    return path


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "$: not valid JSON"),
        (b'{"trajectory": [{"action": "ls"}, ', "$: not valid JSON"),
        (b'[{"role": "user", "content": "caf\xe9"}]', "$: not valid UTF-8 JSON"),
        (b"", "$: not valid JSON"),
        (b'{"foo": 1}', "unknown trajectory format: object with keys ['foo']"),
        (b"[1, 2]", "unknown trajectory format"),
        (b'{"trajectory": {"a": 1}}', "$.trajectory: expected a list"),
    ],
)
def test_it_rejects_malformed_files_with_a_clear_error(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)

    with pytest.raises(TrajectoryFormatError) as caught:
        list(iter_events_from_file(path))
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            {"trajectory": [{"action": "ls"}, {"action": "ls", "observation": 3}]},
            "$.trajectory[1].observation: expected a string, got a number",
        ),
        ([{"role": "user", "content": 7}], "$[0].content: expected a string or a list of parts"),
        ([{"kind": "shout", "text": "x"}], "$[0].kind: expected one of"),
        ([{"kind": "message", "text": "x", "colour": 1}], "$[0]: unexpected keys ['colour']"),
        ([{"action": "run", "args": "ls"}], "$[0].args: expected an object, got a string"),
        (
            {"transitions": [{"name": "EditCode", "actions": [{"action": [1]}]}]},
            "$.transitions[0].actions[0].action: expected an object",
        ),
    ],
)
def test_it_names_the_json_path_of_a_wrong_type(tmp_path, obj, message):
    with pytest.raises(TrajectoryFormatError) as in_memory:
        list(events_from_object(obj))
    with pytest.raises(TrajectoryFormatError) as streamed:
        list(iter_events_from_file(_write(tmp_path, obj)))
    assert str(in_memory.value).startswith(message)
    assert str(streamed.value) == str(in_memory.value)


def test_it_rejects_an_unknown_format():
    with pytest.raises(TrajectoryFormatError, match="unknown trajectory format: top level is"):
        detect_format(42)
    with pytest.raises(TrajectoryFormatError, match="unknown trajectory format: object with"):
        detect_format({"steps": []})
    with pytest.raises(TrajectoryFormatError, match='unknown trajectory format: "xml"'):
        events_from_object([], "xml")
