"""Attempts a9-a12: they fail the tests, or never finish; context for the grader, not ranked."""

from grading.sample.passing import PROBE, ROOT_CAUSE_FIX, SIZES
from grading.sample.steps import Attempt, Replace, Run, View, error, reply, think
from grading.sample.task import MOSAIC, OPENFIX, PATCHSMITH, TEST_COMMAND, opening

A9 = Attempt(
    id="a9",
    design="incomplete: fixes the bytes/KiB boundary only, MiB and GiB still wrong",
    agent=OPENFIX,
    steps=[
        *opening(OPENFIX),
        Run('python -c "from humanize_lite import format_bytes; print(format_bytes(1024))"'),
        View(SIZES, 12, 23),
        think("The bytes branch should switch to KiB at 1024, not after it."),
        # A whitespace slip the editor rejects: a real kind of error event in trajectories.
        Replace(
            SIZES,
            "  if _below_step(n):\n      return f'{n} B'",
            "  if n < _STEP:\n      return f'{n} B'",
            fails="No replacement was performed, old_str `  if _below_step(n):\n      return "
            "f'{n} B'` did not appear verbatim in /testbed/humanize_lite/sizes.py.",
        ),
        Replace(SIZES, "    if _below_step(n):\n", "    if n < _STEP:\n"),
        Run('python -c "from humanize_lite import format_bytes; print(format_bytes(1024))"'),
        Run("python -m pytest -q tests/test_sizes.py"),
        think(
            "The KiB case from the issue is fixed. The MiB and GiB failures are in the unit "
            "loop, which the issue does not ask about; I will leave that behaviour alone."
        ),
        reply("`format_bytes(1024)` now returns '1.0 KiB'. Bytes switch to KiB at 1024."),
    ],
)

A10 = Attempt(
    id="a10",
    design="wrong fix in the wrong place: changes parse_bytes rounding, format_bytes untouched",
    agent=MOSAIC,
    steps=[
        *opening(MOSAIC),
        Run("grep -rn 1024 humanize_lite"),
        View(SIZES, 26, 33),
        think(
            "The conversion truncates with int(): 1.0 KiB times 1024 can come out as 1023.99 "
            "and be truncated, which would explain 1024 showing up as bytes. Rounding fixes it."
        ),
        Replace(
            SIZES,
            "    return int(float(number) * _STEP**exponent)",
            "    return round(float(number) * _STEP**exponent)",
        ),
        Run("python -c \"from humanize_lite import parse_bytes; print(parse_bytes('1.0 KiB'))\""),
        Run("pytest -q", fake_output="bash: pytest: command not found"),
        reply("Fixed the size conversion to round instead of truncating."),
    ],
)

A11 = Attempt(
    id="a11",
    design="fixes the boundary with math.log but crashes on 0, breaking a PASS_TO_PASS test",
    agent=PATCHSMITH,
    steps=[
        *opening(PATCHSMITH),
        View(SIZES, 1, 24),
        think(
            "Instead of stepping through units, compute the exponent directly: "
            "int(log_1024(n)) is exactly the unit index, and exact powers land on whole "
            "numbers, so the boundary is handled without any comparison."
        ),
        Replace(SIZES, "_STEP = 1024\n", "import math\n\n_STEP = 1024\n"),
        Replace(
            SIZES,
            "    if _below_step(n):\n"
            '        return f"{n} B"\n'
            "    value = n / _STEP\n"
            "    for unit in _UNITS[:-1]:\n"
            "        if _below_step(value):\n"
            '            return f"{value:.{precision}f} {unit}"\n'
            "        value /= _STEP\n"
            '    return f"{value:.{precision}f} {_UNITS[-1]}"\n',
            "    exponent = min(int(math.log(n, _STEP)), len(_UNITS))\n"
            "    if exponent == 0:\n"
            '        return f"{n} B"\n'
            '    return f"{n / _STEP**exponent:.{precision}f} {_UNITS[exponent - 1]}"\n',
        ),
        Run(PROBE),
        Run("python -m pytest -q tests/test_sizes.py -k exactly"),
        reply("Replaced the unit loop with a logarithm; the boundary tests pass. DONE"),
    ],
)

A12 = Attempt(
    id="a12",
    design="infra failure: the sandbox was OOM-killed during the test run",
    agent=MOSAIC,
    status="infra_failed",
    infra_output=(
        f"$ {TEST_COMMAND}\n"
        "ERROR: sandbox container sbx-5e1c2a exited with code 137 (OOMKilled) after 1800 s; "
        "memory limit 2 GiB reached.\nNo test results were collected.\n"
    ),
    steps=[
        *opening(MOSAIC),
        View(SIZES, 1, 24),
        think("`_below_step` should be a strict comparison."),
        ROOT_CAUSE_FIX,
        Run(
            "python -m pytest -q",
            fake_output="Killed\n[sandbox] container exited with code 137 (OOMKilled)",
        ),
        error("Connection to sandbox lost: container sbx-5e1c2a is not running."),
    ],
)
