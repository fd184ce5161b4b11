"""A run's one diagnosis (`Diagnosis`, offline/analysis/diagnosis/) as report blocks: the sections
compute nothing of their own about the step, stragglers or waits, they lay out diagnosis_text.py's
sentences (one copy for every surface, same digits); cross-checks go to the appendix, never beside
the verdict, which says in one line where one disagrees (`disagreement_text`)."""

from __future__ import annotations

from typing import Any

from torchscale.contracts.schema.cell_result import CellResult
from torchscale.contracts.schema.diagnosis import Diagnosis
from torchscale.contracts.wording import diagnosis_checks
from torchscale.contracts.wording import diagnosis_straggler as verdict_words
from torchscale.contracts.wording.figures import share_text
from torchscale.interfaces.report.diagnosis_text import (
    VERDICT_WORDS,
    acted,
    caveat_text,
    check_figure,
    compute_word,
    disagreement_text,
    headline,
    split_text,
    straggler_text,
    sync_stall_text,
    whatif_text,
)
from torchscale.interfaces.report.model import Block, Table, Text
from torchscale.interfaces.report.parts.context import Context, col, records


def diagnosis_blocks(diagnosis: Diagnosis, result: CellResult | None = None) -> list[Block]:
    """The diagnosis' headline (`diagnosis_text.headline`) as blocks, as the terminal prints
    it: a warning where it names a straggler or a busy machine, the caveat and the
    disagreement in a report's words; its compute part named by `result`'s host-bound
    record."""
    blocks: list[Block] = []
    for sentence in headline(diagnosis, compute_word(result)):
        text = sentence.text
        if sentence.kind == "caveat":
            text = caveat_text(text)
        elif sentence.kind == "disagreement":
            text = disagreement_text(diagnosis) or text
        blocks.append(Text(text=text, severity="warn" if sentence.level == "warn" else "info"))
    return blocks


def rank_wait_texts(diagnosis: Diagnosis | None) -> dict[int, str]:
    """Each rank's wait for peers, share of its own step with its interval, as the diagnosis
    holds it (empty when it holds none: one rank, or waits not separable)."""
    if diagnosis is None:
        return {}
    alone = diagnosis.ranks < 2  # no peers: 'none', as its Sync stall says, never '0.0 %'
    return {
        w.rank: "none (one rank)" if alone else share_text(w.share) for w in diagnosis.rank_waits
    }


def cross_check_rows(run: str, diagnosis: Diagnosis) -> list[dict[str, Any]]:
    """The diagnosis' cross-checks as appendix rows: what each says, and whether it agrees."""
    return [
        {
            "run": run,
            "source": diagnosis.source,
            "check": diagnosis_checks.check_label(check.check),
            "figure": check_figure(check),
            "verdict": VERDICT_WORDS[check.agrees],
            "detail": diagnosis_checks.detail(check.detail),
            "_severity": "warn" if check.agrees is False else "info",
        }
        for check in diagnosis.cross_checks
    ]


def _alike_once(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs whose diagnoses read the same, word for word, as one row naming the first and
    counting the rest ('scale-model-1 b8 x2 bf16 ddp and 29 more alike'): a 500-cell sweep's
    short PDF spent pages on identical rows."""
    folded: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        folded.setdefault(tuple(v for k, v in row.items() if k != "run"), []).append(row)
    out = []
    for alike in folded.values():
        first = alike[0]
        more = f" and {len(alike) - 1} more alike" if len(alike) > 1 else ""
        out.append({**first, "run": f"{first['run']}{more}"})
    return out


def diagnoses_table(ctx: Context) -> Block | None:
    """The summary's row per run with a diagnosis (multi-rank sweep cells, profiled runs) in the
    terminal's words, named stragglers first, then by sync stall: the first screen of every
    format (Markdown and term show no Bottlenecks section) gives each run's verdict."""
    rows: list[dict[str, Any]] = []

    def add(run: str, diagnosis: Diagnosis, result: CellResult | None) -> None:
        verdict = diagnosis.straggler
        stall = diagnosis.part("wait_for_peers")
        named = acted(verdict)
        rows.append(
            {
                "run": run,
                "stall": sync_stall_text(diagnosis).removeprefix("Sync stall time: "),
                "split": split_text(diagnosis, compute_word(result)),
                "straggler": straggler_text(verdict, diagnosis.ranks),
                "whatif": whatif_text(diagnosis),
                "caveat": verdict_words.caveat(diagnosis),
                "checks": disagreement_text(diagnosis),
                "_named": named,
                "_stall": (stall.share.value or 0.0) if stall is not None else 0.0,
                "_severity": "warn" if named or verdict_words.caveat(diagnosis) else "info",
            }
        )

    for row in records(ctx.ok):
        diagnosis = ctx.result(row).diagnosis
        if diagnosis is not None and diagnosis.ranks > 1:
            add(ctx.label(row), diagnosis, ctx.result(row))
    for ref in ctx.profiles:
        diagnosis = ref.diagnosis
        if diagnosis is not None:
            add(ref.label, diagnosis, ref.entry.result)
    if not rows:
        return None
    rows.sort(key=lambda r: (not r.pop("_named"), -r.pop("_stall")))
    rows = _alike_once(rows)
    columns = [
        col("run", "Run"),
        col("stall", "Sync stall"),
        col("split", "Step split"),
        col("straggler", "Straggler"),
        col("whatif", "What-if"),
        col("caveat", "Caveat"),
        col("checks", "Cross-checks"),
    ]
    # a what-if exists only beside a named straggler, a caveat only on a busy machine, a
    # cross-check's line only where one disputes the verdict (every format shows this table)
    optional = ("whatif", "caveat", "checks")
    shown = [c for c in columns if c.key not in optional or any(r.get(c.key) for r in rows)]
    return Table(
        id="summary-diagnoses",
        title="Each run's diagnosis",
        columns=shown,
        rows=rows,
        note="the run's one diagnosis (docs/methodology.md, 'One diagnosis'): sync stall = "
        "the mean over ranks of the wait for peers with nothing else to do, share of the step "
        "with its 95 % interval [low, high]; named stragglers first",
    )
