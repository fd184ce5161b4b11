"""CPU ranks bound to cores of their own (torchscale/rank/worker/cpu_binding.py): the split,
the decision carried from the config through the torchrun command, and a real bind in a child
process (the test process itself is never bound)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from torchscale.contracts.cpu_binding import BIND_TO_CORES, CPU_BINDING_ENV
from torchscale.orchestration.launch.torchrun import torchrun_command
from torchscale.rank.worker import cpu_binding
from torchscale.rank.worker.cpu_binding import bind_cpu_rank, core_set

REPO = Path(__file__).resolve().parents[2]


def test_the_cores_are_split_into_equal_disjoint_sets() -> None:
    cores = [0, 1, 2, 3, 4, 5, 6, 7]
    sets = [core_set(cores, r, 4) for r in range(4)]
    assert sets == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert core_set([3, 1, 2], 1, 2) == (2,)  # sorted; the odd core left to nobody
    assert core_set([0, 1], 0, 4) is None  # more ranks than cores: none is its own
    assert core_set([0, 1], 2, 2) is None  # a local rank outside the node


def test_nothing_is_bound_unless_the_launch_asks() -> None:
    assert bind_cpu_rank({}) is None
    assert bind_cpu_rank({CPU_BINDING_ENV: "none"}) is None


def test_ranks_that_outnumber_the_cores_are_not_bound_and_say_why() -> None:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    env = {CPU_BINDING_ENV: BIND_TO_CORES, "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": str(cores + 1)}
    binding = bind_cpu_rank(env)
    assert binding is not None and binding.cpus is None
    assert binding.note["not_bound"] in ("ranks_share_cores", "no_sched_setaffinity")


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux affinity calls")
@pytest.mark.slow  # starts a child process
def test_a_rank_binds_itself_and_its_later_threads_to_its_cores() -> None:
    allowed = sorted(os.sched_getaffinity(0))
    ranks = len(allowed)  # one core each
    script = (
        "import json, os, threading\n"
        "from torchscale.rank.worker.cpu_binding import bind_cpu_rank\n"
        "b = bind_cpu_rank()\n"
        "seen = {}\n"
        "t = threading.Thread(target=lambda: seen.update(cpus=sorted(os.sched_getaffinity(0))))\n"
        "t.start(); t.join()\n"
        "print(json.dumps({'cpus': list(b.cpus), 'before': b.cores_before, 'note': b.note,\n"
        "                  'main': sorted(os.sched_getaffinity(0)), 'thread': seen['cpus']}))\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        CPU_BINDING_ENV: BIND_TO_CORES,
        "LOCAL_RANK": str(ranks - 1),
        "LOCAL_WORLD_SIZE": str(ranks),
    }
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["cpus"] == seen["main"] == seen["thread"] == [allowed[-1]]
    assert seen["before"] == len(allowed)
    assert seen["note"] == {"local_rank": ranks - 1, "cores": [allowed[-1]]}


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux affinity calls")
def test_a_thread_binds_itself_and_its_later_threads_to_its_cores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same in this process, the binding done by a thread of its own (Linux binds the
    calling thread): its cores, the thread it starts after, and this one left unbound."""
    allowed = sorted(os.sched_getaffinity(0))
    ranks = len(allowed)  # one core each
    monkeypatch.setattr(cpu_binding, "_DONE", [])
    env = {CPU_BINDING_ENV: BIND_TO_CORES, "LOCAL_RANK": str(ranks - 1)}
    env["LOCAL_WORLD_SIZE"] = str(ranks)
    seen: dict[str, object] = {}

    def rank() -> None:
        seen["binding"] = bind_cpu_rank(env)
        seen["main"] = sorted(os.sched_getaffinity(0))
        later = threading.Thread(target=lambda: seen.update(thread=sorted(os.sched_getaffinity(0))))
        later.start()
        later.join()

    thread = threading.Thread(target=rank)
    thread.start()
    thread.join(10)
    binding = seen["binding"]
    assert isinstance(binding, cpu_binding.CoreBinding) and binding.cpus is not None
    assert list(binding.cpus) == seen["main"] == seen["thread"] == [allowed[-1]]
    assert binding.cores_before == len(allowed)
    assert binding.note == {"local_rank": ranks - 1, "cores": [allowed[-1]]}
    assert cpu_binding.current() == binding
    assert sorted(os.sched_getaffinity(0)) == allowed  # this thread: as it was


def test_the_torchrun_command_carries_the_decision(tmp_path: Path) -> None:
    common = dict(nproc=2, device="cpu", log_dir=tmp_path, base_env={}, omp_num_threads=1)
    bound = torchrun_command("torchscale.rank.worker", [], cpu_binding=True, **common)
    free = torchrun_command("torchscale.rank.worker", [], **common)
    assert bound.env[CPU_BINDING_ENV] == BIND_TO_CORES
    assert CPU_BINDING_ENV not in free.env
