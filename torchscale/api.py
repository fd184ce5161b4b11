"""`torchscale.api`, the public name of the library API (docs/python-api.md): the functions and
types of `torchscale.interfaces.api`, under the name notebooks and scripts import.

An entry point, not a unit of its own: it lives at the top level because the public import
names it, and it only re-exports (its code is in interfaces/api/).

Layer 4 (entry points) of docs/architecture.md: imports the interfaces; nothing imports it.
"""

from __future__ import annotations

from torchscale.interfaces.api import *  # noqa: F403  (its __all__ is the public API)
from torchscale.interfaces.api import __all__ as __all__
