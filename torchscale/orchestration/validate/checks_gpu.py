"""Checks of the GPUs: visibility, driver, CUDA compatibility, links, health, clocks.

NVML (pynvml) is the source for what the driver knows; torch is the source for what a training
process can actually use. GPUs are listed as NVML sees them (every GPU of the node), the
peer-to-peer matrix and its NVLink counts as torch sees them (CUDA ordinals: the GPUs visible to
this process), each matched to its NVML GPU by UUID.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torchscale.contracts.clock_reasons import decode_clock_reasons, read_clock_reasons
from torchscale.contracts.finding import Finding
from torchscale.contracts.gpu_clocks import HARDWARE_SLOWDOWNS
from torchscale.contracts.nvml import NvmlGpu, NvmlState, call, gpu_identity, nvml_indices
from torchscale.orchestration.validate.check_context import ValidateContext
from torchscale.orchestration.validate.check_result import (
    CheckResult,
    Measurement,
    failed,
    passed,
    skipped,
    warned,
)
from torchscale.orchestration.validate.checks_software import NEEDS_TORCH, torch_build

CPU_SKIP = Finding(code="gpus.cpu_path")
NO_GPU = Finding(code="gpus.none_visible")


def _no_nvml(state: NvmlState) -> Finding:
    return Finding(code="driver.no_nvml", figures={"error": str(state.error)})


def check_cuda(ctx: ValidateContext) -> CheckResult:
    if ctx.device == "cpu":
        return skipped("cuda", "CUDA", CPU_SKIP)
    torch = ctx.torch.module
    if torch is None:
        return failed("cuda", "CUDA", NEEDS_TORCH, Finding(code="cuda.fix_install_torch"))
    build = torch_build(torch)
    if build == "CPU-only":
        cpu_only = Finding(code="cuda.cpu_only_build", figures={"torch": str(torch.__version__)})
        return failed("cuda", "CUDA", cpu_only, Finding(code="cuda.fix_cpu_only_build"))
    try:
        available = bool(torch.cuda.is_available())
        count = int(torch.cuda.device_count()) if available else 0
    except Exception as exc:
        raised = Finding(code="cuda.raised", figures={"error": f"{type(exc).__name__}: {exc}"})
        return failed("cuda", "CUDA", raised, Finding(code="cuda.fix_raised"))
    if not available or count == 0:
        none = Finding(code="cuda.no_device", figures={"build": build})
        return failed("cuda", "CUDA", none, Finding(code="cuda.fix_no_device"), device_count=0)
    usable = Finding(code="cuda.devices", figures={"count": count, "build": build})
    return passed("cuda", "CUDA", usable, device_count=count, cuda_runtime=torch.version.cuda)


def _gpu_facts(state: NvmlState, gpu: NvmlGpu) -> dict[str, Any]:
    pynvml = state.module
    assert pynvml is not None
    facts: dict[str, Any] = {
        "index": gpu.index,
        "name": gpu.name,
        "uuid": gpu.uuid,
        "pci_bus_id": gpu.bus_id,
        "serial": gpu.serial,
    }
    memory, _ = call(pynvml.nvmlDeviceGetMemoryInfo, gpu.handle)
    if memory is not None:
        facts["memory_total_bytes"] = int(memory.total)
    capability, _ = call(pynvml.nvmlDeviceGetCudaComputeCapability, gpu.handle)
    if capability is not None:
        facts["compute_capability"] = f"{capability[0]}.{capability[1]}"
    return facts


def _torch_gpu_facts(torch: Any, index: int) -> dict[str, Any]:
    props = torch.cuda.get_device_properties(index)
    return {
        "index": index,
        "name": props.name,
        "memory_total_bytes": int(props.total_memory),
        "compute_capability": f"{props.major}.{props.minor}",
    }


def check_gpus(ctx: ValidateContext) -> CheckResult:
    """Per-GPU name, memory and compute capability (NVML, torch as fallback)."""
    if ctx.device == "cpu":
        return skipped("gpus", "GPUs", CPU_SKIP)
    state = ctx.nvml
    torch = ctx.torch.module
    gpus: list[dict[str, Any]] = []
    source = ""
    judged = ctx.judged_gpus
    if state.ok and judged:
        gpus = [_gpu_facts(state, g) for g in judged]
        source = "NVML"
    elif torch is not None and ctx.torch.cuda_gpu_count:
        gpus = [_torch_gpu_facts(torch, i) for i in range(ctx.torch.cuda_gpu_count)]
        source = "torch (NVML unavailable)"
    if not gpus:
        why = f"NVML unavailable: {state.error}" if not state.ok else "NVML lists no GPU"
        none = Finding(code="gpus.none_found", figures={"why": why})
        return failed("gpus", "GPUs", none, Finding(code="gpus.fix_none_found"))
    unreadable = [g for g in judged if g.handle is None] if state.ok else []
    if unreadable:
        which = [[g.index, g.name.removeprefix("<unreadable: ").rstrip(">")] for g in unreadable]
        lost = Finding(code="gpus.unreadable", figures={"gpus": which})
        return failed("gpus", "GPUs", lost, Finding(code="gpus.fix_unreadable"), gpus=gpus)
    names = {g["name"] for g in gpus}
    figures: dict[str, Any] = {"gpus": gpus, "source": source}
    if unjudged := ctx.unjudged_gpus():  # a slice of the board: the others are not its GPUs
        figures["not_visible"] = unjudged
    listed = Finding(code="gpus.listed", figures=figures)
    if len(names) > 1:
        return warned("gpus", "GPUs", listed, Finding(code="gpus.fix_mixed"), gpus=gpus)
    return passed("gpus", "GPUs", listed, gpus=gpus)


def check_driver(ctx: ValidateContext) -> CheckResult:
    if ctx.device == "cpu":
        return skipped("driver", "NVIDIA driver", CPU_SKIP)
    state = ctx.nvml
    if not state.ok:
        fix = Finding(code="driver.fix_no_nvml")
        return failed("driver", "NVIDIA driver", _no_nvml(state), fix)
    cuda = state.cuda_driver_version
    version = f"{cuda[0]}.{cuda[1]}" if cuda else None
    data = {"driver_version": state.driver_version, "cuda_driver_version": version}
    figures = {"driver_version": state.driver_version, "cuda": version}
    return passed(
        "driver", "NVIDIA driver", Finding(code="driver.version", figures=figures), **data
    )


def cuda_compatibility(runtime: tuple[int, int], driver: tuple[int, int]) -> str:
    """'ok', 'minor' (newer minor runtime on an older driver of the same major) or 'too_old'.
    Since CUDA 11 a driver runs any runtime of its major version (minor version compatibility)
    but for features needing a newer driver and PTX JIT; a lower major fails."""
    if driver[0] < runtime[0]:
        return "too_old"
    return "minor" if driver[0] == runtime[0] and driver[1] < runtime[1] else "ok"


def check_cuda_compat(ctx: ValidateContext) -> CheckResult:
    title = "CUDA runtime vs driver"
    if ctx.device == "cpu":
        return skipped("cuda_compat", title, CPU_SKIP)
    torch = ctx.torch.module
    runtime_text = getattr(getattr(torch, "version", None), "cuda", None) if torch else None
    if not runtime_text:
        return skipped("cuda_compat", title, Finding(code="cuda.no_runtime"))
    driver = ctx.nvml.cuda_driver_version
    if driver is None:
        unknown = Finding(code="cuda.driver_cuda_unknown", figures={"error": str(ctx.nvml.error)})
        return skipped("cuda_compat", title, unknown)
    major, minor = (int(x) for x in runtime_text.split(".")[:2])
    verdict = cuda_compatibility((major, minor), driver)
    data = {"runtime": runtime_text, "driver": f"{driver[0]}.{driver[1]}", "verdict": verdict}
    compat = Finding(code="cuda.compat", figures=data)
    if verdict == "too_old":
        fix = Finding(
            code="cuda.fix_driver_too_old",
            figures={"runtime": runtime_text, "driver_major": driver[0]},
        )
        return failed("cuda_compat", title, compat, fix, **data)
    if verdict == "minor":
        return warned("cuda_compat", title, compat, Finding(code="cuda.fix_minor_compat"), **data)
    return passed("cuda_compat", title, compat, **data)


def identities(gpus: Sequence[NvmlGpu]) -> dict[int, dict[str, Any]]:
    """Each NVML GPU's UUID and serial, by index: the data that lets a per-GPU verdict be
    acted on (an RMA names the serial)."""
    return {g.index: gpu_identity(g) for g in gpus}


def identified(rows: Sequence[Measurement], state: NvmlState) -> list[Measurement]:
    """Each per-GPU measurement with its GPU's NVML index and serial beside the UUID its rank
    read (the rank's CUDA ordinal is not the NVML index under CUDA_VISIBLE_DEVICES)."""
    uuids = [str(row.data["uuid"]) if row.data.get("uuid") else None for row in rows]
    indices = nvml_indices(uuids, [g.uuid for g in state.gpus])
    named = []
    for row, index in zip(rows, indices, strict=True):
        if index is None:
            named.append(row)
            continue
        gpu = state.gpus[index]
        ids = {"nvml_index": gpu.index, "serial": gpu.serial}
        named.append(row.model_copy(update={"data": row.data | ids}))
    return named


def nvml_or_skip(ctx: ValidateContext, id: str, title: str) -> tuple[Any, CheckResult | None]:
    """(pynvml, None) when a per-GPU NVML check can run, else (None, the SKIP saying why)."""
    if ctx.device == "cpu":
        return None, skipped(id, title, CPU_SKIP)
    if not ctx.nvml.ok or ctx.nvml.module is None:
        return None, skipped(id, title, _no_nvml(ctx.nvml))
    if not ctx.judged_gpus:
        return None, skipped(id, title, NO_GPU)
    return ctx.nvml.module, None


def check_ecc(ctx: ValidateContext) -> CheckResult:
    """Uncorrected ECC errors since boot, retired pages and row-remapping failures."""
    title = "ECC / retired memory"
    pynvml, skip = nvml_or_skip(ctx, "ecc", title)
    if skip:
        return skip
    per_gpu: dict[int, dict[str, Any]] = {}
    ids = identities(ctx.judged_gpus)
    bad: list[tuple[int, str, int]] = []
    unsupported = 0
    for gpu in ctx.judged_gpus:
        facts: dict[str, Any] = {}
        volatile, err = call(
            pynvml.nvmlDeviceGetTotalEccErrors,
            gpu.handle,
            pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
            pynvml.NVML_VOLATILE_ECC,
        )
        if err is not None:
            unsupported += 1
            facts["ecc"] = f"unsupported ({err})"
        else:
            facts["uncorrected_volatile"] = int(volatile or 0)
            if volatile:
                bad.append((gpu.index, "uncorrected", int(volatile)))
        pending, err = call(pynvml.nvmlDeviceGetRetiredPagesPendingStatus, gpu.handle)
        if err is None:
            facts["retired_pages_pending"] = bool(pending)
            if pending:
                bad.append((gpu.index, "retirement_pending", 1))
        remap, err = call(pynvml.nvmlDeviceGetRemappedRows, gpu.handle)
        if err is None and remap is not None:
            corrected, uncorrected, is_pending, failure = remap
            facts["remapped_rows"] = {
                "correctable": corrected,
                "uncorrectable": uncorrected,
                "pending": bool(is_pending),
                "failure": bool(failure),
            }
            if failure:
                bad.append((gpu.index, "remap_failed", 1))
            elif is_pending:
                bad.append((gpu.index, "remap_pending", 1))
        per_gpu[gpu.index] = facts
    if bad:
        problems = Finding(code="ecc.problems", figures={"bad": [list(b) for b in bad]})
        return failed("ecc", title, problems, Finding(code="ecc.fix"), gpus=per_gpu, ids=ids)
    if unsupported == len(ctx.judged_gpus):
        why = Finding(code="ecc.not_supported")
        return skipped("ecc", title, why, gpus=per_gpu, ids=ids)
    return passed("ecc", title, Finding(code="ecc.clean"), gpus=per_gpu, ids=ids)


def check_persistence(ctx: ValidateContext) -> CheckResult:
    title = "Persistence mode"
    pynvml, skip = nvml_or_skip(ctx, "persistence", title)
    if skip:
        return skip
    modes: dict[int, bool | None] = {}
    ids = identities(ctx.judged_gpus)
    for gpu in ctx.judged_gpus:
        value, err = call(pynvml.nvmlDeviceGetPersistenceMode, gpu.handle)
        modes[gpu.index] = None if err else value == pynvml.NVML_FEATURE_ENABLED
    off = [i for i, on in modes.items() if on is False]
    if off:
        disabled = Finding(code="persistence.off", figures={"gpus": off})
        fix = Finding(code="persistence.fix")
        return warned("persistence", title, disabled, fix, gpus=modes, ids=ids)
    if all(on is None for on in modes.values()):
        unknown = Finding(code="persistence.not_queryable")
        return skipped("persistence", title, unknown, gpus=modes, ids=ids)
    return passed("persistence", title, Finding(code="persistence.on"), gpus=modes, ids=ids)


def check_throttle(ctx: ValidateContext) -> CheckResult:
    """The clocks-event mask of every GPU, read once with the GPU idle: only a hardware or
    thermal slowdown set at idle is a problem here. SwPowerCap and the idle bits are power
    management, and throttling under load is judged from each cell's telemetry."""
    title = "Clock throttling (idle GPU)"
    pynvml, skip = nvml_or_skip(ctx, "throttle", title)
    if skip:
        return skip
    reasons: dict[int, list[str]] = {}
    unreadable: dict[int, str] = {}
    for gpu in ctx.judged_gpus:
        mask, _, err = read_clock_reasons(pynvml, gpu.handle)
        if mask is None:
            unreadable[gpu.index] = err or "no answer"
        else:
            reasons[gpu.index] = decode_clock_reasons(mask)
    slowing = {i: [r for r in rs if r in HARDWARE_SLOWDOWNS] for i, rs in reasons.items()}
    slowing = {i: rs for i, rs in slowing.items() if rs}
    data: dict[str, Any] = {"gpus": reasons, "errors": unreadable, "read": "once, idle"}
    data["ids"] = identities(ctx.judged_gpus)
    errors = {str(i): e for i, e in unreadable.items()}
    if slowing:
        figures = {"slowing": {str(i): rs for i, rs in slowing.items()}, "errors": errors}
        slowdown = Finding(code="throttle.idle_slowdown", figures=figures)
        return warned("throttle", title, slowdown, Finding(code="throttle.fix_slowdown"), **data)
    if unreadable:  # not a PASS: a GPU we could not read may be the one throttling
        unknown = Finding(code="throttle.unreadable", figures={"errors": errors})
        fix = Finding(code="throttle.fix_unreadable")
        return skipped("throttle", title, unknown, fix, **data)
    return passed("throttle", title, Finding(code="throttle.idle_clean"), **data)
