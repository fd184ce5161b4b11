"""Words for validate's smoke test (orchestration/validate/smoke.py judges one torchrun of
real ranks: an all_reduce and an all_gather whose results are checked)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

F = Mapping[str, Any]


def _passed(f: F) -> str:
    world = f["world"]
    bandwidth = "1 rank: no bus bandwidth" if world == 1 else f"busbw {f['busbw_gbps']:.2f} GB/s"
    return (
        f"all_reduce of {f['bytes'] // 2**20} MiB correct on {world} rank(s): "
        f"{f['seconds_per_all_reduce'] * 1e3:.2f} ms each, {bandwidth}; all_gather correct; "
        f"{f['wall_s']:.1f} s wall"
    )


def _logs(f: F) -> str:
    return f"full log: {f['log']} (each rank's output under {f['ranks_dir']})"


PHRASES: dict[str, Callable[[F], str]] = {
    "smoke.passed": _passed,
    "smoke.hung": lambda f: (
        f"no result after {f['wall_s']:.0f} s (hung rendezvous or collective); killed"
    ),
    "smoke.exited": lambda f: f"torchrun exited with {f['returncode']}: {f['cause']}",
    "smoke.wrong_results": lambda f: (
        f"WRONG RESULTS: {f['wrong_elements']} wrong all_reduce element(s) "
        f"(expected {f['expected_value']}), all_gather ranks {f['all_gather_ranks']}"
    ),
    "smoke.too_few_ranks": lambda f: f"ran on {f['world']} rank(s), expected {f['planned']}",
    "smoke.quick": lambda f: "--quick: live torchrun test not run",
    "smoke.no_torch": lambda f: "needs torch, which could not be imported",
    "smoke.fix_logs": _logs,
    "smoke.fix_hung": lambda f: (
        f"{_logs(f)}; check firewall/loopback and NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME"
    ),
    "smoke.fix_corrupt": lambda f: (
        "the collective library returns corrupt data: check the GPU (ECC), driver "
        "and NCCL version before training on this node"
    ),
    "smoke.fix_ranks": lambda f: (
        f"{_logs(f)}; check CUDA_VISIBLE_DEVICES and that no other job holds a GPU"
    ),
}
