"""`torchscale.api`, the public name of the library API (docs/python-api.md): the functions and
types of `torchscale.interfaces.api`, under the name notebooks and scripts import. It only
re-exports: Layer 4 (entry points) of docs/architecture.md."""

from __future__ import annotations

from torchscale.interfaces.api import *  # noqa: F403  (its __all__ is the public API)
from torchscale.interfaces.api import __all__ as __all__
