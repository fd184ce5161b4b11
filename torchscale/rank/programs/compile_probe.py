"""Runs in a child process of `validate` and `benchmark` (`python -m
torchscale.rank.programs.compile_probe`, one process, no torchrun and no process group, so not
through the harness): torch.compile builds one tiny kernel on one device type and runs it, the
way a cell's first compiled step does.

On CPU that is inductor's C++ path (a C++ compiler, the Python headers, OpenMP); on CUDA it is
Triton (importable, and a C compiler with the Python headers for the launcher Triton builds).
The parent gives this process fresh, empty inductor and Triton cache directories, so nothing
built earlier can stand in for the toolchain: the kernel is built here or not at all. The
verdict, a few facts and, on failure, the root cause in one line go to `--out` as JSON.
It imports torch only inside `probe`: a torch that cannot be imported is a verdict too.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sysconfig
import time
from pathlib import Path
from typing import Any

from torchscale.contracts.atomic import write_text_atomic
from torchscale.contracts.wording.spell import as_set

ELEMENTS = 1024
KERNEL_SUFFIXES = {"cpu": (".so",), "cuda": (".cubin", ".hsaco")}
MAX_REASON_CHARS = 300


def tiny(x: Any) -> Any:
    """Pointwise work inductor fuses into one generated kernel (no library call to fall back
    on)."""
    return (x.sin() * 2.0 + 1.0).relu()


def python_headers() -> str | None:
    """Python.h of this interpreter, or None when its headers are not installed."""
    include = sysconfig.get_paths().get("include")
    header = Path(include) / "Python.h" if include else None
    return str(header) if header is not None and header.is_file() else None


def root_cause(exc: BaseException) -> str:
    """The innermost exception of a compile failure, in one line: dynamo and inductor wrap the
    cause (BackendCompilerFailed, InductorError) in messages of many lines; a compiler's error
    is its first line that says 'error'."""
    seen: set[int] = set()
    inner: BaseException = exc
    while id(inner) not in seen:
        seen.add(id(inner))
        nested = getattr(inner, "inner_exception", None) or inner.__cause__
        if not isinstance(nested, BaseException):
            break
        inner = nested
    output = getattr(inner, "output", None) or getattr(inner, "stderr", None)
    if isinstance(output, bytes):
        output = output.decode("utf-8", "replace")
    if isinstance(output, str):
        errors = [line.strip() for line in output.splitlines() if "error" in line.lower()]
        if errors:
            return f"{type(inner).__name__}: {errors[0]}"[:MAX_REASON_CHARS]
    lines = [line.strip() for line in str(inner).splitlines() if line.strip()]
    text = lines[0] if lines else "(no message)"
    return f"{type(inner).__name__}: {text}"[:MAX_REASON_CHARS]


def built_binaries(device: str) -> int:
    """Binaries the compiler wrote into this process's (empty) cache directories: on CPU the
    kernel's shared objects and those of inductor's CPU-feature tests, on CUDA the kernels'
    cubins. None: nothing was built here (an eager fallback)."""
    roots = [os.environ.get("TORCHINDUCTOR_CACHE_DIR"), os.environ.get("TRITON_CACHE_DIR")]
    suffixes = KERNEL_SUFFIXES.get(device, (".so",))
    found = 0
    for root in {r for r in roots if r}:
        found += sum(1 for p in Path(root).rglob("*") if p.suffix in suffixes)
    return found


def _cpp_compiler() -> str | None:
    """The C++ compiler inductor will use (torch._inductor.config.cpp.cxx, from CXX), or None."""
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler

        return str(get_cpp_compiler())
    except Exception:  # InvalidCxxCompiler: the compile below says why, in its words
        return None


def _c_compiler() -> str | None:
    """The C compiler Triton builds its launcher with: CC, else gcc, else clang."""
    return os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang")


def probe(device: str) -> dict[str, Any]:
    """Build and run the tiny kernel on `device`; the verdict with its facts."""
    facts: dict[str, Any] = {"device": device, "python_headers": python_headers()}
    started = time.perf_counter()

    def verdict(ok: bool, stage: str, reason: str | None = None) -> dict[str, Any]:
        wall = round(time.perf_counter() - started, 2)
        return {"ok": ok, "stage": stage, "reason": reason, "wall_s": wall, **facts}

    try:
        import torch
    except Exception as exc:
        return verdict(False, "import", f"cannot import torch: {root_cause(exc)}")
    facts["torch"] = str(torch.__version__)
    if device == "cuda":
        if importlib.util.find_spec("triton") is None:
            return verdict(False, "triton", "triton is not importable (No module named 'triton')")
        if not torch.cuda.is_available():
            return verdict(False, "device", "torch sees no CUDA device")
        facts["c_compiler"] = _c_compiler()
    else:
        facts["cxx"] = _cpp_compiler()
    x = torch.linspace(-3.0, 3.0, ELEMENTS, device=device)
    compiled = torch.compile(tiny, fullgraph=True)
    try:
        out = compiled(x)
        if device == "cuda":
            torch.cuda.synchronize()
    except Exception as exc:
        return verdict(False, "compile", root_cause(exc))
    facts["binaries_built"] = built_binaries(device)
    expected = tiny(x)
    if not torch.allclose(out, expected, rtol=1e-4, atol=1e-5):
        error = float((out - expected).abs().max())
        wrong = f"the compiled kernel returned wrong values (max error {as_set(error)})"
        return verdict(False, "run", wrong)
    if facts["binaries_built"] == 0:
        return verdict(False, "compile", "the compiler built nothing (inductor ran eagerly)")
    return verdict(True, "done")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="torch.compile one tiny kernel (a probe)")
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    parser.add_argument("--out", required=True, help="where the JSON verdict goes")
    args = parser.parse_args(argv)
    try:
        result = probe(args.device)
    except Exception as exc:  # anything else is still one line for the parent, not a traceback
        result = {"ok": False, "stage": "probe", "reason": root_cause(exc), "device": args.device}
    write_text_atomic(args.out, json.dumps(result))


if __name__ == "__main__":
    main()
