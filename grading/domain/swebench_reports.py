"""SWE-bench evaluation reports, in every shape the harnesses write (SCHEMAS.md §2).

Run-level reports say, per instance, resolved or not:
- the experiments-repo style (`results.json`, Moatless `result.json`, ACR `report.json`, §2a):
  id lists under `resolved`, `with_logs`, `install_fail`, … ;
- `final_report.json` (§2b): `stats`, a `resolved` list, `resolved_per_project`;
- the current harness's `<model>.<run_id>.json`: `resolved_ids`, `completed_ids`, `error_ids`, … .
Per-instance reports (`logs/<instance_id>/report.json`, §2c) map the id to its result, with
`tests_status` (FAIL_TO_PASS / PASS_TO_PASS successes and failures), which becomes the attempt's
test report; a `test_output.txt` next to it becomes the attempt's test output (its start and
end only when it is over the limit, `test_outputs`).

An instance a report cannot vouch for (outside `with_logs`, incomplete, errored) is an
infrastructure failure: its label is unknown, so it is excluded rather than called a failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grading.domain.jsonfiles import JsonReader, JsonRow
from grading.domain.records import ImportProblem, ImportProblemError, find_nul
from grading.domain.wording import shown

# §2a lists that mean the environment failed before the tests could say anything.
_ENVIRONMENT_FAILED = ("install_fail", "reset_failed")
# The harness's run report: ids it could not evaluate.
_HARNESS_UNKNOWN = ("error_ids", "infra_failure_ids", "incomplete_ids")
_HARNESS_EVALUATED = ("completed_ids", "unresolved_ids", "empty_patch_ids")
_TEST_SECTIONS = ("FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL")
TEST_OUTPUT = "test_output.txt"


@dataclass(frozen=True)
class Evaluation:
    resolved: bool
    infra_failed: bool
    report: dict[str, Any]
    test_output: Path | None = None


@dataclass(frozen=True)
class Report:
    evaluations: dict[str, Evaluation]
    # What an instance the report does not list means: a run-level report lists what was
    # resolved (absent = not resolved, or unknown when it also lists what it evaluated);
    # per-instance reports have no default.
    default: Evaluation | None
    source: str
    test_outputs: dict[str, Path] = field(default_factory=dict)
    # The `logs/` folder of per-instance reports, when they came from one.
    logs: Path | None = None

    def no_result(self, instance_id: str) -> str:
        """Why the report has nothing for `instance_id`, naming the file that would have it."""
        if self.logs is not None:
            expected = self.logs / instance_id / "report.json"
            if expected.parent.is_dir():
                held = sorted(p.name for p in expected.parent.iterdir())[:3]
                return (
                    f"{expected} is missing ({self.logs.name}/{instance_id}/ holds "
                    f"{', '.join(held) or 'nothing'}): the instance's result "
                    f"(logs/<id>/report.json, tests_status) is not there"
                )
            return f"{self.source} has no result for {shown(instance_id)}: no {expected}"
        return f"{self.source} has no result for {shown(instance_id)}"

    def get(self, instance_id: str) -> Evaluation | None:
        found = self.evaluations.get(instance_id, self.default)
        output = self.test_outputs.get(instance_id)
        if found is not None and output is not None and found.test_output is None:
            return Evaluation(found.resolved, found.infra_failed, found.report, output)
        return found

    def over(self, fallback: Report | None) -> Report:
        """This report where it has a result, `fallback` (a run-level report) elsewhere."""
        if fallback is None:
            return self
        return Report(
            {**fallback.evaluations, **self.evaluations},
            fallback.default,
            f"{self.source} (then {fallback.source})",
            {**fallback.test_outputs, **self.test_outputs},
            self.logs or fallback.logs,
        )


def _fail(row: JsonRow, path: str, message: str) -> ImportProblemError:
    return ImportProblemError(
        ImportProblem(row.source, row.line_for(path), row.field + path, message)
    )


def _id_list(row: JsonRow, key: str) -> set[str] | None:
    value = row.value.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(row, f".{key}", "must be a list of instance ids")
    return set(value)


def read_report(path: Path, reader: JsonReader) -> Report:
    """A report file (run-level or one per-instance report) or a folder of per-instance ones."""
    if path.is_dir():
        return read_instance_logs(path, reader)
    rows = list(reader.rows(path))
    if len(rows) != 1 or not isinstance(rows[0].value, dict):
        raise ImportProblemError(
            ImportProblem(
                str(path),
                rows[1].line if len(rows) > 1 else None,
                "",
                "expected one JSON object: a run-level report (`resolved` or `resolved_ids` "
                "lists) or a per-instance report",
            )
        )
    row = rows[0]
    if "resolved_ids" in row.value:
        return _harness_run_report(row)
    if "resolved" in row.value and not isinstance(row.value["resolved"], bool):
        return _listing_report(row)
    return Report(_instance_results(row, None), None, row.source)


def _listing_report(row: JsonRow) -> Report:
    """§2a and §2b: `resolved` (and, in §2a, `with_logs` and the failure lists)."""
    resolved = _id_list(row, "resolved") or set()
    with_logs = _id_list(row, "with_logs")
    environment = set().union(*(_id_list(row, k) or set() for k in _ENVIRONMENT_FAILED))
    # With a `with_logs` list, an instance outside it was never evaluated: its label is
    # unknown, so it is excluded as an infrastructure failure rather than called a failure.
    evaluated = (with_logs | resolved) if with_logs is not None else None
    evaluations = {i: Evaluation(False, False, {}) for i in evaluated or ()}
    evaluations.update({i: Evaluation(False, True, {}) for i in environment})
    evaluations.update({i: Evaluation(True, False, {}) for i in resolved})
    return Report(evaluations, Evaluation(False, evaluated is not None, {}), row.source)


def _harness_run_report(row: JsonRow) -> Report:
    """The harness's `<model>.<run_id>.json` (schema_version 2)."""
    resolved = _id_list(row, "resolved_ids") or set()
    evaluations: dict[str, Evaluation] = {}
    for key in _HARNESS_EVALUATED:
        evaluations.update({i: Evaluation(False, False, {}) for i in _id_list(row, key) or ()})
    for key in _HARNESS_UNKNOWN:
        evaluations.update({i: Evaluation(False, True, {}) for i in _id_list(row, key) or ()})
    evaluations.update({i: Evaluation(True, False, {}) for i in resolved})
    # Not listed at all: never submitted to or finished by this evaluation.
    return Report(evaluations, Evaluation(False, True, {}), row.source)


