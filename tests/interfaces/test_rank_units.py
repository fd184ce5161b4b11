"""The report's own texts are written in its units from the start (no render path edits
words): on CPU ranks they say 'per rank' and 'CPU ranks', on GPUs 'per GPU' and 'GPUs', never a
GPU sentence rewritten afterwards."""

from __future__ import annotations

from torchscale.interfaces.report.parts.context import RankUnits
from torchscale.interfaces.report.sections.scaling import no_strong, strong_text, weak_text

CPU = RankUnits("CPU ranks", "Batch/rank", "per rank")
GPU = RankUnits("GPUs", "Batch/GPU", "per GPU")
MIXED = RankUnits("Ranks", "Batch/rank", "per rank")


def test_each_report_names_its_ranks_in_its_own_words() -> None:
    assert (CPU.one, CPU.many) == ("rank", "CPU ranks")
    assert (GPU.one, GPU.many) == ("GPU", "GPUs")
    assert (MIXED.one, MIXED.many) == ("rank", "ranks")


def test_the_scaling_texts_say_ranks_on_cpu_and_gpus_on_gpus() -> None:
    for said in (weak_text(CPU), strong_text(CPU), no_strong(CPU)):
        assert "GPU" not in said.replace("gpu_counts", ""), said
    assert "fixed batch per rank" in weak_text(CPU) and "linear in CPU ranks" in weak_text(CPU)
    assert "fixed batch per GPU" in weak_text(GPU) and "linear in GPUs" in weak_text(GPU)
    assert "split over more GPUs (batch per GPU" in strong_text(GPU)
