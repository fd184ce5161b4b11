"""Marks a run carries of what it is for, shared by the code that plans it and the reader that
says what its figures can be used for (offline/analysis/run_purpose.py)."""

from __future__ import annotations

# the description `validate --level workload` gives every config it writes: its cells prove a
# code path runs, and the reader knows them by it (compared whole, never parsed)
PATH_CHECK_DESCRIPTION = "validate --level workload: a proof that the path works, not a figure"
# and the mark each of its cells' results carries (a warning: codes and figures, no schema of
# its own), so a run kept without its config.yaml is known by its own records
PATH_CHECK_MARK = "warning.path_check"
