"""The one upgrade a stored kind ships when its schema version changes: a function from the
version before to the current one, over figures and codes only (never words: they are made when
shown), in a module of its own beside this one, listed here by the kind it reads
(docs/architecture.md, "A new schema version"). Older versions are brought up once, outside the
package (tools/convert_results.py); none is listed today: every kind reads the version the
converter writes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Upgrade = Callable[[dict[str, Any]], dict[str, Any]]

UPGRADES: dict[str, Upgrade] = {}
