"""Words for a max-batch search's findings (contracts/schema/max_batch.py): why it has no
answer or only a bound (`finding`), what it warns about (`warnings`) and why a figure is null
(`unavailable`). Figures: batch, limit, oom_batch, where ('a probe' | 'the sweep'), retries,
answer (whether the search found one), least and compiled (the warm-up each probe was set to
run), error (NVML's, as it named it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from torchscale.contracts.schema.max_batch import warmup_words
from torchscale.contracts.wording import Phrases, say

if TYPE_CHECKING:
    from torchscale.contracts.schema.max_batch import MaxBatchResult

NO_ANSWER = "no max batch was found (see reason)"


def _warmup(figures: Mapping[str, Any]) -> str:
    why = "the answer's probe recorded no warm-up" if figures["answer"] else NO_ANSWER
    each = warmup_words(None, figures["least"], figures["compiled"])
    return f"{why}; each probe ran {each}"


PHRASES: Phrases = {
    "max_batch.probe_failed": "the probe at batch {batch} failed",
    "max_batch.none_fits": "batch 1 runs out of memory: no batch fits",
    "max_batch.at_least": "at least {limit}: max_batch_limit fitted without running out of memory",
    "max_batch.not_monotonic": (
        "batch {batch} fitted ({where}) but batch {oom_batch} ran out of memory: memory use is "
        "not monotonic in the batch or not reproducible (cuDNN algorithm choice, allocator "
        "fragmentation, other processes on the device); treat max_batch as approximate"
    ),
    "max_batch.alloc_retries": (
        "at batch {batch} the CUDA allocator retried {retries} time(s) (freed its cache and "
        "called cudaMalloc again): it fits, but at a synchronisation per retry; a slightly "
        "smaller batch may train faster"
    ),
    "max_batch.no_answer": NO_ANSWER,
    "max_batch.warmup_not_recorded": _warmup,
    "max_batch.cpu_no_device_limit": (
        "CPU ranks have no device memory limit; an OOM there is the host's, reported as peak RSS"
    ),
    "max_batch.cpu_no_allocator": "no CUDA caching allocator on CPU (see peak_rss_bytes)",
    "max_batch.total.mig": "MIG slices: their memory total is not read here",
    "max_batch.total.nvml_unavailable": "NVML unavailable ({error}): device memory total unknown",
    "max_batch.total.nvml_failed": "NVML could not read device memory ({error})",
    "max_batch.total.no_gpu": "NVML sees no GPU",
    "max_batch.total.unknown": "device memory total unknown",
}


def reason_words(result: MaxBatchResult) -> str | None:
    """Why the search has no answer (a failed probe's own reason after it, as it gave it) or
    only a bound; None for a plain answer."""

    finding = result.finding
    if finding is None:
        return None
    words = say(finding)
    if finding.code != "max_batch.probe_failed":
        return words
    failed = [
        p for p in result.probes if p.outcome == "failed" and p.batch == finding.figures["batch"]
    ]
    given = failed[-1].reason if failed else None
    return f"{words}: {say(given) if given else 'no reason'}"
