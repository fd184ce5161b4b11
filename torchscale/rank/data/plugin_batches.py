"""A plug-in's own batches (`ModelBundle.batches`, docs/models.md): its iterable in, device
batches out, one per micro-batch.

The trainer draws from it inside the step's data phase, as it does from the built-in pipeline
(torchscale/rank/data/input_pipeline.py), so the phase timers and the profiler's
`torchscale:data` range measure what the step waits for the plug-in's DataLoader: the usual cause
of a data straggler, which a batch made once and reused can never show.

The stream never ends: when the iterable is exhausted a new epoch starts (`iter()` again; the
factory is called again for a one-shot iterator such as a generator), so a sweep of any length
runs on a finite dataset.
"""

from __future__ import annotations

import atexit
import contextlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from torchscale.contracts.errors import DataError
from torchscale.contracts.finding import Finding
from torchscale.rank.models.bundle import Batches
from torchscale.rank.models.plugin import describe

SOURCE = "plug-in batches"
# what the result's `data.notes` says of a cell that drew them (the schema's `data.source` only
# names torchscale's own sources: such a cell stays `synthetic` there)
DRAWN = Finding(code="data.plugin_drawn")
NOT_READ = Finding(code="data.plugin_not_read")
# why a cell kept make_batch's batch although the plug-in gives batches
NOT_MODEL_PARALLEL = Finding(code="data.plugin_not_model_parallel")


def to_device(value: Any, device: torch.device) -> Any:
    """Tensors (nested in tuples, lists and mappings) to `device`, without waiting for the copy.

    Lists become tuples (also in the built-in pipeline): a DataLoader's default collate turns the
    tuples a dataset returns into lists, and the model is called with a tuple unpacked
    (torchscale/rank/models/bundle.py's call_model), as with make_batch's batch."""
    if isinstance(value, torch.Tensor):
        return value if value.device == device else value.to(device, non_blocking=True)
    if isinstance(value, (list, tuple)):
        return tuple(to_device(v, device) for v in value)
    if isinstance(value, Mapping):
        return {k: to_device(v, device) for k, v in value.items()}
    return value


@dataclass
class PluginBatches:
    """An endless stream of the plug-in's batches on `device`; `info` goes into the result."""

    factory: Batches
    batch_size: int
    device: torch.device
    info: dict[str, Any] = field(
        default_factory=lambda: {"source": SOURCE, "notes": [DRAWN], "not_read": NOT_READ}
    )
    epoch: int = 0
    _iterable: Iterable[tuple[Any, Any]] = field(init=False)
    _iterator: Iterator[tuple[Any, Any]] | None = field(default=None, init=False)
    _started: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        # made now, at set-up, under the rank's data seed (a shuffle drawn from torch's
        # generator follows it) and so that a broken factory fails the set-up, not a step
        self._iterable = self._make()

    def next_batch(self) -> tuple[Any, Any]:
        """The next (inputs, targets) on the device; a new epoch starts when one ends."""
        if self._iterator is None:
            self._iterator = self._start()
        try:
            batch = next(self._iterator)
        except StopIteration:
            self.epoch += 1
            self._iterator = self._start()
            try:
                batch = next(self._iterator)
            except StopIteration:
                # an empty epoch would loop forever: say so instead
                raise DataError(
                    f"the plug-in's batches({self.batch_size}, {self.device}) gave no batch "
                    f"in epoch {self.epoch}"
                ) from None
        if not isinstance(batch, (tuple, list)) or len(batch) != 2:
            raise DataError(
                f"the plug-in's batches gave {describe(batch)}; expected (inputs, targets)"
            )
        inputs, targets = batch
        return to_device(inputs, self.device), to_device(targets, self.device)

    def _start(self) -> Iterator[tuple[Any, Any]]:
        """An iterator over a new epoch: a fresh `iter()` of the iterable, or of a new one from
        the factory where the iterable is a one-shot iterator (a generator cannot restart)."""
        if self._started and isinstance(self._iterable, Iterator):
            self._iterable = self._make()
        self._started = True
        # a DistributedSampler shuffles the same order every epoch unless told the epoch
        sampler = getattr(self._iterable, "sampler", None)
        set_epoch = getattr(sampler, "set_epoch", None)
        if callable(set_epoch):
            set_epoch(self.epoch)
        return iter(self._iterable)

    def _make(self) -> Iterable[tuple[Any, Any]]:
        """Call the plug-in's factory; its failure or a non-iterable is one line."""
        call = f"the plug-in's batches({self.batch_size}, {self.device})"
        try:
            iterable = self.factory(self.batch_size, self.device)
        except Exception as exc:
            raise DataError(f"{call} failed: {type(exc).__name__}: {exc}") from exc
        if not isinstance(iterable, Iterable):
            raise DataError(f"{call} returned {describe(iterable)}, not an iterable")
        return iterable

    def close(self) -> None:
        """Stop a DataLoader's worker processes, or a generator, now (idempotent)."""
        iterator, self._iterator = self._iterator, None
        stop = getattr(iterator, "_shutdown_workers", None) or getattr(iterator, "close", None)
        if stop is not None:
            with contextlib.suppress(Exception):
                stop()


def plugin_batches(factory: Batches, batch_size: int, device: torch.device) -> PluginBatches:
    """The stream of a plug-in's `batches` for this rank; closed at exit at the latest, so its
    loader workers never outlive the rank."""
    stream = PluginBatches(factory, batch_size, device)
    atexit.register(stream.close)
    return stream
