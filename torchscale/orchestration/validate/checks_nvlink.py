"""NVLink checks: the links each SXM GPU has up against its SKU's count, the generation and
speed they trained to, their error counters, the path peer access takes between two GPUs, and
the NVSwitch fabric state on HGX boards (docs/validate.md, 'NVLink links and peer access' and
'NVLink fabric'). Every GPU is named by NVML index, UUID and serial in its findings. A query
NVML answers NotSupported leaves the GPU not readable: neither a pass nor a fail.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from torchscale.contracts.finding import Finding
from torchscale.contracts.nvml import (
    NvmlGpu,
    NvmlState,
    call,
    fabric_info,
    gpu_identity,
    nvml_indices,
    return_name,
)
from torchscale.orchestration.validate.check_context import ValidateContext
from torchscale.orchestration.validate.check_result import (
    CheckResult,
    CheckStatus,
    found,
    skipped,
    worst,
)
from torchscale.orchestration.validate.checks_gpu import CPU_SKIP, nvml_or_skip
from torchscale.orchestration.validate.nvlink_reference import nvlink_sku

# the link-level counters nvidia-smi nvlink -e shows, by NVML's constant names
ERROR_COUNTERS = {
    "replay": "NVML_NVLINK_ERROR_DL_REPLAY",
    "recovery": "NVML_NVLINK_ERROR_DL_RECOVERY",
    "crc_flit": "NVML_NVLINK_ERROR_DL_CRC_FLIT",
    "crc_data": "NVML_NVLINK_ERROR_DL_CRC_DATA",
}
LINKS_HINT = Finding(code="nvlink.fix_links")
ERRORS_HINT = Finding(code="nvlink.fix_errors")
FABRIC_HINT = Finding(code="fabric.fix")
# NVML_GPU_FABRIC_STATE_*: the GPU's registration with the fabric manager
FABRIC_STATES = {0: "not supported", 1: "not started", 2: "in progress", 3: "completed"}
FABRIC_COMPLETED = 3
XID = Finding(code="gpus.xid_not_read", figures={"where": "kernel log"})


@dataclass
class Links:
    """What NVML says of one GPU's links: active and down (by link number), the NVLink version
    of each active link, its nonzero error counters, the common link speed, and why nothing
    could be read (None: read)."""

    gpu: NvmlGpu
    active: list[int] = field(default_factory=list)
    down: list[int] = field(default_factory=list)
    versions: dict[int, int] = field(default_factory=dict)
    counts: dict[int, dict[str, int]] = field(default_factory=dict)  # every counter read
    counters_error: str | None = None  # set when no error counter could be read
    speed_mbps: int | None = None
    unread: str | None = None


def link_states(pynvml: Any, gpu: NvmlGpu) -> tuple[list[int], list[int], str | None]:
    """(active links, links down, the first error) of one GPU. A link whose state query fails
    does not exist on it (NVML numbers links up to NVML_NVLINK_MAX_LINKS on every GPU)."""
    active: list[int] = []
    down: list[int] = []
    errors: list[str] = []
    for link in range(int(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18))):
        state, err = call(pynvml.nvmlDeviceGetNvLinkState, gpu.handle, link)
        if err is not None:
            errors.append(err)
        else:
            (active if state == pynvml.NVML_FEATURE_ENABLED else down).append(link)
    return active, down, errors[0] if errors else None


def read_links(pynvml: Any, gpu: NvmlGpu) -> Links:
    """One GPU's links, their versions, error counters and speed."""
    active, down, error = link_states(pynvml, gpu)
    links = Links(gpu, active, down)
    if not active and not down:
        links.unread = error or "no link"
        return links
    counter_errors: list[str] = []
    for link in links.active:
        version, err = call(pynvml.nvmlDeviceGetNvLinkVersion, gpu.handle, link)
        if err is None and version is not None:
            links.versions[link] = int(version)
        for name, constant in ERROR_COUNTERS.items():
            count, err = call(
                pynvml.nvmlDeviceGetNvLinkErrorCounter, gpu.handle, link, getattr(pynvml, constant)
            )
            if err is not None:
                counter_errors.append(err)
            else:
                links.counts.setdefault(link, {})[name] = int(count or 0)
    if active and len(counter_errors) == len(active) * len(ERROR_COUNTERS):
        links.counters_error = counter_errors[0]
    links.speed_mbps = _common_speed(pynvml, gpu)
    return links


def nonzero(counts: dict[int, dict[str, int]]) -> dict[int, dict[str, int]]:
    """The links with a counter above zero, and those counters."""
    kept = {link: {k: v for k, v in by.items() if v} for link, by in counts.items()}
    return {link: by for link, by in kept.items() if by}


