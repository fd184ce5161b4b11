"""Run `torchscale ARGS` in a fresh interpreter and say what it imported: the guard of the
commands that must start fast (no torch, pandas or Typer where they are not needed). One probe
for every test that checks imports, so they cannot drift apart."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

_PROBE = """\
import sys
{prelude}
sys.argv = {argv!r}
from torchscale.interfaces.cli.app import main
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print()
print("EXIT", code)
print("LOADED", ",".join(m for m in {watch!r} if m in sys.modules) or "-")
print("COMMANDS", ",".join(sorted(m for m in sys.modules if m.endswith("_cmd"))) or "-")
"""


def probe(
    args: Sequence[str],
    watch: Sequence[str],
    *,
    cwd: Path = REPO_ROOT,
    env: Mapping[str, str] | None = None,
    prelude: str = "",
) -> dict[str, str]:
    """`torchscale ARGS`: EXIT (its exit code), LOADED (the `watch` modules it imported, or
    '-'), COMMANDS (the cli/*_cmd modules it imported, or '-') and OUTPUT (what it printed).
    `prelude`: code run first (to show that the probe can see an import)."""
    code = _PROBE.format(prelude=prelude, argv=["torchscale", *args], watch=tuple(watch))
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=dict(os.environ if env is None else env),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    *printed, exit_line, loaded_line, commands_line = done.stdout.splitlines()
    found = dict(line.split(" ", 1) for line in (exit_line, loaded_line, commands_line))
    return {**found, "OUTPUT": "\n".join(printed)}
