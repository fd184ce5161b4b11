"""torchscale's probe carrier: the `sitecustomize` the host puts first on the job's PYTHONPATH.

It runs in every Python process the user's command starts (launch agents, ranks, DataLoader
workers, resource trackers), so it imports only the standard library: with
TORCHSCALE_OWN_JOB_DIR set it watches for `torch` and, once the user's code has imported it,
activates `torchscale.rank.own_job.probe`. Then it chains to the next `sitecustomize` on
sys.path (Debian's, a site's own), as ddtrace does (shared/reference/own-job.md, section 1).
Whatever fails here is swallowed: the job runs on unmeasured (fail open). This folder holds
this file only, so nothing else shadows the user's modules.
"""

# os.path, not pathlib, and bare excepts: this runs in every process of the job, before
# anything else, and must neither cost an import nor raise
# ruff: noqa: PTH100, PTH118, PTH120, S110

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

_DIR_ENV = "TORCHSCALE_OWN_JOB_DIR"  # torchscale.rank.own_job.ENV_DIR; no import here
_HERE = os.path.dirname(os.path.abspath(__file__))
# the folder that holds the `torchscale` package: carrier -> own_job -> rank -> torchscale
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(_HERE))))


def _fail(exc: BaseException) -> None:
    """Record the failure once, where the probe's writer can; never raise."""
    try:
        _ensure_torchscale()
        from torchscale.rank.own_job.probe import record_failure

        record_failure(exc)
    except Exception:  # the writer itself is missing or broken: nothing left to tell
        pass


def _ensure_torchscale() -> None:
    """Import this carrier's own torchscale (the probe must match the host that reads its
    files): as installed where the path finds it, else from the carrier's package parent,
    put first on sys.path only for this import (the user's job never imports torchscale,
    so nothing of theirs is shadowed, and the path is left as it was)."""
    import importlib.util

    if "torchscale" in sys.modules:
        return
    ours = os.path.join(_PACKAGE_PARENT, "torchscale")
    spec = importlib.util.find_spec("torchscale")
    found = spec.submodule_search_locations if spec is not None else None
    if found and any(os.path.abspath(p) == ours for p in found):
        return
    sys.path.insert(0, _PACKAGE_PARENT)
    try:
        import torchscale.rank.own_job.probe  # noqa: F401  (cached: later imports find it)
    finally:
        sys.path.remove(_PACKAGE_PARENT)


def _activate() -> None:
    try:
        _ensure_torchscale()
        from torchscale.rank.own_job.probe import activate

        activate()
    except Exception as exc:  # fail open: the job must run on
        _fail(exc)


class _TorchLoader:
    """Wraps torch's own loader: runs it, then activates the probe once torch is whole."""

    def __init__(self, loader: object) -> None:
        self._loader = loader

    def create_module(self, spec: object) -> object:
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: object) -> None:
        self._loader.exec_module(module)  # type: ignore[attr-defined]
        _activate()

    def __getattr__(self, name: str) -> object:  # everything else is torch's loader's
        return getattr(self._loader, name)


class _TorchWatch:
    """A meta-path finder that answers only for `torch`, once, by asking the finders after
    it and wrapping the loader they return; it then takes itself off sys.meta_path."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != "torch":
            return None
        try:
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            import importlib.util

            spec = importlib.util.find_spec("torch")
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return spec
            spec.loader = _TorchLoader(spec.loader)  # type: ignore[assignment]
            return spec
        except Exception as exc:  # fail open: torch imports as if we were not here
            _fail(exc)
            return None


def _install() -> None:
    if not os.environ.get(_DIR_ENV):
        return
    try:
        if "torch" in sys.modules:  # imported before us (by a .pth file): activate now
            _activate()
        else:
            sys.meta_path.insert(0, _TorchWatch())
    except Exception as exc:
        _fail(exc)


def _chain() -> None:
    """Import the next `sitecustomize` on sys.path, as if this one were not there; an error
    in it is shown by `site` as it would be without us."""
    ours = sys.modules.get("sitecustomize")
    removed = [i for i, entry in enumerate(sys.path) if _same_dir(entry)]
    saved = list(sys.path)
    sys.path[:] = [entry for i, entry in enumerate(sys.path) if i not in removed]
    del sys.modules["sitecustomize"]
    try:
        import sitecustomize  # noqa: F401  (the next one, if any)
    except ImportError as exc:
        if exc.name != "sitecustomize":
            raise
        if ours is not None:  # none further: keep ours registered, as site left it
            sys.modules["sitecustomize"] = ours
    finally:
        sys.path[:] = saved + [e for e in sys.path if e not in saved]


def _same_dir(entry: str) -> bool:
    try:
        return os.path.abspath(entry or os.curdir) == _HERE
    except Exception:
        return False


if __name__ == "sitecustomize":  # imported by `site`, not read by a tool under its path
    _install()
    _chain()