def _common_speed(pynvml: Any, gpu: NvmlGpu) -> int | None:
    """The speed NVML reports for every link of the GPU (MB/s), or None where it has none."""
    field_id = getattr(pynvml, "NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON", None)
    if field_id is None:
        return None
    values, err = call(pynvml.nvmlDeviceGetFieldValues, gpu.handle, [field_id])
    if err is not None or not values or values[0].nvmlReturn != 0:
        return None
    return int(values[0].value.uiVal)


def link_findings(readings: list[Links]) -> tuple[CheckStatus, list[Finding]]:
    """Each GPU's links judged against its SKU; the speed judged against the GPU's peers of
    its model. (status, findings): INFO when no GPU has a cited link count, SKIP when no GPU
    could be read."""
    findings: list[Finding] = []
    statuses: list[CheckStatus] = []
    full: list[int] = []
    expected: set[int] = set()
    for links in readings:
        gpu, sku = links.gpu, nvlink_sku(links.gpu.name)
        named = gpu_identity(gpu)
        if links.unread is not None:
            findings.append(_not_readable(gpu, "link state", links.unread))
            continue
        if sku is None:
            figures = {**named, "name": gpu.name, "active": len(links.active)}
            findings.append(Finding(code="nvlink.not_judged", figures=figures))
            statuses.append(CheckStatus.INFO)
            continue
        missing = [n for n in range(sku.links) if n not in links.active]
        if missing:
            figures = {
                **named,
                "active": len(links.active),
                "expected": sku.links,
                "down": missing,
                "sku": sku.model,
            }
            findings.append(Finding(code="nvlink.links_down", figures=figures))
            statuses.append(CheckStatus.FAIL)
        else:
            full.append(gpu.index)
            expected.add(sku.links)
            statuses.append(CheckStatus.PASS)
        old = sorted(n for n, v in links.versions.items() if v < sku.nvml_version)
        if old:
            figures = {**named, "links": old, "expected": sku.generation, "sku": sku.model}
            findings.append(Finding(code="nvlink.old_generation", figures=figures))
            statuses.append(CheckStatus.WARN)
        # counts since the driver loaded: context; whether they grow is check_nvlink_errors'
        for link, counts in nonzero(links.counts).items():
            figures = {**named, "link": link, **counts}
            findings.append(Finding(code="nvlink.errors", figures=figures))
            statuses.append(CheckStatus.INFO)
        if links.counters_error is not None:
            findings.append(_not_readable(gpu, "error counters", links.counters_error))
    findings += _speed_findings(readings)
    statuses += [CheckStatus.WARN for f in findings if f.code == "nvlink.speed_differs"]
    if full:
        figures = {"gpus": full, "links": sorted(expected), "source": _sources(readings)}
        findings.insert(0, Finding(code="nvlink.links_full", figures=figures))
    return (worst(statuses) if statuses else CheckStatus.SKIP), findings


def _sources(readings: list[Links]) -> list[str]:
    """The citation of each SKU judged."""
    skus = {nvlink_sku(r.gpu.name) for r in readings}
    return sorted(s.source for s in skus if s is not None)


def _speed_findings(readings: list[Links]) -> list[Finding]:
    """A GPU whose links trained to another speed than most GPUs of its model."""
    by_model: dict[str, list[Links]] = {}
    for links in readings:
        if links.speed_mbps is not None:
            by_model.setdefault(links.gpu.name, []).append(links)
    findings = []
    for group in by_model.values():
        usual, _ = Counter(r.speed_mbps for r in group).most_common(1)[0]
        for links in group:
            if links.speed_mbps != usual:
                figures = {**gpu_identity(links.gpu), "speed_mbps": links.speed_mbps}
                figures["peers_mbps"] = usual
                findings.append(Finding(code="nvlink.speed_differs", figures=figures))
    return findings


def _not_readable(gpu: NvmlGpu, what: str, error: str) -> Finding:
    figures = {**gpu_identity(gpu), "what": what, "error": error.split(":")[0]}
    return Finding(code="gpus.not_readable", figures=figures)


def check_nvlink(ctx: ValidateContext) -> CheckResult:
    title = "NVLink links"
    pynvml, skip = nvml_or_skip(ctx, "nvlink", title)
    if skip:
        return skip
    readings = [read_links(pynvml, g) for g in ctx.judged_gpus if g.handle is not None]
    ctx.nvlink_counts = {r.gpu.uuid: r.counts for r in readings if r.counts}
    status, findings = link_findings(readings)
    data = {
        str(r.gpu.index): {"active": r.active, "down": r.down, "speed_mbps": r.speed_mbps}
        for r in readings
    }
    found_codes = {f.code for f in findings}
    hint: list[Finding] = []
    if found_codes & {"nvlink.links_down", "nvlink.old_generation", "nvlink.speed_differs"}:
        hint = [LINKS_HINT]
    return found("nvlink", title, status, findings, hint, links=data)


