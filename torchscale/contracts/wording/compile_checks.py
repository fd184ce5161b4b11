"""Words for the compile toolchain check (orchestration/validate/compile_toolchain.py): what
the compile probe found, how to fix it, and a PASS kept in the verdict cache (stored as codes
and figures)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from torchscale.contracts.wording import Phrases
from torchscale.contracts.wording.spell import limit_s, whole_s

F = Mapping[str, Any]

COMPILE_OFF = "or set training.compile: false"


def _what(f: F) -> str:
    return "a C++ kernel (inductor)" if f["device"] == "cpu" else "a Triton kernel (inductor)"


def _tools(f: F) -> str:
    """'with /usr/bin/g++, Python headers at ...' from the child's facts."""
    headers = f.get("headers")
    found = f"Python headers at {headers}" if headers else "no Python headers found"
    return f"with {f['compiler']}, {found}" if f.get("compiler") else found


def _failed(f: F) -> str:
    return f"{f['reason']} ({_tools(f)})" if f.get("tools") else str(f["reason"])


def cached_from(created_at: str) -> str:
    """'cached from 2026-01-31 14:02 UTC' for a kept verdict's ISO time."""
    try:
        when = datetime.fromisoformat(created_at).astimezone(timezone.utc)
    except ValueError:
        return f"cached from {created_at}"
    return f"cached from {when.strftime('%Y-%m-%d %H:%M')} UTC"


PHRASES: Phrases = {
    "compile.timed_out": lambda f: (
        f"building {_what(f)} did not finish within {limit_s(f['timeout_s'])}"
    ),
    "compile.no_verdict": lambda f: (
        "the compile probe ended without a verdict "
        f"({f.get('why') or 'exit code ' + str(f['returncode'])})"
    ),
    "compile.built": lambda f: (
        f"built and ran {_what(f)} in {whole_s(f['wall_s'])} ({f['binaries']} binaries built "
        f"in an empty cache; {_tools(f)})"
    ),
    "compile.failed": _failed,
    "compile.cached": lambda f: cached_from(f["created_at"]),
    "compile.quick": "--quick: no kernel compiled",
    "compile.cache_fallback": lambda f: (
        f"the compile cache cannot live in {f['folder']} ({_problem(f['problem'])}): the cells "
        f"compile in node-local {f['local']} instead"
    ),
    "compile.folder_failed": lambda f: f"a compile there failed: {_says(f['findings'])}",
    "compile.fix_cpu": lambda f: (
        "install a C++ compiler and the Python headers (apt install g++ python3-dev), "
        + COMPILE_OFF
    ),
    "compile.fix_cuda": lambda f: (
        "install a C compiler and the Python headers for Triton (apt install gcc "
        "python3-dev), " + COMPILE_OFF
    ),
    "compile.fix_triton": lambda f: (
        "install triton (pip install triton; CUDA wheels of torch bring the matching one), "
        + COMPILE_OFF
    ),
    "compile.fix_cpu_optional": "CPU cells compile only when it is true",
    "compile.fix_cache_folder": (
        "keep the results on a filesystem with file locks that allows executables, or set "
        "TORCHINDUCTOR_CACHE_DIR to a folder that does (each node and run then compiles anew)"
    ),
}


def _problem(problem: Any) -> str:
    """launch/compile_cache.py's reason as it gave it, or a finding's words."""
    return _says([problem]) if isinstance(problem, dict) else str(problem)


def _says(findings: Any) -> str:
    from torchscale.contracts import wording  # the joined phrases, made after this module
    from torchscale.contracts.finding import Finding

    return "; ".join(wording.say(Finding.model_validate(one)) for one in findings)
