"""A model built so that any part of it can be built alone, with the values the whole has.

A pipeline rank keeps a few stages of the model; building the whole model to keep them costs
every rank the whole model's memory (docs/strategies.md, "What the checks found"). Built under
`SeededInit`, every random op of the construction draws from a generator of its own, seeded by
the run's seed, the tensor it initialises and how many draws that tensor had before, so a
tensor's values do not depend on which other tensors were built for real: the same construction
run with the other ranks' tensors on the meta device gives this rank's tensors exactly the
values of the unsplit model built the same way (every strategy builds its model this way, so pp
and ddp start from the same weights).

A tensor is known by its creation ordinal: the place of the factory op that made it (an op with
a `device` argument and no tensor input) in the construction. A random op on a tensor no factory
op made (a temporary, such as trunc_normal_'s redraws of rejected values) draws for the tensor
the last random op initialised. A sizing build on the meta device records each parameter's and
buffer's ordinal; a later build places each factory op's output by it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

META = torch.device("meta")
_MIX = 0x9E3779B97F4A7C15  # 2^64 / golden ratio: spreads the keys over the seed space


def draw_seed(seed: int, ordinal: int, draw: int) -> int:
    """The generator seed of draw `draw` for the tensor of creation ordinal `ordinal`."""
    return ((seed * _MIX + ordinal) * _MIX + draw) % (2**63 - 1)


@functools.cache
def _kind(func: Any) -> tuple[bool, bool]:
    """(factory, random) of an op: a factory creates a tensor from nothing (it takes a device
    and no tensor); a random op takes a generator."""
    names = {a.name for a in func._schema.arguments}
    takes_tensor = any("Tensor" in str(a.type) for a in func._schema.arguments)
    return "device" in names and not takes_tensor, "generator" in names


class SeededInit(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Seeds every random op of a construction by the tensor it initialises; sends the outputs
    of the factory ops whose ordinals are outside `keep` to the meta device (`keep` None:
    everything where the construction puts it)."""

    def __init__(self, seed: int, *, keep: set[int] | None = None) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.seed = seed
        self.keep = keep
        self.factories = 0
        self.ordinals: dict[int, int] = {}  # storage id -> creation ordinal
        self.alive: list[torch.Tensor] = []  # no storage id is reused while building
        self.draws: dict[int, int] = {}  # ordinal -> random ops drawn for it so far
        self.current = -1  # the ordinal the last random op drew for

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        kwargs = dict(kwargs or {})
        factory, random = _kind(func)
        ordinal = self.factories
        if factory:
            self.factories += 1
            if self.keep is not None and ordinal not in self.keep:
                kwargs["device"] = META
        if random:
            target: int | None = ordinal
            if not factory:
                first = args[0] if args else None
                if isinstance(first, torch.Tensor):
                    target = self.ordinals.get(storage_id(first))
                else:
                    target = None
            self.current = self.current if target is None else target
            draw = self.draws.get(self.current, 0)
            self.draws[self.current] = draw + 1
            # a CPU generator, as the unsplit model is built on the CPU; a meta op ignores it
            seed = draw_seed(self.seed, self.current, draw)
            kwargs["generator"] = torch.Generator().manual_seed(seed)
        out = func(*args, **kwargs)
        if factory and isinstance(out, torch.Tensor):
            self.ordinals[storage_id(out)] = ordinal
            self.alive.append(out)
        return out


def storage_id(t: torch.Tensor) -> int:
    """What identifies `t`'s storage (a Parameter shares its data's), meta and fake included."""
    return int(t.untyped_storage()._cdata)


def tensors_of(modules: Iterable[nn.Module]) -> list[torch.Tensor]:
    """Every parameter and buffer of `modules`, shared ones once."""
    found: dict[int, torch.Tensor] = {}
    for module in modules:
        for t in [*module.parameters(), *module.buffers()]:
            found.setdefault(id(t), t)
    return list(found.values())


@dataclass
class SeededBuild:
    """How to build one model with seeded construction: `make` builds it on the current
    default device (the registry's builder and whatever the worker sets on the built model)."""

    make: Callable[[], nn.Module]
    seed: int

    def whole(self) -> nn.Module:
        """The whole model, on the default device."""
        with SeededInit(self.seed):
            return self.make()

    def sizing(self) -> tuple[nn.Module, dict[int, int]]:
        """The model on the meta device, and each parameter's and buffer's creation ordinal
        (by storage id)."""
        mode = SeededInit(self.seed)
        with torch.device(META), mode:
            model = self.make()
        held = {storage_id(t) for t in tensors_of([model])}
        return model, {s: o for s, o in mode.ordinals.items() if s in held}

    def part(self, keep: set[int]) -> nn.Module:
        """The model with only the tensors of ordinals `keep` built for real (on the default
        device); every other factory output is on the meta device."""
        with SeededInit(self.seed, keep=keep):
            return self.make()


def ordinals_of(tensors: Iterable[torch.Tensor], ordinals: dict[int, int]) -> set[int]:
    """The creation ordinals of `tensors` of a sizing build. A tensor no factory op made (a
    constant such as BatchNorm's `torch.tensor(0)` step count, which no dispatch mode sees
    made) has none, and needs none: `part` builds it on the default device anyway."""
    found = (ordinals.get(storage_id(t)) for t in tensors)
    return {o for o in found if o is not None}