def check_nvlink_errors(ctx: ValidateContext) -> CheckResult:
    """The NVLink error counters read again after what validate ran on the links (its smoke
    test's collectives, perf's copies and sweeps) and judged by how much they rose: a count
    since the driver loaded may be a boot's or a reseat's long past; one that grows under this
    run's load is a link failing now. Run only where check_nvlink read counters."""
    title = "NVLink errors under load"
    during = [
        what for what, ran in (("smoke test", not ctx.quick), ("perf", ctx.level != "basic")) if ran
    ]
    if not during:
        why = Finding(code="nvlink.errors_not_loaded")
        return skipped("nvlink_errors", title, why)
    pynvml = ctx.nvml.module
    rose: list[Finding] = []
    for gpu in (g for g in ctx.judged_gpus if g.handle is not None and g.uuid in ctx.nvlink_counts):
        before = ctx.nvlink_counts[gpu.uuid]
        for link, counts in nonzero(_rises(read_links(pynvml, gpu).counts, before)).items():
            figures = {**gpu_identity(gpu), "link": link, **counts, "during": during}
            rose.append(Finding(code="nvlink.errors_rose", figures=figures))
    if rose:
        return found("nvlink_errors", title, CheckStatus.WARN, rose, [ERRORS_HINT])
    steady = Finding(code="nvlink.errors_steady", figures={"during": during})
    return found("nvlink_errors", title, CheckStatus.PASS, [steady])


def _rises(
    after: dict[int, dict[str, int]], before: dict[int, dict[str, int]]
) -> dict[int, dict[str, int]]:
    """Each counter's rise from `before` to `after` (a link or counter read only after: from 0)."""
    return {
        link: {k: v - before.get(link, {}).get(k, 0) for k, v in by.items()}
        for link, by in after.items()
    }


def check_fabric(ctx: ValidateContext) -> CheckResult:
    """Each GPU's registration in the NVLink fabric (NVSwitch boards, Hopper and later): a GPU
    the fabric manager has not registered cannot run CUDA work on an HGX node."""
    title = "NVLink fabric (NVSwitch)"
    pynvml, skip = nvml_or_skip(ctx, "fabric", title)
    if skip:
        return skip
    findings: list[Finding] = []
    statuses: list[CheckStatus] = []
    registered: list[int] = []
    off_fabric: list[int] = []
    for gpu in (g for g in ctx.judged_gpus if g.handle is not None):
        info, err = fabric_info(pynvml, gpu.handle)
        if info is None:
            findings.append(_not_readable(gpu, "fabric state", err or "no answer"))
            continue
        state, status = info
        if state == 0:
            off_fabric.append(gpu.index)
        elif state == FABRIC_COMPLETED and status == 0:
            registered.append(gpu.index)
            statuses.append(CheckStatus.PASS)
        else:
            figures = {
                **gpu_identity(gpu),
                "state": FABRIC_STATES.get(state, str(state)),
                "status": return_name(pynvml, status),
            }
            findings.append(Finding(code="fabric.not_registered", figures=figures))
            statuses.append(CheckStatus.FAIL)
    if registered:
        findings.insert(0, Finding(code="fabric.registered", figures={"gpus": registered}))
    if off_fabric:
        findings.append(Finding(code="fabric.not_on_fabric", figures={"gpus": off_fabric}))
    findings.append(XID)
    verdict = worst(statuses) if statuses else CheckStatus.SKIP
    hint = [FABRIC_HINT] if verdict is CheckStatus.FAIL else []
    return found("fabric", title, verdict, findings, hint)


P2P_HINT = Finding(code="p2p.fix_no_peer")
PCIE_HINT = Finding(code="p2p.fix_pcie")


