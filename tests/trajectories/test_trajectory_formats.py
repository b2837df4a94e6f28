"""Trajectory readers: real files in place, synthetic OpenHands/chat, malformed input, streaming."""

import json
from collections import Counter
from pathlib import Path

import pytest

from grading.domain.trajectories import (
    TrajectoryEvent,
    TrajectoryFormat,
    detect_format,
    events_from_object,
    iter_events_from_file,
)

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "swebench-groups"
TRAJECTORIES = DATA / "trajectories"
SYSTEM_FORMATS = {
    "swe-agent": TrajectoryFormat.SWE_AGENT,
    "autocoderover": TrajectoryFormat.CHAT,
    "moatless": TrajectoryFormat.MOATLESS,
}


def _manifest() -> list[dict[str, object]]:
    if not (TRAJECTORIES / "MANIFEST.json").exists():
        return []
    return json.loads((TRAJECTORIES / "MANIFEST.json").read_text())


MANIFEST = _manifest()
needs_data = pytest.mark.skipif(not MANIFEST, reason="shared swebench-groups data not present")


def _write(tmp_path: Path, obj: object, name: str = "t.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(obj))
    return path


def _both(tmp_path: Path, obj: object) -> list[TrajectoryEvent]:
    """Events read in memory and streamed from a file, checked to be identical."""
    in_memory = list(events_from_object(obj))
    assert list(iter_events_from_file(_write(tmp_path, obj))) == in_memory
    return in_memory


@needs_data
def test_the_manifest_lists_every_saved_trajectory():
    files = {str(p.relative_to(DATA)) for p in TRAJECTORIES.rglob("*") if p.is_file()}
    assert files - {"trajectories/MANIFEST.json"} == {e["file"] for e in MANIFEST}
    assert len(MANIFEST) == 15


@needs_data
@pytest.mark.parametrize("entry", MANIFEST, ids=lambda e: str(e["file"]))
def test_it_reads_every_real_trajectory_the_same_in_memory_and_streamed(entry):
    path = DATA / str(entry["file"])
    obj = json.loads(path.read_bytes())
    expected_format = SYSTEM_FORMATS[str(entry["system"]).split("/")[0]]

    in_memory = list(events_from_object(obj))
    streamed = list(iter_events_from_file(path))

    assert detect_format(obj) is expected_format
    assert streamed == in_memory
    assert list(events_from_object(obj, expected_format.value)) == in_memory
    kinds = Counter(e.kind for e in in_memory)
    if expected_format is TrajectoryFormat.SWE_AGENT:
        # One thought, action and observation per step, plus the issue and the exit status.
        assert len(in_memory) == 3 * len(obj["trajectory"]) + 2
        assert kinds["action"] == kinds["observation"] == len(obj["trajectory"])
    elif expected_format is TrajectoryFormat.CHAT:
        assert len(in_memory) == len(obj)
    else:
        n_actions = sum(len(t["actions"]) for t in obj["transitions"])
        assert kinds["action"] == n_actions
        assert in_memory[0].text == obj["initial_message"]


@needs_data
def test_it_reads_a_swe_agent_traj():
    path = TRAJECTORIES / "swe-agent/cost_2_1/psf__requests-2317.traj"
    events = list(iter_events_from_file(path))

    header, first_thought, first_action, first_obs = events[:4]
    assert header.kind == "message" and header.role == "user"
    assert "builtin_str(method)" in header.text
    assert first_thought.kind == "thought" and first_thought.role == "assistant"
    assert first_action.text == "find_file sessions.py\n"
    assert (first_action.tool, first_action.args) == ("find_file", "sessions.py")
    assert first_obs.kind == "observation" and first_obs.tool == "find_file"
    assert first_obs.extra["state"] == '{"open_file": "n/a", "working_dir": "/psf__requests"}'
    footer = events[-1]
    assert footer.role is None and footer.extra["exit_status"] == "submitted"
    assert footer.extra["model_stats"] == json.loads(path.read_bytes())["info"]["model_stats"]
    assert "submission" not in footer.extra


@pytest.mark.parametrize("history_first", [False, True])
def test_it_finds_the_problem_statement_before_or_after_the_trajectory(tmp_path, history_first):
    traj = {
        "trajectory": [
            {"thought": "look", "action": "ls -a\n", "observation": "x.py", "agent": "Tester"},
            {"thought": "", "action": "submit", "observation": None},
        ],
        "history": [
            {"role": "system", "content": "You are…"},
            {"role": "user", "content": [{"type": "text", "text": "Fix it"}], "agent": "Manager"},
        ],
        "info": {"exit_status": "submitted"},
    }
    if history_first:
        traj = {"history": traj.pop("history"), **traj}
    assert detect_format(traj) is TrajectoryFormat.SWE_AGENT
    events = _both(tmp_path, traj)

    assert [(e.kind, e.text) for e in events] == [
        ("message", "Fix it"),
        ("thought", "look"),
        ("action", "ls -a\n"),
        ("observation", "x.py"),
        ("thought", ""),
        ("action", "submit"),
        ("message", "exit status: submitted"),
    ]
    assert events[0].extra == {"agent": "Manager"}
    assert events[1].extra == {"agent": "Tester"}
    assert events[5].tool == "submit" and events[5].args is None


OPENHANDS_EVENTS = [
    {"id": 0, "source": "agent", "action": "system", "message": "sys", "args": {"content": "SYS"}},
    {
        "id": 1,
        "source": "user",
        "action": "message",
        "message": "Fix the bug",
        "args": {"content": "Fix the bug in utils.py", "image_urls": None},
    },
    {
        "id": 2,
        "source": "agent",
        "action": "run",
        "message": "Running command: pytest -q",
        "args": {"command": "pytest -q", "thought": "Run the tests first.", "blocking": False},
        "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "toolu_1"},
        "llm_metrics": {"accumulated_cost": 0.01, "model": "secret-model"},
    },
    {
        "id": 3,
        "source": "environment",
        "cause": 2,
        "observation": "run",
        "message": "Command `pytest -q` executed with exit code 1.",
        "content": "1 failed",
        "extras": {"command": "pytest -q", "metadata": {"exit_code": 1, "pid": -1}},
    },
    {
        "id": 4,
        "source": "agent",
        "action": "read",
        "message": "Reading file: /ws/utils.py",
        "args": {"path": "/ws/utils.py", "thought": ""},
    },
    {
        "id": 5,
        "source": "environment",
        "observation": "read",
        "message": "I read the file /ws/utils.py.",
        "content": "def f():\n    return 1\x00\n",
        "extras": {"path": "/ws/utils.py"},
    },
    {
        "id": 6,
        "source": "agent",
        "action": "edit",
        "message": "",
        "args": {
            "path": "/ws/utils.py",
            "command": "str_replace",
            "old_str": "return 1",
            "new_str": "return 2",
            "thought": "Change the constant.",
        },
    },
    {"id": 7, "source": "agent", "observation": "edit", "content": "The file was edited."},
    {"id": 8, "source": "agent", "action": "think", "args": {"thought": "Maybe more cases 🤔"}},
    {
        "id": 9,
        "source": "agent",
        "observation": "think",
        "content": "Your thought has been logged.",
    },
    {"id": 10, "source": "user", "observation": "error", "content": "Timeout after 120 s"},
    {"id": 11, "source": "agent", "action": "recall", "args": {"query": "utils"}},
    {"id": 12, "source": "agent", "observation": "null", "content": ""},
    {
        "id": 13,
        "source": "environment",
        "observation": "agent_state_changed",
        "content": "",
        "extras": {"agent_state": "running"},
    },
    {
        "id": 14,
        "source": "agent",
        "action": "finish",
        "args": {"final_thought": "Done.", "outputs": {}, "thought": ""},
    },
]


def test_it_reads_an_openhands_event_list(tmp_path):
    events = _both(tmp_path, OPENHANDS_EVENTS)

    assert detect_format(OPENHANDS_EVENTS) is TrajectoryFormat.OPENHANDS
    assert [(e.kind, e.role, e.tool) for e in events] == [
        ("message", "system", None),
        ("message", "user", None),
        ("thought", "assistant", None),
        ("action", "assistant", "run"),
        ("observation", "tool", "run"),
        ("action", "assistant", "read"),
        ("observation", "tool", "read"),
        ("thought", "assistant", None),
        ("action", "assistant", "edit"),
        ("observation", "assistant", "edit"),
        ("thought", "assistant", None),
        ("observation", "assistant", "think"),
        ("error", "user", "error"),
        ("action", "assistant", "recall"),
        ("observation", "tool", "agent_state_changed"),
        ("action", "assistant", "finish"),
    ]
    run, run_output = events[3], events[4]
    assert (run.text, run.args) == ("Running command: pytest -q", "pytest -q")
    assert run_output.extra == {"exit_code": 1}
    assert events[6].text == "def f():\n    return 1\x00\n"
    assert json.loads(events[8].args or "") == {
        "path": "/ws/utils.py",
        "command": "str_replace",
        "old_str": "return 1",
        "new_str": "return 2",
    }
    assert events[10].text == "Maybe more cases 🤔"
    assert events[13].args == '{"query":"utils"}'
    assert events[14].text == "running"
    assert events[-1].text == "Done."
    assert not any("secret-model" in json.dumps(e.to_json()) for e in events)


def test_it_reads_openhands_output_history_and_old_pairs(tmp_path):
    wrapped = {"instance_id": "x", "history": OPENHANDS_EVENTS, "metadata": {}}
    pairs = {"history": [[OPENHANDS_EVENTS[2], OPENHANDS_EVENTS[3]], [OPENHANDS_EVENTS[8], {}]]}

    assert detect_format(wrapped) is detect_format(pairs) is TrajectoryFormat.OPENHANDS
    assert _both(tmp_path, wrapped) == list(events_from_object(OPENHANDS_EVENTS))
    assert [e.kind for e in _both(tmp_path, pairs)] == [
        "thought",
        "action",
        "observation",
        "thought",
    ]


def test_it_reads_chat_messages_with_tool_calls(tmp_path):
    chat = [
        {"role": "system", "content": "Be helpful."},
        {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "image_url"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "search_code", "arguments": '{"q": "f"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "found f"},
        {"role": "assistant", "content": "All done."},
        {"role": "critic", "content": "meh"},
    ]
    events = _both(tmp_path, chat)

    assert detect_format(chat) is TrajectoryFormat.CHAT
    assert [(e.kind, e.role) for e in events] == [
        ("message", "system"),
        ("message", "user"),
        ("action", "assistant"),
        ("observation", "tool"),
        ("message", "assistant"),
        ("message", None),
    ]
    assert events[1].text == "Hi\n[image_url]"
    assert (events[2].tool, events[2].args) == ("search_code", '{"q": "f"}')
    assert events[3].tool == "search_code"
    assert events[5].extra == {"role": "critic"}


def test_it_reads_a_native_list_and_keeps_nul_and_astral_text(tmp_path):
    native = [
        TrajectoryEvent("message", "user", "a\x00b 𝄞"),
        TrajectoryEvent("action", "assistant", "ls", tool="bash", args="-la", extra={"n": 1}),
        TrajectoryEvent("error", None, ""),
    ]
    obj = [e.to_json() for e in native]

    assert detect_format(obj) is TrajectoryFormat.NATIVE
    assert _both(tmp_path, obj) == native
