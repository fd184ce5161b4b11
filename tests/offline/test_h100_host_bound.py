"""The host-bound verdict on the first H100 run's own outputs (its converted copy,
tests/fixtures/h100_first_run): its tiny-model cells are host-bound by arithmetic on every
surface, and the compiled GPT-2 cell (MFU 35 %) is not host-bound. Beside them, a CPU cell, which
never gets a host-bound line."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.h100_replay import DEFAULT_SWEEP, WORKLOAD, h100_cell, read_cell
from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.wording import why
from torchscale.contracts.wording.figures import share_text
from torchscale.interfaces.console.cells import cell_lines
from torchscale.interfaces.console.live_table import LiveTable, live_layout
from torchscale.offline.analysis.diagnosis.findings import is_host_bound_verdict
from torchscale.offline.analysis.uncertainty import mfu_estimate
from torchscale.offline.results.frame import cells_table
from torchscale.offline.results.host_bound import with_host_bound

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _read(folder: Path, stem: str) -> CellResult:
    return read_cell(h100_cell(folder, stem))


def _host_findings(result: CellResult) -> list[str]:
    assert result.diagnosis is not None
    return [f.title for f in result.diagnosis.findings if is_host_bound_verdict(f)]


def test_the_tiny_h100_cells_are_host_bound_by_arithmetic_first_on_every_surface() -> None:
    for stem in ("tiny-mlp__b16__w1", "tiny-mlp__b32__w1", "tiny-gpt2__b16__w1"):
        result = _read(DEFAULT_SWEEP, stem)
        assert result.host_bound is not None and result.host_bound.host_bound is True
        assert result.host_bound.method == "arithmetic"
        assert result.diagnosis is not None
        first = result.diagnosis.findings[0]  # once, and first
        assert first.category == "host_bound" and len(_host_findings(result)) == 1
        assert first.title.startswith("host-bound (by arithmetic):")
        assert "waits for Python/launches" in first.title
        # its MFU spelled as the GPU table spells it, with the interval the result carries
        assert (mfu := mfu_estimate(result)) is not None
        assert f"MFU {share_text(mfu)}, " in first.title, first.title
        # these cells were compiled (compile on by default on CUDA then): the fix does not
        # offer torch.compile again
        assert "CUDA graphs (torch.compile mode='reduce-overhead'" in first.recommendation
        assert "this cell was compiled" in first.recommendation
        # arithmetic only bounds the idle share: no cost figure is claimed for it
        assert first.cost_share is not None and not first.cost_share.measurable
        assert first.cost_share.value is None and first.cost_share.high is not None
        # reading it twice adds nothing, whatever words it was stored in
        assert _host_findings(with_host_bound(result)) == _host_findings(result)
        reworded = result.diagnosis.model_copy(
            update={"findings": [first.model_copy(update={"title": "launch-bound"})]}
        )
        again = with_host_bound(result.model_copy(update={"diagnosis": reworded}))
        assert again.diagnosis is not None and len(again.diagnosis.findings) == 1
        # the sweep's lines: the verdict before the diagnosis, its fix behind -v
        lines = [line.text for line in cell_lines(result, verbose=True)]
        at = next(i for i, t in enumerate(lines) if t.startswith("> [ANALYSIS] host-bound"))
        assert at == min(i for i, t in enumerate(lines) if t.startswith("> [ANALYSIS]"))
        assert any("fix:" in t and "bigger batch or model" in t for t in lines)
    # the live table: the row says host before noisy, its first note is the verdict
    results = [_read(DEFAULT_SWEEP, "tiny-gpt2__b16__w1")]
    table = cells_table(results)
    assert table["host_bound"].tolist() == [True]
    assert table["reliability"].tolist() == ["varies"]  # still noisy, said after host-bound
    live = LiveTable(live_layout([r.cell for r in results], 100))
    row, first_note = [line.text for line in live.row(results[0], table)][2:4]
    assert row.split()[-1] == "host"
    assert first_note.strip(" ·").startswith("host-bound (by arithmetic)")


def test_the_compiled_gpt2_cell_is_not_host_bound() -> None:
    result = _read(WORKLOAD / "runs" / "compiled", "gpt2__b8__w1__bf16__ddp__884cfc44")
    assert result.compute is not None and (result.compute.mfu or 0) > 0.3
    assert result.host_bound is not None and result.host_bound.host_bound is None
    assert result.host_bound.method is None  # not measured
    assert _host_findings(result) == []
    assert cells_table([result])["host_bound"].isna().all()
    # its reason states the MFU as the GPU table does, once, however often it is judged
    assert (mfu := mfu_estimate(result)) is not None
    again = with_host_bound(with_host_bound(result)).host_bound
    assert again is not None and again.reason is not None
    said = why(again.reason) or ""
    assert said.count("; MFU ") == 1
    assert f"MFU {share_text(mfu)}, at least 1 %" in said
    # without an MFU, the missing clause is said once too
    no_mfu = result.model_copy(update={"compute": result.compute.model_copy(update={"mfu": None})})
    twice = with_host_bound(with_host_bound(no_mfu)).host_bound
    assert twice is not None and twice.reason is not None
    assert (why(twice.reason) or "").count("no MFU to judge") == 1, twice.reason


def test_a_cpu_cell_never_gets_a_host_bound_line() -> None:
    (path,) = sorted((FIXTURES / "cpu_one_step" / "cells").glob("*.json"))
    result = read_cell(path)
    assert result.cell.device == "cpu"
    assert result.host_bound is None
    findings = result.diagnosis.findings if result.diagnosis is not None else []
    assert not any(f.category == "host_bound" for f in findings)
    assert not any("host-bound" in line.text for line in cell_lines(result, verbose=True))


def test_the_h100_sweeps_report_names_host_bound_without_a_cost_it_did_not_measure(
    tmp_path: Path,
) -> None:
    """The report over the stopped H100 sweep: the host-bound verdict leads what to do, and
    no line gives it a share of the step (arithmetic only bounds the GPU's idle time)."""
    from torchscale.interfaces.api import build_report

    source = tmp_path / "default-sweep"
    shutil.copytree(DEFAULT_SWEEP, source)
    out = tmp_path / "report.md"
    build_report(source, "md", output=out)
    text = out.read_text(encoding="utf-8")
    assert "host-bound (by arithmetic)" in text
    assert "% of the step: host-bound" not in text
    assert "of cycle/step time)" not in text.split("host-bound (by arithmetic)")[1].split("\n")[0]
