"""`torchscale validate` end to end through the CLI (typer's CliRunner, in process).

The full CPU-path run (with its real 2-rank gloo torchrun, ~6 s) happens once per module and is
shared by the tests that inspect its report.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner, Result

from torchscale.contracts.finding import Finding
from torchscale.contracts.schema.validate_report import SCHEMA_VERSION, CheckResult, ValidateReport
from torchscale.contracts.wording import say
from torchscale.contracts.wording import validate_measured as shown
from torchscale.interfaces.cli.app import app

GOLDEN_SCHEMA = Path(__file__).parents[1] / "golden" / "validate_report.schema.json"
REGENERATE = (
    "python -c 'import json; "
    "from torchscale.orchestration.validate.check_result import ValidateReport; "
    "print(json.dumps(ValidateReport.model_json_schema(), indent=2, sort_keys=True))' "
    "> tests/golden/validate_report.schema.json"
)
GPU_CHECK_IDS = (
    "cuda",
    "gpus",
    "driver",
    "cuda_compat",
    "p2p",
    "nvlink",
    "fabric",
    "gpu_settings",
    "ecc",
    "persistence",
    "throttle",
)


def _cuda_gpus() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:
        return 0


no_gpu_only = pytest.mark.skipif(_cuda_gpus() > 0, reason="asserts the no-GPU verdict")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, ["validate", *args])


def flat(text: str) -> str:
    """Output with rich's line wrapping undone."""
    return " ".join(text.split())


def by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in report["checks"]}


def _verdict(report: dict[str, Any]) -> str:
    """The stored conclusion in words, by its code."""
    assert "verdict" not in report  # no sentence beside the code
    return say(Finding.model_validate(report["verdict_basis"]))


def _detail(check: dict[str, Any]) -> str:
    """A stored check's words, made as every reader makes them (a report stores findings)."""
    return shown.detail(CheckResult.model_validate(check))


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Result, Path, Path]]:
    """`validate --device cpu --json` run once, for real; smoke work dirs go to `tmp`."""
    tmp = tmp_path_factory.mktemp("smoke-tmp")
    out = tmp_path_factory.mktemp("cpu-run")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tempfile, "tempdir", str(tmp))
        mp.setenv("XDG_CACHE_HOME", str(out / "xdg-cache"))  # a cold probe, not the user's PASS
        result = invoke("--device", "cpu", "--json", "--output-dir", str(out / "results"))
    yield result, tmp, out


@pytest.fixture(scope="module")
def cpu_report(cpu_run: tuple[Result, Path, Path]) -> dict[str, Any]:
    result = cpu_run[0]
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


# ------------------------------------------------------------------------ the real CPU run


@pytest.mark.slow  # a real `validate --device cpu` run (torchrun smoke, compile probe)
def test_cpu_run_exits_zero_with_json_only_on_stdout(cpu_run: tuple[Result, Path, Path]) -> None:
    result = cpu_run[0]
    assert result.exit_code == 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    report = json.loads(result.stdout)  # nothing but the document on stdout
    assert report["kind"] == "torchscale.validate"


@pytest.mark.slow  # a real `validate --device cpu` run (torchrun smoke, compile probe)
def test_cpu_report_matches_json_schema(cpu_report: dict[str, Any]) -> None:
    schema = ValidateReport.model_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(cpu_report)
    ValidateReport.model_validate(cpu_report)  # and it round-trips through the model


@pytest.mark.slow  # a real `validate --device cpu` run (torchrun smoke, compile probe)
def test_cpu_report_header(cpu_report: dict[str, Any]) -> None:
    assert cpu_report["schema_version"] == SCHEMA_VERSION
    assert cpu_report["device"] == "cpu"
    assert cpu_report["quick"] is False
    assert cpu_report["ok"] is True
    assert _verdict(cpu_report).startswith(
        "This node is ready for CPU (gloo) distributed training."
    )
    assert "--quick" not in _verdict(cpu_report)


@pytest.mark.slow  # a real `validate --device cpu` run (torchrun smoke, compile probe)
def test_cpu_smoke_test_passed(cpu_report: dict[str, Any]) -> None:
    smoke = [c for c in cpu_report["checks"] if c["id"].startswith("smoke")]
    assert [c["id"] for c in smoke] == ["smoke_gloo_cpu"]
    check = smoke[0]
    assert check["status"] == "PASS", check
    assert check["title"] == "Smoke test (gloo x2 on cpu)"
    assert "correct on 2 rank(s)" in _detail(check)
    result = check["data"]["result"]
    assert result["wrong_elements"] == 0
    assert result["world_size"] == 2
    assert result["backend"] == "gloo"
    assert result["device"] == "cpu"
    assert result["all_gather_ranks"] == [0, 1]
    assert result["all_gather_ok"] is True
    assert result["expected_value"] == 3.0
    assert result["seconds_per_all_reduce"] > 0
    assert check["data"]["spec"] == {"backend": "gloo", "nproc": 2, "device": "cpu"}


