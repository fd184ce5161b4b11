"""rank/own_job/loop_facts.py: the framework read off the first step's stack (its modules'
names, the Trainer found through accelerate's wrapper) and a DataLoader iterator's settings."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from torch.utils.data import DataLoader

from torchscale.rank.own_job.loop_facts import PLAIN, framework, loader_settings


def called_from(*modules: str) -> str:
    """framework() as code of `modules` calls it, the first the outermost caller."""
    call: Callable[[], str] = framework
    for module in reversed(modules):
        scope = {"__name__": module, "inner": call}
        exec("def outer():\n    return inner()\n", scope)
        call = scope["outer"]
    return call()


@pytest.mark.parametrize(
    ("modules", "expected"),
    [
        (("transformers.trainer", "accelerate.optimizer"), "hf_trainer"),
        (("lightning.pytorch.loops.optimization.automatic",), "lightning"),
        (("pytorch_lightning.core.optimizer",), "lightning"),
        (("train", "accelerate.optimizer"), "accelerate"),
        (("__main__", "mylib.loop"), PLAIN),
        (("lightning_fabric.wrappers",), PLAIN),  # not Lightning's Trainer loop
    ],
)
def test_the_framework_is_the_one_whose_code_steps(modules: tuple[str, ...], expected: str) -> None:
    assert called_from(*modules) == expected


@pytest.mark.slow  # starts a child process
def test_a_loaders_settings_are_read_from_its_iterator() -> None:
    single = iter(DataLoader(list(range(8)), batch_size=2))
    assert loader_settings(single) == {
        "num_workers": 0,
        "pin_memory": False,
        "persistent_workers": False,
    }
    workers = DataLoader(list(range(8)), batch_size=2, num_workers=1, prefetch_factor=3)
    it = iter(workers)
    try:
        assert loader_settings(it) == {
            "num_workers": 1,
            "pin_memory": False,
            "persistent_workers": False,
            "prefetch_factor": 3,
        }
    finally:
        it._shutdown_workers()  # type: ignore[attr-defined]
    assert loader_settings(object()) == {}  # another loader's iterator: nothing read


def test_a_single_process_loaders_settings_are_read_from_its_iterator() -> None:
    """The same without a worker process: a loader of num_workers=0 (no prefetch factor
    without workers); another loader's iterator reads as nothing."""
    single = iter(DataLoader(list(range(8)), batch_size=2))
    assert loader_settings(single) == {
        "num_workers": 0,
        "pin_memory": False,
        "persistent_workers": False,
    }
    assert loader_settings(object()) == {}
