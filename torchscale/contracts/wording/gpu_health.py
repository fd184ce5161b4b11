"""Words for validate's per-GPU health checks read through NVML (orchestration/validate/
checks_gpu.py): ECC and retired memory, persistence mode, clock throttling at idle."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases

F = Mapping[str, Any]

ECC_PROBLEMS = {
    "uncorrected": "{n} uncorrected ECC error(s) since boot",
    "retirement_pending": "page retirement pending (reboot needed)",
    "remap_failed": "row remapping failed (replace the GPU)",
    "remap_pending": "row remapping pending (reset the GPU)",
}


def _ecc(f: F) -> str:
    return "; ".join(
        f"GPU{gpu}: " + ECC_PROBLEMS[problem].format(n=count) for gpu, problem, count in f["bad"]
    )


def _unknown(errors: Mapping[str, Any]) -> str:
    by_error: dict[str, list[str]] = {}
    for gpu, error in errors.items():
        by_error.setdefault(error, []).append(f"GPU{gpu}")
    return "; ".join(f"{', '.join(gpus)}: {e}" for e, gpus in by_error.items())


def _slowdown(f: F) -> str:
    text = "; ".join(f"GPU{i}: {', '.join(rs)}" for i, rs in f["slowing"].items())
    if f["errors"]:
        text += f"; unreadable: {_unknown(f['errors'])}"
    return f"hardware or thermal slowdown set on an idle GPU: {text}"


PHRASES: Phrases = {
    "gpus.none_visible": "no GPU visible",
    "ecc.problems": _ecc,
    "ecc.fix": (
        "drain the node: reset/reboot for pending retirement or remapping, RMA the GPU on "
        "remapping failure or recurring uncorrected errors"
    ),
    "ecc.not_supported": "ECC not supported or disabled on these GPUs",
    "ecc.clean": "no uncorrected ECC errors, no pending retirement/remapping",
    "persistence.off": lambda f: "disabled on GPU " + ", ".join(map(str, f["gpus"])),
    "persistence.fix": (
        "enable it (`sudo nvidia-smi -pm 1` or nvidia-persistenced) so the driver does not "
        "re-initialise the GPUs at every process start"
    ),
    "persistence.not_queryable": "not queryable on these GPUs",
    "persistence.on": "enabled on every GPU",
    "throttle.idle_slowdown": _slowdown,
    "throttle.fix_slowdown": (
        "check cooling and the hardware (`nvidia-smi -q -d PERFORMANCE,TEMPERATURE`); a "
        "throttling GPU becomes the straggler every rank waits for"
    ),
    "throttle.unreadable": lambda f: f"clock reasons unreadable: {_unknown(f['errors'])}",
    "throttle.fix_unreadable": (
        "NVML cannot say whether these GPUs throttle: check `nvidia-smi -q -d PERFORMANCE` by "
        "hand, and the driver (`nvidia-smi`) if it fails too"
    ),
    "throttle.idle_clean": (
        "read once with the GPUs idle: no hardware or thermal slowdown set (throttling under "
        "load is judged from each cell's telemetry)"
    ),
}
