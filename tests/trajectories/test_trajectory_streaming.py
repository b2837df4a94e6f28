"""Event JSON round trip (property-based) and bounded-memory streaming of a huge file."""

import json
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grading.domain.trajectories import TrajectoryEvent, iter_events_from_file
from grading.domain.trajectory_formats.model import EVENT_KINDS, ROLES

# Default text strategies already include NUL and astral-plane characters; surrogates are
# excluded because they cannot be encoded as UTF-8 at all.
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=10,
)
events = st.builds(
    TrajectoryEvent,
    kind=st.sampled_from(sorted(EVENT_KINDS)),
    role=st.none() | st.sampled_from(sorted(ROLES)),
    text=st.text(),
    tool=st.none() | st.text(),
    args=st.none() | st.text(),
    extra=st.dictionaries(st.text(), json_values, max_size=4),
)


@given(events)
def test_it_round_trips_an_event_through_json(event):
    as_json = event.to_json()

    assert TrajectoryEvent.from_json(as_json) == event
    assert TrajectoryEvent.from_json(json.loads(json.dumps(as_json))) == event


@given(st.text(alphabet=st.sampled_from(["\x00", "𝄞", "é", "a", "\n", '"', "\\"])))
def test_it_keeps_nul_and_astral_text_exactly(text):
    event = TrajectoryEvent("observation", "tool", text)

    assert TrajectoryEvent.from_json(json.loads(json.dumps(event.to_json()))).text == text


def _write_big_swe_agent_traj(path: Path, steps: int, observation_bytes: int) -> None:
    # Each step is written on its own, so generating the file needs no more memory than reading.
    line = "line of test output \\u0000 é\\n"
    # Whole lines only: cutting mid-escape would make the JSON invalid.
    observation = line * (observation_bytes // len(line))
    with path.open("w", encoding="utf-8") as f:
        f.write('{"environment": "swe_main", "trajectory": [')
        for i in range(steps):
            if i:
                f.write(",")
            f.write(
                f'{{"thought": "step {i}", "action": "cat file_{i}.py\\n", '
                f'"observation": "{observation}", "response": "{observation}", "state": "{{}}"}}'
            )
        # History after the trajectory, as CodeR writes it: the reader must look ahead for it.
        f.write('], "history": [{"role": "system", "content": "sys"}, ')
        f.write('{"role": "user", "content": "the issue"}], ')
        f.write('"info": {"exit_status": "submitted", "model_stats": {"api_calls": 3}}}')


@pytest.mark.slow
def test_it_streams_a_200_mb_traj_with_bounded_memory(tmp_path):
    path = tmp_path / "huge.traj"
    steps = 1000
    _write_big_swe_agent_traj(path, steps=steps, observation_bytes=106_000)
    size = path.stat().st_size
    assert size >= 200_000_000

    started = time.monotonic()
    tracemalloc.start()
    try:
        count = 0
        first = last = None
        for event in iter_events_from_file(path):
            first = first or event
            last = event
            count += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert count == 3 * steps + 2
    assert first is not None and first.text == "the issue"
    assert last is not None and last.extra["exit_status"] == "submitted"
    assert peak < 64 * 2**20, f"peak {peak / 2**20:.1f} MB for a {size / 2**20:.0f} MB file"
    assert time.monotonic() - started < 60
