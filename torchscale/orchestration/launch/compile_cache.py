"""One compile cache per experiment: where inductor and Triton keep what they compile.

Every cell, max-batch probe, profile and resume is a fresh torchrun, and a fresh process
compiles its model anew. Inductor caches what it produces (FX graphs, AOT autograd artifacts,
C++ and Triton kernels) on disk, keyed by the graph, its shapes, the torch version and the
config, so a process that meets a graph compiled before loads it instead of building it. Left
to its default (`<tmp>/torchinductor_<user>`) the cache lives on one node's local disk: a Slurm
job or a Kubernetes pod on another node, or a resume after the temporary directory was cleaned,
starts cold. Pointing every launch of an experiment at `<experiment>/compile_cache/` (on the
results directory, which every node of a multi-node launch already shares) makes the first
process to compile a graph the only one that pays for it (docs/methodology.md, "Compile time").

A user's own setting wins: a `TORCHINDUCTOR_CACHE_DIR` in the inherited environment or in
`launcher.env` leaves both variables alone (Triton's cache then sits where inductor puts it,
under the user's directory); a `TRITON_CACHE_DIR` of theirs leaves Triton's. One value is not
taken for the user's: inductor's own default, which inductor writes into `os.environ` of any
process that compiled or read its cache directory (a notebook that ran `torch.compile` before
calling the API; a test session that imported inductor): inherited, it would send every cell
to the node-local default this module exists to replace.

Layer 3 (orchestration) of docs/architecture.md, with the rest of `torchscale.orchestration.launch`.
"""

from __future__ import annotations

import getpass
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePath

# torch 2.13: torch/_inductor/runtime/cache_dir_utils.py reads both (cache_dir(),
# triton_cache_dir()); inductor hands them on to its compile workers (async_compile.py)
INDUCTOR_CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"
TRITON_CACHE_ENV = "TRITON_CACHE_DIR"
# Triton's cache inside inductor's, as torch lays them out itself (torch._inductor.utils
# fresh_cache: <inductor cache>/triton)
TRITON_SUBDIR = "triton"


def inductor_default_dir() -> str:
    """Inductor's own default cache directory, as torch 2.13 computes it without a setting
    (torch/_inductor/runtime/cache_dir_utils.py default_cache_dir, outside Meta's fbcode),
    computed here without importing torch."""
    try:
        username = getpass.getuser()
    except (KeyError, ModuleNotFoundError, OSError):
        getuid = getattr(os, "getuid", None)
        username = f"uid_{getuid()}" if callable(getuid) else "unknown_user"
    sanitized = re.sub(r'[\\/:*?"<>|]', "_", username)
    return str(Path(tempfile.gettempdir()) / f"torchinductor_{sanitized}")


def compile_cache_env(directory: PurePath, given: Mapping[str, str]) -> dict[str, str]:
    """The variables that point inductor and Triton at `directory`, less what the user set
    (`given`: the environment the ranks inherit with `launcher.env` on top). Inductor's own
    default in `given` is inductor's doing, not the user's (module docstring)."""
    user_dir = given.get(INDUCTOR_CACHE_ENV)
    if user_dir is not None and str(Path(user_dir).absolute()) != inductor_default_dir():
        return {}
    env = {INDUCTOR_CACHE_ENV: str(directory)}
    if TRITON_CACHE_ENV not in given:
        env[TRITON_CACHE_ENV] = str(directory / TRITON_SUBDIR)
    return env
