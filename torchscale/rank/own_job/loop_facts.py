"""How a user's job is written, as far as the advice needs it: which framework drives its
training loop and how its DataLoader is set, so a next step names the job's own settings
(TrainingArguments' `dataloader_num_workers`, Lightning's `DDPStrategy(bucket_cap_mb=...)`)
rather than torchscale's config keys. Read once per rank, never from the job's own objects'
state beyond plain attributes: nothing the job computes changes.
"""

from __future__ import annotations

import sys
from typing import Any

# module prefixes on the stack of the first optimizer step (or step marker) -> framework, in
# the order they are looked for: the HF Trainer steps its optimizer through accelerate's
# wrapper, so transformers is looked for over the whole stack before accelerate is
FRAMEWORKS = (
    ("transformers.", "hf_trainer"),
    ("lightning.pytorch.", "lightning"),
    ("pytorch_lightning.", "lightning"),
    ("accelerate.", "accelerate"),
)
PLAIN = "pytorch"  # a loop of the user's own: no framework on the stack


def framework() -> str:
    """The framework whose code is on the calling stack (see FRAMEWORKS), else PLAIN."""
    modules: list[str] = []
    frame: Any = sys._getframe(1)
    while frame is not None:
        modules.append(str(frame.f_globals.get("__name__", "")))
        frame = frame.f_back
    for prefix, name in FRAMEWORKS:
        if any(module.startswith(prefix) for module in modules):
            return name
    return PLAIN


def loader_settings(iterator: Any) -> dict[str, Any]:
    """A DataLoader iterator's settings (torch's `_BaseDataLoaderIter`): workers, pinned
    memory, persistent workers and, with workers, the prefetch factor."""
    settings = {
        "num_workers": getattr(iterator, "_num_workers", None),
        "pin_memory": getattr(iterator, "_pin_memory", None),
        "persistent_workers": getattr(iterator, "_persistent_workers", None),
        "prefetch_factor": getattr(iterator, "_prefetch_factor", None),
    }
    return {k: v for k, v in settings.items() if isinstance(v, (bool, int))}
