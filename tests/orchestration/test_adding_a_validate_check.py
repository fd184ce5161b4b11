"""Adding a `torchscale validate` check is one function plus its line in `CHECKS`
(docs/architecture.md, "A validate check"): tests/added_check.py holds the function, and the
test adds the one line to torchscale/orchestration/validate/run_checks.py's `CHECKS` (read
when the command runs). The cheapest run (`--device cpu --quick`: no torchrun, no compile)
then shows its row with the fix, names it in the verdict and counts it, `--json` holds it with
its data, `--quiet` keeps it (a WARN), and `--fail-on warn` turns it into exit 1; where it
cannot run (the CUDA path) it is a SKIP saying why. No other file changes."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.added_check import CHECK_ID, ELSEWHERE, HINT, SEEN, TITLE, check_added
from torchscale.contracts.wording import say
from torchscale.interfaces.cli.app import app
from torchscale.orchestration.validate import run_checks


def invoke(*args: str, device: str = "cpu") -> tuple[int, str]:
    result = CliRunner().invoke(
        app, ["validate", "--device", device, "--quick", *args], env={"COLUMNS": "300"}
    )
    return result.exit_code, result.stdout


def test_one_function_and_its_checks_line_add_a_validate_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, before = invoke("--json")
    assert code == 0, before
    without = json.loads(before)
    assert CHECK_ID not in [c["id"] for c in without["checks"]]

    monkeypatch.setattr(run_checks, "CHECKS", (*run_checks.CHECKS, check_added))  # the line

    # --json: the check in its place (after the others, before the smoke test), with its data
    code, out = invoke("--json")
    assert code == 0, out
    report = json.loads(out)
    ids = [c["id"] for c in report["checks"]]
    assert ids == [*[c["id"] for c in without["checks"][:-1]], CHECK_ID, "smoke"]
    [check] = [c for c in report["checks"] if c["id"] == CHECK_ID]
    assert check == {
        "id": CHECK_ID,
        "title": TITLE,
        "status": "WARN",
        "data": {"seen": 1},
        "findings": [SEEN.model_dump()],  # codes and figures, worded when shown
        "fix": [HINT.model_dump()],
    }
    assert report["counts"]["WARN"] == without["counts"]["WARN"] + 1
    assert report["ok"] is True
    assert report["verdict_basis"]["figures"]["warns"][-1] == TITLE

    # the table: its row with what it found and the fix, the verdict naming it
    code, table = invoke()
    assert code == 0, table
    [row] = [line for line in table.splitlines() if line.startswith("│") and TITLE in line]
    assert "WARN" in row and say(SEEN) in row
    assert f"fix: {say(HINT)}" in table
    verdict = " ".join(table.split()).split("Worth a look: ")[1]
    assert verdict.split(" (")[0].endswith(f"{TITLE}.")

    # --quiet hides PASS and SKIP rows, never a WARN; --fail-on warn makes it block
    code, quiet = invoke("--quiet")
    assert code == 0 and TITLE in quiet
    code, _ = invoke("--fail-on", "warn")
    assert code == 1

    # where it cannot run, a SKIP saying why (no verdict on the node: it never blocks)
    _, out = invoke("--json", device="cuda")
    [check] = [c for c in json.loads(out)["checks"] if c["id"] == CHECK_ID]
    assert check["status"] == "SKIP"
    assert check["findings"] == [ELSEWHERE.model_dump()] and "said" not in check
