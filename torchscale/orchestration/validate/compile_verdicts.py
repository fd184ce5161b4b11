"""The compile probe's PASS, kept per machine and toolchain in the user's cache folder.

Building one kernel is most of `validate`'s time, and the same answer every time until the
machine or its toolchain changes. The folder and what the key holds: docs/validate.md ('A PASS is
kept'). A FAIL is never kept: the next run tries again, as it would after the fix.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import socket
import sys
import sysconfig
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from torchscale.contracts.atomic import write_text_atomic
from torchscale.contracts.finding import Finding
from torchscale.contracts.versioned import read_json_object
from torchscale.orchestration.launch.compile_cache import nearest_existing

FOLDER = Path("torchscale") / "compile-toolchain"
MACHINE_ID_FILES = (Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id"))
# where inductor (CPU) and Triton's launcher (CUDA) look for a compiler, as compile_probe says
COMPILERS = {"cpu": ("CXX", ("g++", "c++", "clang++")), "cuda": ("CC", ("gcc", "clang"))}


def verdict_folder(environ: Mapping[str, str]) -> Path:
    """$XDG_CACHE_HOME/torchscale/compile-toolchain, else ~/.cache/torchscale/..."""
    root = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / FOLDER


def _machine_id() -> str | None:
    for path in MACHINE_ID_FILES:
        try:
            return path.read_text(encoding="utf-8").strip() or None
        except OSError:
            continue
    return None


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _file_facts(path: str | None) -> dict[str, Any] | None:
    """A file's real path, size and modification time: a reinstalled one reads differently."""
    if not path:
        return None
    try:
        real = Path(path).resolve()
        stat = real.stat()
    except OSError:
        return {"path": path, "missing": True}
    return {"path": str(real), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def compiler_facts(device: str, env: Mapping[str, str]) -> dict[str, Any] | None:
    """The compiler the probe's child would use on `device`, found as it finds it."""
    variable, names = COMPILERS.get(device, COMPILERS["cpu"])
    given = env.get(variable)
    if given:
        return _file_facts(shutil.which(given, path=env.get("PATH")) or given)
    found = (shutil.which(name, path=env.get("PATH")) for name in names)
    return _file_facts(next(filter(None, found), None))


def filesystem(folder: Path) -> list[str | int]:
    """The mount point and device number of the filesystem `folder` is (or will be) on."""
    where = nearest_existing(folder).resolve()
    mount = where
    while not os.path.ismount(mount) and mount != mount.parent:
        mount = mount.parent
    try:
        return [str(mount), where.stat().st_dev]
    except OSError:
        return [str(mount), -1]


def verdict_key(
    device: str,
    toolchain_env: list[tuple[str, str]],
    env: Mapping[str, str],
    cache_folders: list[Path],
) -> dict[str, Any]:
    """Everything a kept PASS must match to stand for a new probe (`toolchain_env`: the
    variables that decide it but the cache folders, compile_toolchain.toolchain_key;
    `cache_folders`: where the probe compiles)."""
    include = sysconfig.get_paths().get("include")
    return {
        "host": socket.gethostname(),
        "machine_id": _machine_id(),
        "device": device,
        "python": [sys.executable, sys.version],
        "torch": _version("torch"),
        "triton": _version("triton") if device == "cuda" else None,
        "compiler": compiler_facts(device, env),
        "python_headers": _file_facts(str(Path(include) / "Python.h") if include else None),
        "env": [list(pair) for pair in toolchain_env],
        "cache_filesystems": [filesystem(folder) for folder in cache_folders],
    }


def _path(folder: Path, key: dict[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode("utf-8")).hexdigest()
    return folder / f"{digest[:32]}.json"


# the cache entry's shape: the PASS as findings (codes and figures); another is a miss
VERSION = 2


def _findings(kept: dict[str, Any]) -> list[Finding] | None:
    """A kept PASS's findings; None if unreadable or of another version (a miss)."""
    if kept.get("version") == VERSION and isinstance(kept.get("findings"), list):
        try:
            return [Finding.model_validate(f) for f in kept["findings"]]
        except ValueError:
            return None
    return None


def recall(folder: Path, key: dict[str, Any]) -> dict[str, Any] | None:
    """The kept PASS for `key` ({'findings', 'data', 'created_at', 'path'}), or None."""
    path = _path(folder, key)
    kept = read_json_object(path)
    if not kept or kept.get("key") != key:
        return None
    findings = _findings(kept)
    if findings is None:
        return None
    return {**kept, "findings": findings, "path": str(path)}


def remember(
    folder: Path, key: dict[str, Any], findings: list[Finding], data: Mapping[str, Any]
) -> Path | None:
    """Keep a PASS (atomically: two probes at once leave one whole file); None when the cache
    folder cannot be written (the verdict stands, it is only not kept)."""
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    text = json.dumps(
        {
            "version": VERSION,
            "key": key,
            "created_at": created,
            "findings": [f.model_dump() for f in findings],
            "data": dict(data),
        }
    )
    try:
        return write_text_atomic(_path(folder, key), text)
    except OSError:
        return None
