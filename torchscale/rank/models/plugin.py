"""Loading user models given as `package.module:factory`.

The contract: the factory is called as `factory(**options)` and returns either a ModelBundle or
a `(model, make_batch, loss_fn)` tuple, or `(model, make_batch, loss_fn, batches)` where
`batches(batch_size, device)` gives the plug-in's own iterable of batches (its DataLoader). Any
breach is reported as a one-line ModelError, so a typo in a config reads as a message rather
than a traceback from deep inside a worker.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import torch

from torchscale.contracts.catalog import is_plugin_model
from torchscale.contracts.errors import ModelError
from torchscale.rank.models.bundle import ModelBundle
from torchscale.rank.models.training_tasks import sampled_bundle


def load_plugin(spec: str, options: Mapping[str, Any] | None = None) -> ModelBundle:
    """Import `spec` ("package.module:factory"), call it with `options`, check what it returns."""
    if not is_plugin_model(spec):
        raise ModelError(f"model plug-in '{spec}' is not of the form 'package.module:factory'")
    module_name, attr = spec.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name + ".").startswith(exc.name + "."):
            raise ModelError(
                f"model plug-in '{spec}': module '{module_name}' not found "
                "(is it installed or on PYTHONPATH?)"
            ) from exc
        raise ModelError(
            f"model plug-in '{spec}': importing '{module_name}' failed: {exc}"
        ) from exc
    except Exception as exc:
        raise ModelError(
            f"model plug-in '{spec}': importing '{module_name}' failed: {type(exc).__name__}: {exc}"
        ) from exc

    factory = getattr(module, attr, None)
    if factory is None:
        raise ModelError(f"model plug-in '{spec}': module '{module_name}' has no '{attr}'")
    if not callable(factory):
        raise ModelError(
            f"model plug-in '{spec}': '{attr}' is a {type(factory).__name__}, not a callable"
        )
    try:
        result = factory(**dict(options or {}))
    except Exception as exc:
        raise ModelError(
            f"model plug-in '{spec}': factory failed: {type(exc).__name__}: {exc}"
        ) from exc
    return _as_bundle(spec, result)


def _as_bundle(spec: str, result: Any) -> ModelBundle:
    """Accept a ModelBundle as is; wrap a checked (model, make_batch, loss_fn[, batches])
    tuple."""
    if isinstance(result, ModelBundle):
        if not isinstance(result.model, torch.nn.Module):
            raise ModelError(
                f"model plug-in '{spec}': ModelBundle.model is a "
                f"{type(result.model).__name__}, not a torch.nn.Module"
            )
        for label, fn in (
            ("ModelBundle.batches", result.batches),
            ("ModelBundle.ddp_comm_hook", result.ddp_comm_hook),
        ):
            if fn is not None:
                _check_callable(spec, label, fn)
        return result
    if not isinstance(result, (tuple, list)) or len(result) not in (3, 4):
        raise ModelError(
            f"model plug-in '{spec}': factory returned {describe(result)}; expected a "
            "ModelBundle or a (model, make_batch, loss_fn[, batches]) tuple"
        )
    model, make_batch, loss_fn, *rest = result
    if not isinstance(model, torch.nn.Module):
        raise ModelError(
            f"model plug-in '{spec}': first item is a {type(model).__name__}, not a torch.nn.Module"
        )
    checked = [("make_batch", make_batch), ("loss_fn", loss_fn)]
    checked += [("batches", fn) for fn in rest]
    for label, fn in checked:
        _check_callable(spec, label, fn)
    task = (make_batch, loss_fn)
    return sampled_bundle(model, task, "other", (), batches=rest[0] if rest else None)


def _check_callable(spec: str, label: str, fn: Any) -> None:
    if not callable(fn):
        raise ModelError(
            f"model plug-in '{spec}': {label} is a {type(fn).__name__}, not a callable"
        )


def describe(value: Any) -> str:
    """What a plug-in gave instead: its type, and its length for a tuple or list."""
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"a {type(value).__name__}"
