"""Named ranges around the training phases, for whichever profiler is listening.

One API for the worker: `current().range(name)` around a phase, `current().step(n)` around a
profiled step, `current().mark(text)` for a point in time; what it emits depends on the
`Markers` made current with `use(...)`: torch.profiler `record_function` ranges
`torchscale:<phase>`, or NVTX ranges of the same names and one mark `torchscale:rank=<r>` for
Nsight Systems (`torch.cuda.nvtx` on CUDA, default domain; else the `nvtx` package, domain
"torchscale", docs/profiling.md, "Nsight Systems"; else nothing, with a note; readers match by
name, not domain), or, in every plain benchmark window, one shared null context: free.

Names are the contract with the trace readers (torchscale/offline/traces), spelled once in
torchscale/contracts/step_phases.py.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from torchscale.contracts.finding import Finding
from torchscale.contracts.step_phases import RANGE_PREFIX, OwnWorkPhase, phase_range
from torchscale.contracts.wording.profile import note

DATA = phase_range("data")
FORWARD = phase_range("forward")
BACKWARD = phase_range("backward")
OPTIMIZER = phase_range("optimizer")
NVTX_DOMAIN = "torchscale"
# the nvtx package versions that record under Nsight Systems 2022.4 on CPU (platform notes)
NVTX_CPU_MAX_VERSION = (0, 2, 12)

_NULL: contextlib.AbstractContextManager[None] = contextlib.nullcontext()


def rank_mark(rank: int) -> str:
    return f"{RANGE_PREFIX}rank={rank}"


class NvtxBackend(Protocol):
    """The NVTX calls the markers need (push/pop per thread, start/end across threads)."""

    name: str

    def push(self, message: str) -> None: ...
    def pop(self) -> None: ...
    def start(self, message: str) -> Any: ...
    def end(self, handle: Any) -> None: ...
    def mark(self, message: str) -> None: ...


@dataclass
class _Nvtx:
    """An NvtxBackend from a module's functions."""

    name: str
    push: Callable[[str], None]
    pop: Callable[[], None]
    start: Callable[[str], Any]
    end: Callable[[Any], None]
    mark: Callable[[str], None]


def _torch_nvtx(module: Any) -> _Nvtx:
    """torch.cuda.nvtx (CUDA builds of torch): default domain, no domain argument."""
    return _Nvtx(
        "torch.cuda.nvtx",
        module.range_push,
        module.range_pop,
        module.range_start,
        module.range_end,
        module.mark,
    )


def _package_nvtx(module: Any, version: str) -> _Nvtx:
    """The `nvtx` package, domain "torchscale"."""
    return _Nvtx(
        f"nvtx {version}",
        push=lambda message: module.push_range(message=message, domain=NVTX_DOMAIN),
        pop=lambda: module.pop_range(domain=NVTX_DOMAIN),
        start=lambda message: module.start_range(message=message, domain=NVTX_DOMAIN),
        end=module.end_range,
        mark=lambda message: module.mark(message=message, domain=NVTX_DOMAIN),
    )


def _version_tuple(text: str) -> tuple[int, ...]:
    digits = ("".join(ch for ch in piece if ch.isdigit()) for piece in text.split(".")[:3])
    return tuple(int(d) if d else 0 for d in digits)


def nvtx_backend(cuda_build: bool | None = None) -> tuple[NvtxBackend | None, Finding | None]:
    """The NVTX backend to use here and a note for the reader (None when nothing to say).

    `cuda_build`: whether torch is a CUDA build (default: asked of torch)."""
    if cuda_build is None:
        import torch

        cuda_build = torch.version.cuda is not None
    if cuda_build:
        import torch.cuda.nvtx as torch_nvtx

        return _torch_nvtx(torch_nvtx), note("profile.nvtx_torch")
    try:
        module = importlib.import_module("nvtx")
    except ImportError:
        return None, note("profile.nvtx_missing")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("nvtx")
    except PackageNotFoundError:
        found = str(getattr(module, "__version__", "unknown"))
    too_new = _version_tuple(found) >= NVTX_CPU_MAX_VERSION
    return _package_nvtx(module, found), note(
        "profile.nvtx_too_new", version=found
    ) if too_new else None


@dataclass
class _Range:
    """A phase range on every listening profiler (entered in order, left in reverse)."""

    markers: Markers
    name: str
    _record: Any = field(default=None, init=False)

    def __enter__(self) -> None:
        if self.markers.torch_profiler:
            import torch

            self._record = torch.autograd.profiler.record_function(self.name)
            self._record.__enter__()
        if self.markers.nvtx is not None:
            self.markers.nvtx.push(self.name)

    def __exit__(self, *exc: object) -> None:
        if self.markers.nvtx is not None:
            self.markers.nvtx.pop()
        if self._record is not None:
            self._record.__exit__(None, None, None)
            self._record = None


@dataclass(frozen=True)
class Markers:
    """Which profilers the worker's ranges go to. `Markers()` emits nothing."""

    torch_profiler: bool = False
    nvtx: NvtxBackend | None = None

    @property
    def active(self) -> bool:
        return self.torch_profiler or self.nvtx is not None

    def range(self, name: str) -> contextlib.AbstractContextManager[None]:
        """A range named `name` (use the constants above); a shared null context when off."""
        return _Range(self, name) if self.active else _NULL

    def phase(self, phase: OwnWorkPhase) -> contextlib.AbstractContextManager[None]:
        return self.range(phase_range(phase))

    @contextlib.contextmanager
    def step(self, step: int) -> Iterator[None]:
        """An NVTX `ProfilerStep#<step>` range (torch.profiler makes its own; none when off)."""
        if self.nvtx is None:
            yield
            return
        handle = self.nvtx.start(f"ProfilerStep#{step}")  # torch.profiler's own name
        try:
            yield
        finally:
            self.nvtx.end(handle)

    def mark(self, message: str) -> None:
        """An instant NVTX mark (the torch profiler gets none: its trace has distributedInfo)."""
        if self.nvtx is not None:
            self.nvtx.mark(message)


OFF = Markers()
_current: Markers = OFF


def current() -> Markers:
    """The markers the worker's ranges go to now (OFF outside any `use`)."""
    return _current


@contextlib.contextmanager
def use(markers: Markers) -> Iterator[Markers]:
    """Make `markers` current for the block (the profiled steps), then restore."""
    global _current
    previous = _current
    _current = markers
    try:
        yield markers
    finally:
        _current = previous
