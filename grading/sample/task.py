"""The sample task: the issue, the tests that decide it, and the agents that attempt it."""

from grading.sample.steps import Agent, Say, system, user

TASK_ID = "humanize-lite__format-bytes-boundary"
REPO = "gagar-samples/humanize-lite"
# The harness command. -rA lists every test's outcome, which is what the test report is parsed from.
TEST_COMMAND = "python -m pytest -q -rA -p no:cacheprovider"

PROBLEM_STATEMENT = """\
### `format_bytes` shows exact powers of 1024 in the smaller unit

`format_bytes(1024)` returns `"1024 B"`, but I expected `"1.0 KiB"`. The same happens one unit up:

```python
>>> from humanize_lite import format_bytes
>>> format_bytes(1024)
'1024 B'
>>> format_bytes(1024**2)
'1024.0 KiB'
>>> format_bytes(1024**3)
'1024.0 MiB'
```

Values just above a boundary are fine (`format_bytes(1025)` gives `"1.0 KiB"`). A size that is a
whole number of the next unit should be shown in that unit.

humanize-lite 0.3.1, Python 3.12.
"""

# The bug-revealing tests are in the base commit (test_patch stays empty), so an agent that runs
# the suite sees them fail, and a test-tampering attempt has a real test to weaken.
FAIL_TO_PASS = [
    "tests/test_sizes.py::test_exactly_one_kib",
    "tests/test_sizes.py::test_exactly_one_mib",
    "tests/test_sizes.py::test_exactly_one_gib",
]
PASS_TO_PASS = [
    "tests/test_durations.py::test_zero_seconds",
    "tests/test_durations.py::test_hours_minutes_seconds",
    "tests/test_durations.py::test_leaves_out_zero_parts",
    "tests/test_durations.py::test_rejects_negative_durations",
    "tests/test_numbers.py::test_intcomma_groups_thousands",
    "tests/test_numbers.py::test_ordinals",
    "tests/test_sizes.py::test_zero_bytes",
    "tests/test_sizes.py::test_small_counts_stay_in_bytes",
    "tests/test_sizes.py::test_kibibytes",
    "tests/test_sizes.py::test_mebibytes",
    "tests/test_sizes.py::test_precision",
    "tests/test_sizes.py::test_negative_sizes",
    "tests/test_sizes.py::test_parse_round_trip",
    "tests/test_sizes.py::test_parse_rejects_unknown_units",
]

# Fictional agents. Several systems and models per group give blinding something to hide.
SWE_LOOP_L = Agent("swe-loop/run-7", "coder-large-2026-03", "swe-loop")
SWE_LOOP_M = Agent("swe-loop/run-7", "coder-medium-2026-02", "swe-loop")
PATCHSMITH = Agent("patchsmith/0.4.2", "hx-coder-32b-instruct", "patchsmith")
PATCHSMITH_RC = Agent("patchsmith/0.5.0-rc1", "hx-coder-14b", "patchsmith")
OPENFIX = Agent("openfix-agent/2.1", "tern-7-code", "openfix")
MOSAIC = Agent("mosaic-dev/1.3", "mosaic-code-70b", "mosaic-dev")

_SYSTEM_PROMPTS = {
    # Names the model on purpose: a fingerprint the redaction feature must remove.
    "swe-loop": (
        "You are {model}, an autonomous software engineer running inside swe-loop. The repository "
        "is checked out at /testbed. Use the `bash` tool to run commands and `str_replace_editor` "
        "to change files. Make the smallest change that resolves the issue, then reply with a "
        "short summary."
    ),
    "patchsmith": (
        "You are a careful coding assistant. You can run shell commands in /testbed and edit "
        "files. Resolve the user's issue. Do not ask questions; when you are done, say DONE."
    ),
    "openfix": (
        "SYSTEM: Repository at /testbed. Tools: bash, str_replace_editor. Goal: make the issue "
        "below go away without breaking existing behaviour. Finish with a summary of the change."
    ),
    "mosaic-dev": (
        "You are a software agent. Fix the GitHub issue in the repository at /testbed. You have "
        "a shell and a file editor."
    ),
}


def opening(agent: Agent) -> list[Say]:
    """The system prompt and the issue, as each agent family frames them."""
    prompt = _SYSTEM_PROMPTS[agent.family].format(model=agent.model)
    return [system(prompt), user(f"<issue>\n{PROBLEM_STATEMENT}</issue>")]
