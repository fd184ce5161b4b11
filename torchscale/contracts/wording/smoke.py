"""Words for validate's smoke test (orchestration/validate/smoke.py judges one torchrun of
real ranks: an all_reduce and an all_gather whose results are checked)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscale.contracts.wording import Phrases

F = Mapping[str, Any]


def _passed(f: F) -> str:
    world = f["world"]
    bandwidth = "1 rank: no bus bandwidth" if world == 1 else f"busbw {f['busbw_gbps']:.2f} GB/s"
    return (
        f"all_reduce of {f['bytes'] // 2**20} MiB correct on {world} rank(s): "
        f"{f['seconds_per_all_reduce'] * 1e3:.2f} ms each, {bandwidth}; all_gather correct; "
        f"{f['wall_s']:.1f} s wall"
    )


_LOGS = "full log: {log} (each rank's output under {ranks_dir})"


PHRASES: Phrases = {
    "smoke.passed": _passed,
    "smoke.hung": "no result after {wall_s:.0f} s (hung rendezvous or collective); killed",
    "smoke.exited": "torchrun exited with {returncode}: {cause}",
    "smoke.wrong_results": (
        "WRONG RESULTS: {wrong_elements} wrong all_reduce element(s) (expected "
        "{expected_value}), all_gather ranks {all_gather_ranks}"
    ),
    "smoke.too_few_ranks": "ran on {world} rank(s), expected {planned}",
    "smoke.quick": "--quick: live torchrun test not run",
    "smoke.no_torch": "needs torch, which could not be imported",
    "smoke.fix_logs": _LOGS,
    "smoke.fix_hung": (
        _LOGS + "; check firewall/loopback and NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME"
    ),
    "smoke.fix_corrupt": (
        "the collective library returns corrupt data: check the GPU (ECC), driver and NCCL "
        "version before training on this node"
    ),
    "smoke.fix_ranks": (_LOGS + "; check CUDA_VISIBLE_DEVICES and that no other job holds a GPU"),
}