def _tests_status(row: JsonRow, path: str, value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(row, path, "must map FAIL_TO_PASS / PASS_TO_PASS to success and failure lists")
    for name, section in value.items():
        if not isinstance(section, dict) or not all(
            isinstance(section.get(k, []), list)
            and all(isinstance(t, str) for t in section.get(k, []))
            for k in ("success", "failure")
        ):
            raise _fail(row, f"{path}.{name}", "must be {success: [test ids], failure: [test ids]}")
    return dict(value)


def _instance_results(row: JsonRow, folder: Path | None) -> dict[str, Evaluation]:
    evaluations: dict[str, Evaluation] = {}
    for instance_id, result in row.value.items():
        if not isinstance(result, dict) or not isinstance(result.get("resolved"), bool):
            raise _fail(
                row,
                f".{instance_id}.resolved",
                "must be true or false (a per-instance report maps each instance id to its "
                "result; a run-level report has a `resolved` or `resolved_ids` list)",
            )
        # Stored as the attempt's test report (a jsonb column on PostgreSQL).
        nul = find_nul(result, f".{instance_id}")
        if nul:
            raise _fail(row, nul, "NUL characters are not allowed here")
        flags = {k: v for k, v in result.items() if k != "tests_status"}
        sections = (
            _tests_status(row, f".{instance_id}.tests_status", result["tests_status"])
            if "tests_status" in result
            else {}
        )
        output = folder / TEST_OUTPUT if folder is not None else None
        evaluations[instance_id] = Evaluation(
            resolved=result["resolved"],
            infra_failed=bool(result.get("infra_failure", False)),
            # FAIL_TO_PASS / PASS_TO_PASS at the top, as every test report here has them,
            # beside the harness's own flags.
            report={**flags, **sections},
            test_output=output if output is not None and output.is_file() else None,
        )
    return evaluations


def read_instance_logs(folder: Path, reader: JsonReader) -> Report:
    """`<folder>/<instance_id>/report.json` (+ `test_output.txt`) for every instance there."""
    evaluations: dict[str, Evaluation] = {}
    outputs: dict[str, Path] = {}
    for output in sorted(folder.glob(f"*/{TEST_OUTPUT}")):
        outputs[output.parent.name] = output
    for report_file in sorted(folder.rglob("report.json")):
        for row in reader.rows(report_file):
            if not isinstance(row.value, dict):
                raise _fail(row, "", "a per-instance report must map instance ids to results")
            evaluations.update(_instance_results(row, report_file.parent))
    return Report(evaluations, None, str(folder), outputs, folder)
