"""`load_max_batch`: an experiment's max-batch searches (max_batch/*.json) as one table."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from torchscale.contracts.wording.max_batch import reason_words
from torchscale.offline.results.directory_layout import ResultLayout
from torchscale.offline.results.documents import read_folder, read_max_batch

log = logging.getLogger(__name__)

COLUMNS = (
    "group",
    "model",
    "label",
    "world_size",
    "precision",
    "strategy",
    "device",
    "max_batch",
    "limit",
    "limit_reached",
    "memory_utilisation",
    "peak_bytes",
    "peak_basis",
    "probes",
    "probe_compiled",
    "probe_warmup_min",
    "probe_warmup_steps",
    "status",
    "reason",
)


def load_max_batch(results_dir: str | Path) -> pd.DataFrame:
    """One row per searched group of an experiment's results directory (columns: COLUMNS;
    `probes` is the number of probes, `reason` the search's finding in words). No search yet:
    an empty frame. A file that cannot be used is left out with a one-line reason, in the log
    and in `frame.attrs['skipped']`."""
    results, skipped = read_folder(ResultLayout(Path(results_dir)).max_batch_dir, read_max_batch)
    for path, reason in skipped:
        log.warning("skipping %s: %s", path, reason)
    made = {"probes", "reason"}  # a count, and the finding in today's words
    rows = [
        {
            **r.model_dump(include=set(COLUMNS) - made),
            "probes": len(r.probes),
            "reason": reason_words(r),
        }
        for r in results
    ]
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame.attrs["skipped"] = [(str(path), reason) for path, reason in skipped]
    return frame