def check_p2p(ctx: ValidateContext) -> CheckResult:
    """Peer access between every pair of GPUs (torch, by CUDA ordinal), the path it takes
    (NVML's P2P status over NVLink) and the active NVLinks of each ordinal's GPU. On an SXM
    SKU (nvlink_reference.py) a pair whose peer access is not over NVLink is a FAIL."""
    title = "P2P / NVLink"
    if ctx.device == "cpu":
        return skipped("p2p", title, CPU_SKIP)
    torch = ctx.torch.module
    count = ctx.torch.cuda_gpu_count
    if torch is None or count < 2:
        return skipped("p2p", title, Finding(code="p2p.too_few_gpus", figures={"count": count}))
    peer = torch.cuda.can_device_access_peer
    pairs = {f"{a}->{b}": bool(peer(a, b)) for a in range(count) for b in range(count) if a != b}
    nvml_index, nvlinks, links = _nvlinks_by_ordinal(ctx.nvml, ctx.torch.cuda_uuids())
    missing = [p for p, ok in pairs.items() if not ok]
    paths = _peer_paths(ctx.nvml, nvml_index, pairs)
    figures = {
        "pairs": len(pairs),
        "with_access": len(pairs) - len(missing),
        "missing": missing,
        # None: NVML gave no pair's path
        "over_nvlink": sum(path == "nvlink" for path in paths.values()) if paths else None,
        "links": links,
    }
    findings = [Finding(code="p2p.peer_access", figures=figures)]
    pcie = _pcie_on_sxm(ctx.nvml, paths)
    if pcie is not None:
        findings.append(pcie)
    data: dict[str, Any] = {
        "peer_access": pairs,
        "active_nvlinks": nvlinks,
        "nvml_index": nvml_index,
        "paths": {f"{a}-{b}": path for (a, b), path in paths.items()},
    }
    if pcie is not None:
        return found("p2p", title, CheckStatus.FAIL, findings, PCIE_HINT, **data)
    if missing:
        return found("p2p", title, CheckStatus.WARN, findings, P2P_HINT, **data)
    return found("p2p", title, CheckStatus.PASS, findings, **data)


def _peer_paths(
    state: NvmlState, nvml_index: dict[int, int | None], pairs: dict[str, bool]
) -> dict[tuple[int, int], str]:
    """Per pair of NVML GPUs both visible to torch: 'nvlink' (NVML's P2P status over NVLink
    is OK), 'pcie' (peer access, not over NVLink), 'none' (no peer access) or 'unknown'."""
    pynvml = state.module
    if not state.ok or pynvml is None:
        return {}
    gpus = {g.index: g for g in state.gpus if g.handle is not None}
    by_ordinal = {o: i for o, i in nvml_index.items() if i is not None and i in gpus}
    paths: dict[tuple[int, int], str] = {}
    for a, ia in by_ordinal.items():
        for b, ib in by_ordinal.items():
            if a >= b:
                continue
            status, err = call(
                pynvml.nvmlDeviceGetP2PStatus,
                gpus[ia].handle,
                gpus[ib].handle,
                pynvml.NVML_P2P_CAPS_INDEX_NVLINK,
            )
            accessible = pairs.get(f"{a}->{b}", False) or pairs.get(f"{b}->{a}", False)
            if err is not None:
                path = "unknown"
            elif status == pynvml.NVML_P2P_STATUS_OK:
                path = "nvlink"
            else:
                path = "pcie" if accessible else "none"
            paths[(ia, ib)] = path
    return paths


def _pcie_on_sxm(state: NvmlState, paths: dict[tuple[int, int], str]) -> Finding | None:
    """The pairs of SXM GPUs whose peer access is not over NVLink, as one finding naming
    each GPU of them (None: every SXM pair is on NVLink, or no GPU is SXM)."""
    gpus = {g.index: g for g in state.gpus}
    off = [
        [a, b]
        for (a, b), path in sorted(paths.items())
        if path in ("pcie", "none") and nvlink_sku(gpus[a].name) and nvlink_sku(gpus[b].name)
    ]
    if not off:
        return None
    named = sorted({i for pair in off for i in pair})
    sku = nvlink_sku(gpus[named[0]].name)
    figures = {
        "pairs": off,
        "gpus": named,
        "uuids": [gpus[i].uuid for i in named],
        "serials": [gpus[i].serial for i in named],
        "sku": sku.model if sku else None,
    }
    return Finding(code="p2p.pcie_only", figures=figures)


def _nvlinks_by_ordinal(
    state: NvmlState, torch_uuids: list[str | None]
) -> tuple[dict[int, int | None], dict[int, int], list[list[int | None]] | None]:
    """({ordinal: NVML index}, {ordinal: active NVLinks}, [[ordinal, NVML index, active
    links], ...] for the finding; None: NVML unavailable), the NVML GPU of each CUDA ordinal
    found by UUID: under a CUDA_VISIBLE_DEVICES subset or reorder, ordinal i is not NVML GPU
    i."""
    if not state.ok or state.module is None:
        return {}, {}, None
    pynvml = state.module
    per_nvml = {g.index: len(link_states(pynvml, g)[0]) for g in state.gpus if g.handle}
    nvml_index = dict(enumerate(nvml_indices(torch_uuids, [g.uuid for g in state.gpus])))
    active = {o: per_nvml[i] for o, i in nvml_index.items() if i is not None and i in per_nvml}
    return nvml_index, active, [[o, i, active.get(o)] for o, i in nvml_index.items()]
