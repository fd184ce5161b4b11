"""A hand-made `Report` with every block type, section and value format, and hostile strings in
every user-provided field, for the renderer tests (HTML, PDF, Markdown, terminal, JSON). The
report builders are tested on real fixture results elsewhere; this keeps renderer tests
independent of them."""

from __future__ import annotations

from torchscale.interfaces.report.model import (
    Chart,
    Column,
    Findings,
    Heatmap,
    KeyFigure,
    KeyFigures,
    Report,
    ReportFinding,
    Section,
    Series,
    Skipped,
    Source,
    Table,
    Text,
    Unavailable,
)

HOSTILE = "<script>alert(1)</script>"
HOSTILE_IMG = '"><img src=x onerror=alert(2)>'


def sample_report(cells: int = 4) -> Report:
    """A report over `cells` scaling rows (grows the tables and charts for scale tests)."""
    gpus = [1, 2, 4, 8][: max(1, min(cells, 4))]
    thr = [100.0 * g * (1.0 - 0.04 * i) for i, g in enumerate(gpus)]
    scaling_rows = [
        {
            "model": f"{HOSTILE} gpt2-{i % 3}",
            "gpus": gpus[i % len(gpus)],
            "batch_per_gpu": 16,
            "throughput": thr[i % len(thr)] * (1 + i // len(gpus)),
            "speedup": thr[i % len(thr)] / thr[0],
            "efficiency": thr[i % len(thr)] / (thr[0] * gpus[i % len(gpus)]),
            "step_p50_s": 0.0123 + 0.001 * i,
            "peak_bytes": 1_234_567_890 + i,
            "change": -0.052 if i % 2 else 0.013,
            "_severity": "bad" if i == 1 else "info",
        }
        for i in range(cells)
    ]
    return Report(
        torchscale_version="0.4.0",
        title=f"Scaling report {HOSTILE}",
        generated_at="2026-11-22T12:00:00Z",
        sources=[
            Source(
                name=HOSTILE,
                path=f"/results/{HOSTILE_IMG}",
                cells=cells + 1,
                ok=cells,
                failed=1,
                skipped=0,
                profiles=1,
                schema_versions=[3],
            )
        ],
        sections=[
            Section(
                id="summary",
                title="Executive summary",
                blocks=[
                    KeyFigures(
                        figures=[
                            KeyFigure(
                                label="Highest throughput",
                                value=thr[-1],
                                format="rate",
                                note=f"{HOSTILE} at {gpus[-1]} GPUs",
                                severity="good",
                            ),
                            KeyFigure(
                                label="Scaling efficiency at 8 GPUs",
                                value=0.88,
                                format="ratio_pct",
                            ),
                            KeyFigure(
                                label="Cost per million samples",
                                value=None,
                                format="money",
                                note="no --cost-per-gpu-hour given",
                            ),
                        ]
                    ),
                    Text(text=f"Top finding: {HOSTILE} waits 15 % of the cycle."),
                ],
            ),
            Section(
                id="scaling",
                title="Scaling",
                blocks=[
                    Table(
                        id="scaling-table",
                        title=f"Strong scaling {HOSTILE}",
                        columns=[
                            Column(key="model", label="Model", align="left"),
                            Column(key="gpus", label="GPUs", format="int"),
                            Column(key="batch_per_gpu", label="Batch/GPU", format="int"),
                            Column(key="throughput", label="Samples/s", format="rate"),
                            Column(key="speedup", label="Speed-up", format="float"),
                            Column(key="efficiency", label="Efficiency", format="ratio_pct"),
                            Column(key="step_p50_s", label="Step p50", format="seconds"),
                            Column(key="peak_bytes", label="Peak memory", format="bytes"),
                            Column(key="change", label="vs baseline", format="change_pct"),
                        ],
                        rows=scaling_rows,
                        note="efficiency = throughput(N) / (N x throughput(1))",
                    ),
                    Chart(
                        id="throughput-vs-gpus",
                        title=f"Throughput vs GPUs {HOSTILE}",
                        kind="line",
                        x_label="GPUs",
                        y_label="samples/s",
                        x_format="int",
                        y_format="rate",
                        x_log2=True,
                        series=[
                            Series(
                                name=f"{HOSTILE} b16",
                                x=list(gpus),
                                y=list(thr),
                                low=[t * 0.97 for t in thr],
                                high=[t * 1.03 for t in thr],
                            ),
                            Series(
                                name="ideal",
                                x=list(gpus),
                                y=[thr[0] * g for g in gpus],
                                style="dashed",
                            ),
                        ],
                    ),
                    Chart(
                        id="efficiency",
                        title="Scaling efficiency",
                        kind="bar",
                        x_label="GPUs",
                        y_label="efficiency",
                        y_format="ratio_pct",
                        series=[
                            Series(
                                name="gpt2",
                                x=[str(g) for g in gpus],
                                y=[t / (thr[0] * g) for t, g in zip(thr, gpus, strict=True)],
                            )
                        ],
                    ),
                ],
            ),
            Section(
                id="latency",
                title="Throughput and latency",
                blocks=[
                    Chart(
                        id="step-distribution",
                        title="Step time distribution per world size",
                        kind="box",
                        x_label="GPUs",
                        y_label="step time",
                        y_format="seconds",
                        series=[
                            Series(
                                name="gpt2 b16",
                                x=[str(g) for g in gpus],
                                values=[
                                    [0.010 + 0.001 * j + 0.002 * i for j in range(20)]
                                    for i in range(len(gpus))
                                ],
                            )
                        ],
                    ),
                    Chart(
                        id="phases-per-rank",
                        title="Phase times per rank",
                        kind="stacked_bar",
                        x_label="rank",
                        y_label="time per step",
                        y_format="seconds",
                        series=[
                            Series(name="forward", x=["0", "1"], y=[0.004, 0.004]),
                            Series(name="backward", x=["0", "1"], y=[0.008, 0.058]),
                            Series(name="optimizer", x=["0", "1"], y=[0.001, 0.001]),
                        ],
                    ),
                ],
            ),
            Section(
                id="efficiency",
                title="Efficiency",
                blocks=[
                    Unavailable(
                        items={
                            "MFU": "CPU device: no peak FLOP/s is known for it",
                            HOSTILE: HOSTILE_IMG,
                        }
                    )
                ],
            ),
            Section(
                id="bottlenecks",
                title="Bottlenecks",
                blocks=[
                    Findings(
                        findings=[
                            ReportFinding(
                                title=f"all_reduce: rank 1 finishes backward late {HOSTILE}",
                                cost_pct=15.0,
                                source=HOSTILE_IMG,
                                evidence=["rank 1 last at 98 % of collectives", HOSTILE],
                                recommendation="balance the input pipeline of rank 1",
                                severity="bad",
                            ),
                            ReportFinding(
                                title="GPU idle waiting for the host",
                                cost_pct=4.2,
                                source="profile",
                                evidence=[],
                                recommendation=None,
                            ),
                        ]
                    ),
                    Chart(
                        id="stall-heatmap",
                        title="Sync stall per rank and step",
                        kind="heatmap",
                        x_label="step",
                        y_label="rank",
                        heatmap=Heatmap(
                            x_labels=[str(s) for s in range(5)],
                            y_labels=["0", "1"],
                            z=[[10.0, 12.0, 11.0, None, 9.0], [0.5, 0.4, 0.6, 0.5, 0.3]],
                            z_label="stall % of step",
                        ),
                    ),
                ],
            ),
            Section(
                id="failures",
                title="Failures",
                blocks=[
                    Table(
                        id="failures-table",
                        title="Cells that did not succeed",
                        columns=[
                            Column(key="cell", label="Cell", align="left"),
                            Column(key="status", label="Status", align="left"),
                            Column(key="reason", label="Root cause", align="left"),
                        ],
                        rows=[
                            {
                                "cell": "x" * 150,
                                "status": "failed",
                                "reason": f"ModuleNotFoundError {HOSTILE} " + "y" * 300,
                                "_severity": "bad",
                            }
                        ],
                    )
                ],
            ),
            Section(
                id="appendix",
                title="Appendix",
                blocks=[
                    Text(text="Resolved config:"),
                    Text(
                        text=f"experiment_name: {HOSTILE}\nmodels:\n- name: tiny-mlp\n"
                        "  options: {}\n# ```\n1. not a list",
                        preformatted=True,
                    ),
                ],
            ),
        ],
        regressions=1,
        skipped=[Skipped(path=f"/results/{HOSTILE}.json", reason="not valid JSON")],
    )


def with_findings(report: Report, count: int) -> Report:
    """`report` with its findings list replaced by `count` findings of falling cost (a large
    sweep's list: one per cell)."""
    copy = report.model_copy(deep=True)
    block = next(b for b in copy.section("bottlenecks").blocks if isinstance(b, Findings))  # type: ignore[union-attr]
    block.findings = [
        ReportFinding(title=f"finding {i}", cost_pct=100.0 - i * 0.1, source=f"cell-{i}")
        for i in range(count)
    ]
    return copy


def paired_chart() -> Chart:
    """A scaling chart of two series, each with its ideal line attached (`reference_for`)."""
    series = []
    for name, base in (("b8", 1.0), ("b16", 2.0)):
        series.append(Series(name=name, x=[1, 2, 4], y=[base, base * 1.9, base * 3.6]))
        series.append(
            Series(
                name=f"ideal ({name})",
                x=[1, 2, 4],
                y=[base, base * 2, base * 4],
                style="dashed",
                reference_for=name,
            )
        )
    return Chart(
        id="paired",
        title="paired",
        kind="line",
        x_label="GPUs",
        y_label="samples/s",
        x_log2=True,
        series=series,
    )
