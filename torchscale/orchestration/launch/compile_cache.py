"""One compile cache per experiment, `<experiment>/compile_cache/`, where inductor and Triton
keep what they compile (docs/methodology.md, "Compile time and the experiment's compile cache":
why, and how a user's own setting wins).

One value is not taken for the user's: inductor's own default, which inductor writes into
`os.environ` of any process that compiled or read its cache directory (a notebook that ran
`torch.compile` before calling the API; a test session that imported inductor): inherited, it
would send every cell to the node-local default this module exists to replace.

A results folder cannot always hold a cache: on NFS without a lock daemon inductor's file
locks fail, on a filesystem mounted noexec (common for shared scratch under Slurm) the kernels
it builds there cannot be loaded. `cache_folder_problem` says so before any cell compiles, and
the cells then compile in `node_local_cache_dir()`, this node's temporary directory.
"""

from __future__ import annotations

import errno
import fcntl
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


def _user_name() -> str:
    try:
        username = getpass.getuser()
    except (KeyError, ModuleNotFoundError, OSError):
        getuid = getattr(os, "getuid", None)
        username = f"uid_{getuid()}" if callable(getuid) else "unknown_user"
    return re.sub(r'[\\/:*?"<>|]', "_", username)


def inductor_default_dir() -> str:
    """Inductor's own default cache directory, as torch 2.13 computes it without a setting
    (torch/_inductor/runtime/cache_dir_utils.py default_cache_dir, outside Meta's fbcode),
    computed here without importing torch."""
    return str(Path(tempfile.gettempdir()) / f"torchinductor_{_user_name()}")


def node_local_cache_dir() -> Path:
    """Where the cells compile when the experiment's folder cannot hold a cache: this node's
    temporary directory, under a name of its own (inductor's default would be taken for
    inductor's doing and replaced by the experiment's folder again)."""
    return Path(tempfile.gettempdir()) / f"torchscale_compile_cache_{_user_name()}"


def node_local_cache_env() -> dict[str, str]:
    """The variables that send inductor and Triton to `node_local_cache_dir()`."""
    return compile_cache_env(node_local_cache_dir(), {})


def cache_folders(env: Mapping[str, str]) -> list[Path]:
    """The folders inductor and Triton cache in under `env` (one when Triton's sits inside
    inductor's); [] when inductor's is its node-local default or unset."""
    inductor = env.get(INDUCTOR_CACHE_ENV)
    if not inductor or str(Path(inductor).absolute()) == inductor_default_dir():
        return []
    folders = [Path(inductor).absolute()]
    triton = env.get(TRITON_CACHE_ENV)
    if triton and not Path(triton).absolute().is_relative_to(folders[0]):
        folders.append(Path(triton).absolute())
    return folders


def nearest_existing(path: Path) -> Path:
    """`path` or the closest of its parents that exists: where a folder not made yet would
    live, on the same filesystem."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path(path.anchor or ".")


def cache_folder_problem(folder: Path) -> str | None:
    """Why `folder` cannot hold a compile cache, in words, or None. Asked of the folder or,
    when it is not made yet, of the nearest one above it (nothing is left behind): a folder
    can be made in it, a file there can be locked (inductor's FileLock takes fcntl.flock),
    and its filesystem is not mounted noexec (inductor loads the kernels it builds there)."""
    where = nearest_existing(folder)
    if not where.is_dir():
        return f"{where} is not a folder"
    noexec = getattr(os, "ST_NOEXEC", 0)
    try:
        if noexec and os.statvfs(where).f_flag & noexec:
            return f"{where} is on a filesystem mounted noexec: built kernels cannot be loaded"
        with tempfile.NamedTemporaryFile(prefix="torchscale-cache-check-", dir=where) as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(handle, fcntl.LOCK_UN)
    except OSError as exc:
        if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
            return f"files in {where} cannot be locked ({exc.strerror}; NFS without locks?)"
        return f"cannot write in {where} ({exc.strerror or exc})"
    return None


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