@pytest.mark.slow  # a real `validate --device cpu` run (torchrun smoke, compile probe)
def test_cpu_compile_toolchain_built_and_ran_a_kernel(
    cpu_run: tuple[Result, Path, Path], cpu_report: dict[str, Any]
) -> None:
    """Inductor's C++ path works here (g++ and the Python headers are installed);
    the kernel was built in the probe's own empty cache, on the output folder's filesystem (the
    folder a benchmark's compile cache would be made in), which is gone afterwards; the PASS is
    kept in the user's cache folder for the next run."""
    check = by_id(cpu_report)["compile"]
    assert check["status"] == "PASS", check
    assert check["data"]["binaries_built"] >= 1
    assert "built and ran a C++ kernel" in _detail(check)
    tmp, out = cpu_run[1], cpu_run[2]
    assert not list(tmp.glob("torchscale-compile-*"))
    assert sorted(p.name for p in out.iterdir()) == ["xdg-cache"]  # no results folder made
    assert len(list((out / "xdg-cache" / "torchscale" / "compile-toolchain").glob("*.json"))) == 1


@pytest.mark.slow  # a real `validate --device cpu` run (torchrun smoke, compile probe)
def test_the_next_validate_reads_the_kept_pass_back(
    cpu_run: tuple[Result, Path, Path], cpu_report: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Basic validate is fast the second time: the compile probe's PASS is read back, dated
    (the check asked as validate asks it, without the smoke test)."""
    from torchscale.orchestration.validate import compile_toolchain
    from torchscale.orchestration.validate.check_context import ValidateContext
    from torchscale.orchestration.validate.checks_software import check_compile

    out = cpu_run[2]
    monkeypatch.setenv("XDG_CACHE_HOME", str(out / "xdg-cache"))
    monkeypatch.setattr(compile_toolchain, "_VERDICTS", {})  # a new process
    ctx = ValidateContext(device="cpu", output_dir=out / "results", quick=False)
    again = check_compile(ctx)
    first = by_id(cpu_report)["compile"]
    assert again.status.value == "PASS"
    assert shown.detail(again).startswith(_detail(first) + "; cached from ")
    assert again.data["binaries_built"] == first["data"]["binaries_built"]


@pytest.mark.slow  # a real `validate --device cpu` run (torchrun smoke, compile probe)
def test_cpu_smoke_work_dir_removed_after_pass(
    cpu_run: tuple[Result, Path, Path], cpu_report: dict[str, Any]
) -> None:
    tmp = cpu_run[1]
    assert not list(tmp.glob("torchscale-validate-*"))


@pytest.mark.slow  # a real `validate --device cpu` run (torchrun smoke, compile probe)
def test_cpu_counts_add_up(cpu_report: dict[str, Any]) -> None:
    counts = cpu_report["counts"]
    assert set(counts) == {"PASS", "WARN", "FAIL", "SKIP", "INFO"}
    assert sum(counts.values()) == len(cpu_report["checks"])
    for status, n in counts.items():
        assert n == sum(c["status"] == status for c in cpu_report["checks"]), status
    assert counts["FAIL"] == 0


@pytest.mark.slow  # a real `validate --device cpu` run (torchrun smoke, compile probe)
def test_cpu_run_skips_gpu_checks(cpu_report: dict[str, Any]) -> None:
    checks = by_id(cpu_report)
    for check_id in GPU_CHECK_IDS:
        assert checks[check_id]["status"] == "SKIP", check_id
        assert "--device cpu" in _detail(checks[check_id])
    assert checks["nccl"]["status"] == "SKIP"
    assert checks["gloo"]["status"] == "PASS"
    assert checks["torch"]["status"] == "PASS"
    assert checks["python"]["status"] == "PASS"


@pytest.mark.slow  # a real `validate --device cpu` run (torchrun smoke, compile probe)
def test_cpu_run_checks_disk_at_output_dir_ancestor(
    cpu_run: tuple[Result, Path, Path], cpu_report: dict[str, Any]
) -> None:
    out = cpu_run[2]
    disk = by_id(cpu_report)["disk"]
    assert disk["data"]["path"] == str(out.resolve())
    assert not (out / "results").exists()


@pytest.mark.slow  # a real `validate --device cpu` run (torchrun smoke, compile probe)
def test_check_ids_are_unique(cpu_report: dict[str, Any]) -> None:
    ids = [c["id"] for c in cpu_report["checks"]]
    assert len(ids) == len(set(ids))


# -------------------------------------------------------------------------- schema golden


def test_schema_matches_golden_file() -> None:
    current = json.dumps(ValidateReport.model_json_schema(), indent=2, sort_keys=True)
    golden = GOLDEN_SCHEMA.read_text(encoding="utf-8")
    assert current.strip() == golden.strip(), (
        "The JSON Schema of `torchscale validate --json` changed. If that is deliberate, bump "
        "SCHEMA_VERSION (and the schema_version Literal) in "
        "torchscale/contracts/schema/validate_report.py, then "
        f"regenerate the golden file:\n    {REGENERATE}"
    )


def test_schema_version_constant_matches_model() -> None:
    field = ValidateReport.model_fields["schema_version"]
    assert field.default == SCHEMA_VERSION
    assert ValidateReport.model_json_schema()["properties"]["schema_version"]["const"] == (
        SCHEMA_VERSION
    )


@pytest.mark.parametrize(
    "mutate",
    [
        lambda r: r["checks"][0].update(status="MAYBE"),
        lambda r: r.update(unexpected=1),
        lambda r: r["counts"].update(OK=1),
        lambda r: r.update(schema_version=SCHEMA_VERSION + 1),
        lambda r: r.update(verdict_basis="a sentence"),
    ],
)
def test_schema_rejects_malformed_reports(mutate: Any) -> None:
    report = json.loads(
        ValidateReport(
            torchscale_version="0",
            created_at="2024-01-01T00:00:00+00:00",
            hostname="h",
            device="cpu",
            quick=True,
            ok=True,
            counts={},
            verdict_basis=Finding(code="validate.ready", figures={"quick": True, "path": "CPU"}),
            checks=[{"id": "x", "title": "X", "status": "PASS"}],
        ).model_dump_json()
    )
    schema = ValidateReport.model_json_schema()
    jsonschema.validate(report, schema)
    mutate(report)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(report, schema)


# --------------------------------------------------------------------- quick runs, options


@no_gpu_only
def test_default_cuda_path_fails_without_gpu() -> None:
    result = invoke("--quick")
    assert result.exit_code == 1, result.output
    text = flat(result.stdout)
    assert "GPU training is impossible" in text
    assert "--device cpu" in text
    assert "FAIL" in text


@no_gpu_only
def test_default_cuda_path_json_without_gpu() -> None:
    result = invoke("--quick", "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is False
    assert report["device"] == "cuda"
    assert _verdict(report).startswith("GPU training is impossible on this node: ")
    assert "`torchscale validate --device cpu`" in _verdict(report)
    checks = by_id(report)
    assert checks["cuda"]["status"] == "FAIL"
    assert checks["driver"]["status"] == "FAIL"
    assert report["counts"]["FAIL"] >= 2
    jsonschema.validate(report, ValidateReport.model_json_schema())


def test_quick_skips_smoke_test() -> None:
    result = invoke("--device", "cpu", "--quick", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["quick"] is True
    smoke = [c for c in report["checks"] if c["id"].startswith("smoke")]
    assert len(smoke) == 1
    assert smoke[0]["id"] == "smoke"
    assert smoke[0]["status"] == "SKIP"
    assert smoke[0]["findings"] == [{"code": "smoke.quick", "figures": {}}]
    assert "(--quick: the live smoke test was not run.)" in _verdict(report)


def test_cpu_quick_table_output() -> None:
    result = invoke("--device", "cpu", "--quick")
    assert result.exit_code == 0, result.output
    text = flat(result.stdout)
    assert "torchscale validate (cpu)" in text
    assert "This node is ready for CPU (gloo) distributed training." in text
    assert "PASS" in text
    assert "0 FAIL" in text


def test_quiet_hides_pass_and_skip_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchscale.orchestration.validate import checks_software

    monkeypatch.setattr(
        checks_software,
        "check_nsys",
        lambda ctx: checks_software.warned(
            "nsys",
            "Nsight Systems",
            Finding(code="software.no_nsys"),
            Finding(code="software.fix_nsys"),
        ),
    )
    monkeypatch.setattr(
        "torchscale.orchestration.validate.run_checks.CHECKS",
        (checks_software.check_python, checks_software.check_nsys),
    )
    result = invoke("--device", "cpu", "--quick", "--quiet")
    assert result.exit_code == 0, result.output
    text = flat(result.stdout)
    assert "Nsight Systems" in text
    assert "WARN" in text
    assert "Python" not in text.split("Worth a look")[0]
    assert "Smoke test" not in text


def test_device_gpu_is_rejected() -> None:
    result = invoke("--device", "gpu")
    assert result.exit_code == 2
    text = flat(result.output)
    assert "Invalid value for '--device'" in text
    assert "'gpu'" in text


def test_timeout_below_one_second_is_rejected() -> None:
    result = invoke("--timeout", "0")
    assert result.exit_code == 2
    assert "--timeout" in result.output


def test_validate_help_lists_options() -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    for option in ("--json", "--quick", "--device", "--output-dir", "--timeout"):
        assert option in result.output
