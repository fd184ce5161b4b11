"""The probe inside a user's own job (torchscale/rank/own_job/): the sitecustomize carrier and
its chain, the steps it finds, the stop at the agreed step, and that it changes nothing the
job computes and never crashes it. The user's scripts run as real `python` processes with the
carrier first on PYTHONPATH, as the host runs them."""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.processes import REPO_ROOT, processes_mentioning
from torchscale.rank.own_job import CARRIER_DIR, read_rank_files
from torchscale.rank.own_job import probe as probe_module
from torchscale.rank.own_job.probe import CALIBRATION_REPS
from torchscale.rank.own_job.reading import OwnJobMeasurement, adapter
from torchscale.rank.own_job.steps import Backward, Clock, StepMarks, batch_counts, resolve

# a user's loop as its author writes it: options only to vary what the probe must handle
TRAIN = textwrap.dedent(
    """\
    import argparse
    import os
    import signal
    import sys
    import time

    import torch
    from torch.utils.data import DataLoader, TensorDataset

    parser = argparse.ArgumentParser()
    parser.add_argument("--accum", type=int, default=1)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--no-optimizer", action="store_true")
    parser.add_argument("--double", action="store_true")
    parser.add_argument("--eval", action="store_true")
    parser.add_argument("--sigterm-after", type=int, default=0)
    parser.add_argument("--closure-ms", type=float, default=0.0)
    parser.add_argument("--mark-step", action="store_true")
    parser.add_argument("--dropout", type=float, default=0.0)
    args = parser.parse_args()

    class Wrapped(torch.optim.SGD):
        def step(self, closure=None):  # a subclass calling super(): both classes wrapped
            return super().step(closure)

    torch.manual_seed(0)
    layers = [torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)]
    if args.dropout:  # masks drawn from torch's global stream every forward
        layers.insert(2, torch.nn.Dropout(args.dropout))
    model = torch.nn.Sequential(*layers)
    head = torch.nn.Linear(1, 1)
    if args.double:
        torch.optim.SGD(head.parameters(), lr=0.01)  # a parent-class instance exists
        opt = Wrapped(model.parameters(), lr=0.01)
        other = torch.optim.SGD(head.parameters(), lr=0.01)  # a second optimizer
    else:
        opt, other = torch.optim.SGD(model.parameters(), lr=0.01), None
    n = 16 * args.accum * args.steps
    data = TensorDataset(torch.randn(n, 8), torch.randn(n, 1))
    loader = DataLoader(data, batch_size=16)
    held_out = DataLoader(TensorDataset(torch.randn(40, 8), torch.randn(40, 1)), batch_size=10)
    for i, (x, y) in enumerate(loader):
        if args.closure_ms:  # Lightning's way: forward and backward inside step(closure)
            def closure():
                time.sleep(args.closure_ms / 1000)  # a slow forward
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
                return loss
            loss = opt.step(closure)
            opt.zero_grad()
            print(f"loss {loss.item():.8f}", flush=True)
            continue
        out = model(x)
        if other is not None:
            out = head(out)
        loss = torch.nn.functional.mse_loss(out, y) / args.accum
        loss.backward()
        if args.mark_step:  # a hand-written update, no torch.optim: the step marked by hand
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.01 * p.grad
                    p.grad = None
            import torchscale

            torchscale.mark_step()
            print(f"loss {loss.item():.8f}", flush=True)
            continue
        if (i + 1) % args.accum == 0 and not args.no_optimizer:
            opt.step()
            if other is not None:
                other.step()
                other.zero_grad()
            opt.zero_grad()
            print(f"loss {loss.item():.8f}", flush=True)
            if (i + 1) // args.accum == args.sigterm_after:
                os.kill(os.getpid(), signal.SIGTERM)  # the job killed from outside
            if args.eval:
                with torch.no_grad():
                    for vx, vy in held_out:
                        model(vx)
    print("probe loaded:", "torchscale.rank.own_job.probe" in sys.modules)
    print("finished")
    """
)


def run_job(
    tmp_path: Path,
    args: list[str],
    env: dict[str, str] | None,
    carrier_only: bool = False,
    site: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """`python train.py ARGS` with the carrier first on PYTHONPATH and `env` added (None: no
    probe settings at all); `carrier_only`: nothing else on PYTHONPATH (the carrier finds its
    own torchscale); `site`: a folder after them, whose sitecustomize the carrier chains to."""
    path = tmp_path / "train.py"
    path.write_text(TRAIN)
    full = {k: v for k, v in os.environ.items() if not k.startswith("TORCHSCALE_OWN_JOB")}
    path_entries = [str(CARRIER_DIR)] + ([] if carrier_only else [str(REPO_ROOT)])
    path_entries += [str(site)] if site is not None else []
    full["PYTHONPATH"] = os.pathsep.join(path_entries)
    full |= env or {}
    return subprocess.run(
        [sys.executable, str(path), *args],
        env=full,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def probe_env(folder: Path, warmup: int, steps: int, stop: bool) -> dict[str, str]:
    return {
        "TORCHSCALE_OWN_JOB_DIR": str(folder),
        "TORCHSCALE_OWN_JOB_WARMUP": str(warmup),
        "TORCHSCALE_OWN_JOB_STEPS": str(steps),
        "TORCHSCALE_OWN_JOB_STOP": "1" if stop else "0",
    }


def losses(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("loss ")]


def only_rank(folder: Path) -> OwnJobMeasurement:
    ranks, findings = read_rank_files(folder)
    assert findings == []
    assert [r.rank for r in ranks] == [0]
    assert isinstance(ranks[0], OwnJobMeasurement)
    return ranks[0]


def assert_phases_add_up(rank: OwnJobMeasurement) -> None:
    (window,) = rank.windows
    assert window.phases is not None
    for i, step in enumerate(window.step_s):
        parts = [window.phases[p][i] or 0.0 for p in window.phases]
        assert sum(parts) == pytest.approx(step, rel=1e-6, abs=1e-9)
        assert window.phases["backward"][i] > 0  # type: ignore[operator]
        assert window.phases["data"][i] > 0  # type: ignore[operator]


# ----------------------------------------------------------------------------- the carrier


def test_the_carrier_holds_only_sitecustomize() -> None:
    assert sorted(p.name for p in CARRIER_DIR.iterdir() if p.name != "__pycache__") == [
        "sitecustomize.py"
    ]


CHECK = (
    "import sys; print('chained' if 'fake_site_ran' in sys.modules else 'not chained'); "
    "print('torch' in sys.modules, 'torchscale.rank.own_job.probe' in sys.modules); "
    "print(sorted(type(f).__name__ for f in sys.meta_path if 'Torch' in type(f).__name__))"
)


@pytest.mark.parametrize("probe_on", [True, False])
@pytest.mark.slow  # starts a child process
def test_an_existing_sitecustomize_still_runs_and_nothing_heavy_is_imported(
    tmp_path: Path, probe_on: bool
) -> None:
    fake = tmp_path / "site"
    fake.mkdir()
    (fake / "sitecustomize.py").write_text("import sys\nsys.modules['fake_site_ran'] = sys\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHSCALE_OWN_JOB")}
    env["PYTHONPATH"] = os.pathsep.join([str(CARRIER_DIR), str(fake), str(REPO_ROOT)])
    if probe_on:
        env["TORCHSCALE_OWN_JOB_DIR"] = str(tmp_path / "out")
    done = subprocess.run(
        [sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    chained, imported, watch = done.stdout.splitlines()
    assert chained == "chained"
    assert imported == "False False"  # a process that never imports torch: no probe, no torch
    assert watch == ("['_TorchWatch']" if probe_on else "[]")
    assert not (tmp_path / "out").exists()


def the_carrier() -> ModuleType:
    """The carrier's code as a module of another name: loaded, it installs and chains nothing."""
    spec = importlib.util.spec_from_file_location(
        "carrier_under_test", CARRIER_DIR / "sitecustomize.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("probe_on", [True, False])
def test_the_carrier_chains_and_watches_only_for_torch_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, probe_on: bool
) -> None:
    """The carrier's two steps run here, on a copy of the import state: it chains to the next
    `sitecustomize` on the path (its own folder left out of the search, the path as it was
    after), and with the probe's folder set it puts a watch for torch first on the meta path,
    which answers for torch alone, once, with torch's own spec whose loader activates the probe
    after torch's: nothing imported, no folder made."""
    carrier = the_carrier()
    fake = tmp_path / "site"
    fake.mkdir()
    (fake / "sitecustomize.py").write_text("import sys\nsys.modules['fake_site_ran'] = sys\n")
    monkeypatch.setattr(sys, "path", [str(CARRIER_DIR), str(fake), *sys.path])
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    for name in ("sitecustomize", "fake_site_ran", "torch"):  # each put back as it was after
        monkeypatch.setitem(sys.modules, name, sys)
        del sys.modules[name]
    sys.modules["sitecustomize"] = carrier
    if probe_on:
        monkeypatch.setenv("TORCHSCALE_OWN_JOB_DIR", str(tmp_path / "out"))
    else:
        monkeypatch.delenv("TORCHSCALE_OWN_JOB_DIR", raising=False)
    path_before = list(sys.path)
    carrier._install()
    carrier._chain()
    assert "fake_site_ran" in sys.modules  # chained
    assert sys.path == path_before
    watches = [f for f in sys.meta_path if type(f).__name__ == "_TorchWatch"]
    assert len(watches) == (1 if probe_on else 0)
    if probe_on:
        (watch,) = watches
        assert watch.find_spec("numpy") is None and watch in sys.meta_path
        spec = watch.find_spec("torch")
        assert spec is not None and spec.name == "torch"
        assert type(spec.loader).__name__ == "_TorchLoader"
        assert watch not in sys.meta_path  # once
    assert "torch" not in sys.modules
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------- a rank's steps


def _check_loop_measured_and_stopped(out: Path, loss_lines: int, parameters: int) -> None:
    """Checks the losses printed and the record of the loop stopped after 2 + 4 steps."""
    # 2 + 4 optimizer steps of the 12: the 6th ends inside `step`, before its loss is printed
    assert loss_lines == 2 + 4 - 1
    rank = only_rank(out)
    assert (rank.steps, len(rank.warmup_s), rank.optimizer_steps, rank.stopped) == (4, 2, 6, True)
    assert rank.samples_per_step == [16 * 3] * 4  # 3 micro-batches of 16
    assert rank.tokens_per_step == [None] * 4  # float features: no tokens
    assert rank.window_edge_steps == 0 and rank.timing == "perf_counter"
    assert_phases_add_up(rank)
    (window,) = rank.windows
    assert window.wall_s == pytest.approx(sum(window.step_s))
    assert window.cpu_time_s is not None and len(window.cpu_time_s) == 4
    # the cell's calibration, timed once after the measured steps by the rank's own thread
    assert window.calibration_timer == "thread_time"
    assert window.calibration_s is not None and window.calibration_wall_s is not None
    assert len(window.calibration_s) == len(window.calibration_wall_s) == CALIBRATION_REPS
    assert all(s > 0 for s in window.calibration_s)
    assert window.calibration_cost_s is not None and window.calibration_cost_s > 0
    # FLOPs are counted on step 2 with one more warm-up step after it: not with 2
    assert rank.flops_per_step is None
    assert (
        rank.flops_note is not None and rank.flops_note.code == "unavailable.own_job_flops_warmup"
    )
    assert rank.parameters == parameters


@pytest.mark.slow  # starts a child process
def test_a_loop_is_measured_and_stopped_at_the_agreed_step(tmp_path: Path) -> None:
    """Gradient accumulation (3 micro-batches of 16): one step per optimizer step, its
    samples summed over the micro-batches; W + N steps, then rc 0 and nothing after. The
    optimizer is a subclass whose step calls super() (the hooks fire twice, nested) and a
    second optimizer steps after it: the first optimizer seen is the clock, each of its
    outermost steps one step. An evaluation after each step (grad disabled) is neither
    data wait nor samples."""
    out = tmp_path / "out"
    args = ["--accum", "3", "--double", "--eval"]
    done = run_job(tmp_path, args, probe_env(out, warmup=2, steps=4, stop=True))
    assert done.returncode == 0, done.stderr
    assert "finished" not in done.stdout
    # both optimizers' parameters: 8x16 + 16 + 16x1 + 1, and the head's 1 + 1
    _check_loop_measured_and_stopped(out, len(losses(done.stdout)), parameters=163)


# ------------------------------------------------------- the same steps, marked in this process


@dataclass
class Ran:
    """A loop run here: the losses it got to, SystemExit's code where the probe stopped it
    (None: it ran to its end), and the parameters of every model an optimizer stepped."""

    losses: list[float]
    exit: int | str | None
    parameters: int


def train_here(
    steps: int = 12,
    accum: int = 1,
    double: bool = False,
    evaluate: bool = False,
    closure_s: float = 0.0,
    mark_step: bool = False,
    dropout: float = 0.0,
    no_optimizer: bool = False,
    at_end: Callable[[], object] | None = None,
    chore_s: float = 0.0,
) -> Ran:
    """TRAIN's loop, with its options, run in this process (torch's random state as it was
    after); `at_end`: called where the loop ran to its end, its models and optimizers still
    alive (as a job's are at its exit); `chore_s`: the loop's own work after each optimizer
    step (a checkpoint's), outside the model."""
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    import torchscale

    class Wrapped(torch.optim.SGD):
        def step(self, closure: Any = None) -> Any:  # calls super(): both classes' hooks
            return super().step(closure)

    losses: list[float] = []
    with torch.random.fork_rng():
        torch.manual_seed(0)
        layers = [torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)]
        if dropout:
            layers.insert(2, torch.nn.Dropout(dropout))
        model = torch.nn.Sequential(*layers)
        head = torch.nn.Linear(1, 1)
        trained = [model]
        if double:
            torch.optim.SGD(head.parameters(), lr=0.01)
            opt: torch.optim.SGD = Wrapped(model.parameters(), lr=0.01)
            other: torch.optim.SGD | None = torch.optim.SGD(head.parameters(), lr=0.01)
            trained.append(head)
        else:
            opt, other = torch.optim.SGD(model.parameters(), lr=0.01), None
        parameters = sum(p.numel() for m in trained for p in m.parameters())
        n = 16 * accum * steps
        loader = DataLoader(TensorDataset(torch.randn(n, 8), torch.randn(n, 1)), batch_size=16)
        held_out = DataLoader(TensorDataset(torch.randn(40, 8), torch.randn(40, 1)), batch_size=10)
        try:
            for i, (x, y) in enumerate(loader):
                if closure_s:

                    def closure(x: Any = x, y: Any = y) -> Any:
                        time.sleep(closure_s)  # a slow forward
                        loss = torch.nn.functional.mse_loss(model(x), y)
                        loss.backward()
                        return loss

                    losses.append(opt.step(closure).item())
                    opt.zero_grad()
                    continue
                out = model(x)
                if other is not None:
                    out = head(out)
                loss = torch.nn.functional.mse_loss(out, y) / accum
                loss.backward()
                if mark_step:
                    with torch.no_grad():
                        for p in model.parameters():
                            p -= 0.01 * p.grad
                            p.grad = None
                    torchscale.mark_step()
                    losses.append(loss.item())
                    continue
                if (i + 1) % accum == 0 and not no_optimizer:
                    opt.step()
                    if other is not None:
                        other.step()
                        other.zero_grad()
                    opt.zero_grad()
                    losses.append(loss.item())
                    if evaluate:
                        with torch.no_grad():
                            for vx, _ in held_out:
                                model(vx)
                    time.sleep(chore_s)
        except SystemExit as stopped:
            return Ran(losses, stopped.code, parameters)
        if at_end is not None:
            at_end()
    return Ran(losses, None, parameters)


@contextlib.contextmanager
def probe_here(env: dict[str, str]) -> Iterator[probe_module.Probe]:
    """The probe installed in this process as the carrier installs it in a job's (`env`: the
    host's settings), and taken out at the block's end: torch's global optimizer hooks
    removed, backward, the DataLoader iterator's `__next__` and the collectives put back, its
    exit and SIGTERM handlers dropped, a FLOP count left open closed."""
    import torch
    import torch.utils.data.dataloader as dataloader
    from torch.optim import optimizer as optim

    handles: list[Any] = []
    sigterm = signal.getsignal(signal.SIGTERM)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch.autograd, "backward", torch.autograd.backward)
        iterator = dataloader._BaseDataLoaderIter
        patch.setattr(iterator, "__next__", iterator.__next__)
        for name in probe_module.COLLECTIVES:
            if hasattr(torch.distributed, name):
                patch.setattr(torch.distributed, name, getattr(torch.distributed, name))
        patch.delenv("RANK", raising=False)
        patch.setattr(probe_module, "_FAILED", False)
        probe = probe_module.Probe(probe_module.Settings.from_env(env))
        try:
            with pytest.MonkeyPatch.context() as registering:  # the hooks' handles kept
                for when in ("pre", "post"):
                    name = f"register_optimizer_step_{when}_hook"
                    register = getattr(optim, name)
                    registering.setattr(optim, name, lambda f, r=register: handles.append(r(f)))
                probe.install()
            yield probe
        finally:
            for handle in handles:
                handle.remove()
            atexit.unregister(probe.at_exit)
            signal.signal(signal.SIGTERM, sigterm)
            if probe.flops is not None:
                probe.flops.unfinished()
            probe.telemetry.stop()


def test_a_loop_is_measured_and_stopped_at_the_agreed_step_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The slow test's loop and checks with the probe's hooks in this process: gradient
    accumulation, a subclass optimizer calling super(), a second optimizer and an evaluation
    after each step; W + N steps, then SystemExit(0) from inside the last step."""
    out = tmp_path / "out"
    with probe_here(probe_env(out, warmup=2, steps=4, stop=True)):
        ran = train_here(accum=3, double=True, evaluate=True)
    assert ran.exit == 0
    _check_loop_measured_and_stopped(out, len(ran.losses), ran.parameters)


# a site's own sitecustomize, chained after the carrier, that takes one draw from torch's global
# stream after the DRAW_AT-th optimizer step: what the probe must never do
DRAW_AT = 3
DRAWING_SITE = textwrap.dedent(
    f"""\
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook

    calls = []

    def draw(optimizer, args, kwargs):
        calls.append(1)
        if len(calls) == {DRAW_AT}:
            torch.rand(1)

    register_optimizer_step_post_hook(draw)
    """
)


@pytest.mark.slow  # starts a child process
def test_the_probe_never_changes_the_losses(tmp_path: Path) -> None:
    """Same seed, same losses bare and under the probe (which here lets the job finish and
    writes at exit every step after the warm-up); bare, with the carrier on the path but no
    settings, the probe is never loaded. Dropout draws its masks from torch's global stream,
    so the comparison can fail: one draw there (a site's sitecustomize, chained after the
    carrier, the probe active too) changes every loss after it and none before, as a draw by
    the probe would."""
    dropout = ["--dropout", "0.2"]
    bare = run_job(tmp_path, dropout, None)
    out = tmp_path / "out"
    probed = run_job(tmp_path, dropout, probe_env(out, warmup=3, steps=0, stop=False))
    assert bare.returncode == 0 and probed.returncode == 0, probed.stderr
    assert len(losses(bare.stdout)) == 12
    assert losses(probed.stdout) == losses(bare.stdout)
    assert "probe loaded: False" in bare.stdout and "probe loaded: True" in probed.stdout
    site = tmp_path / "drawing_site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(DRAWING_SITE)
    drawn_env = probe_env(tmp_path / "drawn", warmup=3, steps=0, stop=False)
    drawn = run_job(tmp_path, dropout, drawn_env, site=site)
    assert drawn.returncode == 0 and "probe loaded: True" in drawn.stdout, drawn.stderr
    before, after = losses(bare.stdout), losses(drawn.stdout)
    assert after[:DRAW_AT] == before[:DRAW_AT]
    assert all(a != b for a, b in zip(after[DRAW_AT:], before[DRAW_AT:], strict=True))
    rank = only_rank(out)
    assert (rank.steps, len(rank.warmup_s), rank.stopped) == (9, 3, False)
    assert rank.samples_per_step == [16] * 9
    assert_phases_add_up(rank)
    # step 2 counted (the losses above unchanged by it): 2 x 16 x (8x16 + 16x1) forward, as
    # much for the weights' gradients, 2 x 16 x 16 for the hidden activations' (x needs none)
    assert rank.flops_per_step == 2 * 16 * 144 * 2 + 2 * 16 * 16
    assert rank.flops_by_dtype == {"float32": rank.flops_per_step}
    assert rank.parameters == 161  # SGD without momentum keeps no state tensor
    # the rank's sampler ran over the measured steps, as a cell's: its process on CPU
    assert rank.telemetry is not None and rank.telemetry.device == "cpu"
    assert rank.telemetry.samples >= 2 and rank.telemetry.rss_bytes is not None
    assert rank.telemetry.unavailable["gpu_util_pct"].code == "telemetry.cpu_no_gpu"
    assert rank.static == {
        "parameter_bytes": 644,
        "gradient_bytes": 644,
        "optimizer_state_bytes": 0,
    }


def test_the_models_forward_is_marked_apart_from_the_loops_own_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model (the module holding the optimizer's parameters) is hooked at the first
    step's end: its training forward is `model_forward_s`, inside the forward phase; the loop's
    own 20 ms after each optimizer step, and an evaluation's forward with grad off, are not."""
    chore_s = 0.02
    out = tmp_path / "out"
    with probe_here(probe_env(out, warmup=2, steps=4, stop=True)) as probe:
        train_here(evaluate=True, chore_s=chore_s)
        assert len(probe.model_hooks) == 2  # a pre and a post hook on the one Sequential
    (window,) = only_rank(out).windows
    assert window.phases is not None and window.model_forward_s is not None
    forward = window.phases["forward"]
    assert len(window.model_forward_s) == len(forward) == 4
    for model_s, forward_s in zip(window.model_forward_s, forward, strict=True):
        assert model_s is not None and forward_s is not None
        assert 0 < model_s < 0.005  # a 8x16x1 MLP on 16 samples, as marked
        assert forward_s - model_s >= chore_s * 0.9  # the chore is the loop's, not the model's


def test_the_calibration_after_the_measured_steps_changes_no_loss_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job measured for 4 steps and let run on: the calibration timed after them draws its
    matrix from a generator of its own and gives the job back its thread count, so every later
    loss (dropout drawing from torch's global stream) is the bare run's."""
    import torch

    threads = torch.get_num_threads()
    bare = train_here(dropout=0.2)
    out = tmp_path / "out"
    with probe_here(probe_env(out, warmup=2, steps=4, stop=False)):
        probed = train_here(dropout=0.2)
    assert probed.exit is None and probed.losses == bare.losses
    assert torch.get_num_threads() == threads
    (window,) = only_rank(out).windows
    assert window.calibration_s is not None and len(window.calibration_s) == CALIBRATION_REPS


def test_the_probe_never_changes_the_losses_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same seed, same losses bare and under the probe's hooks in this process (measured to
    the loop's end, written at its exit); dropout draws from torch's global stream, and one
    draw there after step DRAW_AT (a post hook of the job's own, beside the probe's) changes
    every loss after it and none before, as a draw by the probe would."""
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook

    bare = train_here(dropout=0.2)
    assert bare.exit is None and len(bare.losses) == 12
    out = tmp_path / "out"
    with probe_here(probe_env(out, warmup=3, steps=0, stop=False)) as probe:
        probed = train_here(dropout=0.2, at_end=probe.at_exit)
    assert probed.exit is None and probed.losses == bare.losses
    calls: list[int] = []

    def draw(optimizer: Any, args: Any, kwargs: Any) -> None:
        calls.append(1)
        if len(calls) == DRAW_AT:
            torch.rand(1)

    handle = register_optimizer_step_post_hook(draw)
    try:
        with probe_here(probe_env(tmp_path / "drawn", 3, 0, stop=False)):
            drawn = train_here(dropout=0.2)
    finally:
        handle.remove()
    assert drawn.losses[:DRAW_AT] == bare.losses[:DRAW_AT]
    after = zip(drawn.losses[DRAW_AT:], bare.losses[DRAW_AT:], strict=True)
    assert all(a != b for a, b in after)
    rank = only_rank(out)
    assert (rank.steps, len(rank.warmup_s), rank.stopped) == (12 - 3, 3, False)
    assert rank.samples_per_step == [16] * (12 - 3)
    assert_phases_add_up(rank)
    assert rank.parameters == probed.parameters


def _check_closures_forward(out: Path, sleep_s: float) -> None:
    """Checks the closure's sleep counted as forward and the optimizer phase only what is left."""
    rank = only_rank(out)
    assert (rank.steps, rank.optimizer_steps, rank.stopped) == (4, 5, True)
    assert rank.samples_per_step == [16] * 4
    assert_phases_add_up(rank)
    (window,) = rank.windows
    phases = window.phases or {}
    assert min(phases["forward"]) >= sleep_s  # type: ignore[type-var]
    pairs = zip(phases["optimizer"], phases["forward"], strict=True)
    assert all(o is not None and f is not None and o < f for o, f in pairs)


@pytest.mark.slow  # starts a child process
def test_a_closures_forward_is_forward_not_optimizer(tmp_path: Path) -> None:
    """`optimizer.step(closure)` with forward and backward inside the closure (Lightning's
    automatic optimization): one step per call, the closure's slow forward (a 40 ms sleep)
    counted as forward, its backward as backward, the optimizer only what is left."""
    out = tmp_path / "out"
    done = run_job(tmp_path, ["--closure-ms", "40"], probe_env(out, warmup=1, steps=4, stop=True))
    assert done.returncode == 0, done.stderr
    _check_closures_forward(out, 0.04)


def test_a_closures_forward_is_forward_not_optimizer_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same with the probe's hooks in this process: the closure's slow forward (a 10 ms
    sleep) counted as forward, the optimizer only what is left."""
    out = tmp_path / "out"
    sleep_s = 0.01
    with probe_here(probe_env(out, warmup=1, steps=4, stop=True)):
        ran = train_here(closure_s=sleep_s)
    assert ran.exit == 0
    _check_closures_forward(out, sleep_s)


@pytest.mark.slow  # starts a child process
def test_a_loop_without_an_optimizer_is_measured_by_its_step_marker(tmp_path: Path) -> None:
    """A hand-written update calling `torchscale.mark_step()` each step: W + N marked steps,
    then the agreed stop; backward whole (a marker names no parameters to split it at);
    bare, the marker does nothing and the losses are the same."""
    bare = run_job(tmp_path, ["--mark-step"], None)
    out = tmp_path / "out"
    done = run_job(tmp_path, ["--mark-step"], probe_env(out, warmup=2, steps=4, stop=True))
    assert bare.returncode == 0 and done.returncode == 0, done.stderr
    assert "finished" in bare.stdout and "finished" not in done.stdout
    assert losses(done.stdout) == losses(bare.stdout)[:5]  # the 6th ends in the marker
    rank = only_rank(out)
    assert (rank.steps, len(rank.warmup_s), rank.stopped) == (4, 2, True)
    assert rank.samples_per_step == [16] * 4
    assert rank.phase_notes["grad_sync_wait"].code == "unavailable.marked_steps"
    assert_phases_add_up(rank)


def test_a_loop_without_an_optimizer_is_measured_by_its_step_marker_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same in this process: `torchscale.mark_step()` reaches the probe installed here
    (and nothing where none is), W + N marked steps, then the agreed stop."""
    bare = train_here(mark_step=True)
    assert bare.exit is None
    out = tmp_path / "out"
    with probe_here(probe_env(out, warmup=2, steps=4, stop=True)) as probe:
        monkeypatch.setattr(probe_module, "_PROBE", probe)
        ran = train_here(mark_step=True)
    assert ran.exit == 0
    assert ran.losses == bare.losses[: 2 + 4 - 1]  # the last step ends in the marker
    rank = only_rank(out)
    assert (rank.steps, len(rank.warmup_s), rank.stopped) == (4, 2, True)
    assert rank.samples_per_step == [16] * 4
    assert rank.phase_notes["grad_sync_wait"].code == "unavailable.marked_steps"
    assert_phases_add_up(rank)


@pytest.mark.slow  # starts a child process
def test_a_loop_without_an_optimizer_writes_the_no_step_file(tmp_path: Path) -> None:
    """Here only the carrier is on PYTHONPATH: it imports its own torchscale."""
    out = tmp_path / "out"
    env = probe_env(out, warmup=1, steps=3, stop=True)
    done = run_job(tmp_path, ["--no-optimizer"], env, carrier_only=True)
    assert done.returncode == 0, done.stderr
    assert "finished" in done.stdout
    ranks, findings = read_rank_files(out)
    assert ranks == []
    assert [f.code for f in findings] == ["own_job.no_optimizer_step"]
    assert findings[0].figures == {"rank": 0, "batches": 12, "backward_calls": 12}


def test_a_loop_without_an_optimizer_writes_the_no_step_file_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same in this process, at the probe's exit: every batch and backward counted."""
    out = tmp_path / "out"
    steps = 12
    with probe_here(probe_env(out, warmup=1, steps=3, stop=True)) as probe:
        ran = train_here(steps=steps, no_optimizer=True, at_end=probe.at_exit)
    assert ran.exit is None
    ranks, findings = read_rank_files(out)
    assert ranks == []
    assert [f.code for f in findings] == ["own_job.no_optimizer_step"]
    assert findings[0].figures == {"rank": 0, "batches": steps, "backward_calls": steps}


@pytest.mark.slow  # starts a child process
def test_a_job_killed_by_sigterm_keeps_what_was_measured(tmp_path: Path) -> None:
    """Letting the job finish (N = 0), a SIGTERM after 5 steps: the measurement is written
    and the job still dies by SIGTERM, as it would without the probe."""
    out = tmp_path / "out"
    done = run_job(tmp_path, ["--sigterm-after", "5"], probe_env(out, 2, 0, stop=False))
    assert done.returncode == -signal.SIGTERM, done.stderr
    assert len(losses(done.stdout)) == 5
    rank = only_rank(out)
    assert (rank.steps, rank.optimizer_steps, rank.stopped) == (3, 5, False)


def test_the_probes_sigterm_handler_writes_then_dies_by_the_signal_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The handler the probe installs where SIGTERM was left at its default, called here after
    5 steps (no signal sent): the measurement written, the default put back and the same
    signal sent to this process again (the send recorded, not made)."""
    sent: list[tuple[int, int]] = []
    out = tmp_path / "out"
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)  # as a job leaves it
    try:
        with probe_here(probe_env(out, 2, 0, stop=False)):
            ran = train_here(steps=5)
            handler = signal.getsignal(signal.SIGTERM)
            assert callable(handler)
            monkeypatch.setattr(os, "kill", lambda pid, signum: sent.append((pid, signum)))
            handler(signal.SIGTERM, None)
            assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert ran.exit is None and len(ran.losses) == 5
    assert sent == [(os.getpid(), signal.SIGTERM)]
    rank = only_rank(out)
    assert (rank.steps, rank.optimizer_steps, rank.stopped) == (3, 5, False)


@pytest.mark.slow  # starts a child process
def test_a_probe_failure_leaves_the_job_running(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = probe_env(out, warmup=1, steps=3, stop=True) | {"TORCHSCALE_OWN_JOB_WARMUP": "two"}
    done = run_job(tmp_path, [], env)
    assert done.returncode == 0, done.stderr
    assert "finished" in done.stdout and len(losses(done.stdout)) == 12
    assert done.stderr == ""  # nothing said into the job's own output
    ranks, findings = read_rank_files(out)
    assert ranks == []
    assert [f.code for f in findings] == ["own_job.probe_failed"]
    assert "ValueError" in findings[0].figures["error"]


def test_a_probe_failure_is_recorded_and_installs_nothing_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """activate() here with a malformed warm-up: the failure file written, no probe left."""
    out = tmp_path / "out"
    env = probe_env(out, warmup=1, steps=3, stop=True) | {"TORCHSCALE_OWN_JOB_WARMUP": "two"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.setattr(probe_module, "_PROBE", None)
    monkeypatch.setattr(probe_module, "_FAILED", False)
    probe_module.activate()
    assert probe_module.current() is None
    ranks, findings = read_rank_files(out)
    assert ranks == []
    assert [f.code for f in findings] == ["own_job.probe_failed"]
    assert "ValueError" in findings[0].figures["error"]


# ----------------------------------------------------------------------------- pure parts


def test_batch_counts_follow_the_documented_rule() -> None:
    import torch

    ids = torch.ones(4, 7, dtype=torch.long)
    mask = torch.zeros(4, 7, dtype=torch.long)
    mask[:, :3] = 1
    assert batch_counts({"input_ids": ids}) == (4, 28)
    assert batch_counts({"input_ids": ids, "attention_mask": mask}) == (4, 12)
    assert batch_counts((torch.randn(5, 3), torch.zeros(5))) == (5, None)
    assert batch_counts([ids, torch.randn(4)]) == (4, 28)
    assert batch_counts({"meta": "x"}) == (None, None)
    assert batch_counts(torch.tensor(1.0)) == (1, None)


def test_phases_are_cut_as_documented() -> None:
    """Backward inside the optimizer's step is backward, not optimizer time; the rest of the
    step is forward. Then a Lightning-style step: the closure the step called (forward and
    backward inside it) is not optimizer time either, its forward is forward; a blocking
    collective outside backward is waiting."""
    step = StepMarks(0.0, end=10.0)
    step.data = [(0.0, 1.0)]
    step.backward = [Backward(5.0, grad=6.5, end=7.0)]
    step.optimizer = [(4.0, 9.0)]
    step.nested = [(5.0, 7.0)]
    seconds = resolve(step, Clock())
    assert seconds.step_s == 10.0
    assert seconds.phases == {
        "data": 1.0,
        "forward": 4.0,
        "backward": 1.5,
        "grad_sync_wait": 0.5,
        "optimizer": 3.0,
    }
    step.split = False
    assert resolve(step, Clock()).phases["grad_sync_wait"] is None
    step.split = True
    step.nested = [(4.5, 8.0)]  # the closure: 2.0 forward, then the backward at 5.0-7.0
    phases = resolve(step, Clock()).phases
    assert phases["optimizer"] == 1.5 and phases["forward"] == 5.5
    assert sum(v or 0.0 for v in phases.values()) == 10.0
    step.collectives = [(1.0, 2.0)]  # a blocking all-gather before the forward: waiting
    phases = resolve(step, Clock()).phases
    assert phases["grad_sync_wait"] == 1.5 and phases["forward"] == 4.5
    step.split = False  # no split: the wait is not known apart, the collective is forward
    assert resolve(step, Clock()).phases["forward"] == 5.5


def test_a_rank_file_round_trips_and_a_bad_one_is_a_finding(tmp_path: Path) -> None:
    made = OwnJobMeasurement(rank=1, host="h", timing="perf_counter", steps=0, warmup_s=[0.1])
    (tmp_path / "rank1.measurement.json").write_bytes(adapter().dump_json(made))
    (tmp_path / "rank0.measurement.json").write_text("{not json")
    back = json.loads((tmp_path / "rank1.measurement.json").read_text())
    assert adapter().validate_python(back) == made
    ranks, findings = read_rank_files(tmp_path)
    assert ranks == []  # no measured step
    assert [(f.code, f.figures["rank"]) for f in findings] == [("own_job.rank_file_unreadable", 0)]


def test_measured_steps_split_into_blocks_for_the_repeats() -> None:
    from torchscale.rank.own_job.reading import in_blocks
    from torchscale.rank.worker.aggregate import rank_calibration
    from torchscale.rank.worker.measure import Window

    steps = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
    phases: dict[str, list[float | None]] = {"data": [s / 10 for s in steps]}
    window = Window(sum(steps), steps, phases, cpu_wait_s=list(steps), cpu_time_s=None)
    window.calibration_s, window.calibration_wall_s = [1e-3] * 16, [2e-3] * 16
    window.calibration_cost_s, window.calibration_timer = 0.05, "thread_time"
    rank = OwnJobMeasurement(0, "h", "perf_counter", 7, [], [window], samples_per_step=[8] * 7)
    blocks = in_blocks(rank, 3)
    assert blocks.steps == 3 and [w.step_s for w in blocks.windows] == [steps[:3], steps[3:6]]
    assert [w.wall_s for w in blocks.windows] == pytest.approx([0.6, 1.5])
    assert (blocks.windows[1].phases or {})["data"] == pytest.approx([0.04, 0.05, 0.06])
    assert blocks.windows[1].cpu_wait_s == steps[3:6] and blocks.windows[1].cpu_time_s is None
    assert blocks.samples_per_step == [8] * 6
    # the calibration, timed once after every step, is counted once: the last block's
    assert [w.calibration_s is None for w in blocks.windows] == [True, False]
    calibration = rank_calibration(blocks)
    assert calibration is not None and calibration.device_s == [[1e-3] * 16]
    assert calibration.cost_s == [0.05] and calibration.timer == "thread_time"
    assert in_blocks(rank, 8) is rank  # fewer steps than one block: as measured


# ----------------------------------------------------------------------------- torchrun

LATE_MS = 40  # rank 1's slow work before the collective each step (a slow preprocessing)
DDP = textwrap.dedent(
    f"""\
    import time

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = TensorDataset(torch.randn(640, 8), torch.randn(640, 1))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data), num_workers=1)
    for x, y in loader:
        if dist.get_rank() == 1:
            time.sleep({LATE_MS} / 1000)
        count = torch.tensor([len(x)])
        dist.all_reduce(count)  # the batch summed over ranks, as the HF Trainer's token count
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.destroy_process_group()
    print("finished")
    """
)


@pytest.mark.slow  # a real torchrun of 2 gloo ranks
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="torchrun ranks, Linux /proc")
def test_two_ddp_ranks_stop_at_the_same_step(tmp_path: Path) -> None:
    """Both stop at W + N; rank 0 waits for rank 1 at a collective before its forward each
    step, and that wait is its grad_sync_wait (the wait for the others), not forward."""
    script = tmp_path / "ddp_train.py"
    script.write_text(DDP)
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHSCALE_OWN_JOB")}
    env["PYTHONPATH"] = os.pathsep.join([str(CARRIER_DIR), str(REPO_ROOT)])
    env |= probe_env(out, warmup=2, steps=3, stop=True)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1"]
    command += ["--nproc-per-node=2", "--max-restarts=0", str(script)]
    done = subprocess.run(
        command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "finished" not in done.stdout
    ranks, findings = read_rank_files(out)
    assert findings == []
    assert [r.rank for r in ranks] == [0, 1]
    for rank in ranks:
        assert isinstance(rank, OwnJobMeasurement)
        assert (rank.steps, rank.optimizer_steps, rank.stopped) == (3, 5, True)
        assert rank.samples_per_step == [8] * 3
        assert_phases_add_up(rank)
    phases = ranks[0].windows[0].phases or {}
    wait, forward = (
        statistics.median(v or 0.0 for v in phases[p]) for p in ("grad_sync_wait", "forward")
    )
    assert wait >= LATE_MS / 2000 and forward < wait, (wait, forward)
    assert processes_mentioning(str(tmp_path)) == []


# ----------------------------------------------------------------------------- busy capture


def test_the_busy_capture_follows_the_measured_steps_and_moves_the_window_and_stop() -> None:
    from torchscale.rank.own_job.trace_window import WindowPlan

    plan = WindowPlan(warmup=2, steps=4, traced=3, busy=3)
    assert (plan.busy_after, plan.opens_after) == (6, 9)  # measured 3-6, captured 7-9
    assert list(plan.traced_steps) == [11, 12, 13] and plan.last() == 13
    assert [n for n in range(1, 14) if plan.measured(n)] == [3, 4, 5, 6]
    assert WindowPlan(warmup=2, steps=4, traced=0, busy=3).last() == 9  # stops after it
    assert WindowPlan(2, 4, 3).opens_after == 6  # no capture (CPU): as before


@pytest.mark.parametrize("starts", [True, False])
def test_a_gpu_ranks_busy_capture_joins_its_file_and_the_rank_stops_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, starts: bool
) -> None:
    """The CUDA-only capture runs on a GPU only; here a stand-in profiler window shows where
    the probe opens and closes it (after the last measured step, after the next 3), that its
    reading joins the rank's file, that the agreed stop moves past it, and that one which
    cannot start says why and changes no step of the job."""
    from torchscale.contracts.finding import Finding
    from torchscale.rank.own_job import busy_window
    from torchscale.rank.worker.aggregate import host_bound_block
    from torchscale.rank.worker.busy_trace import BusyReading

    seen: list[tuple[str, int]] = []
    failed = Finding(code="host_bound.trace_failed", figures={"error": "CUPTI busy"})

    class Capture:
        def __init__(self, rank: int, device: Any, steps: int) -> None:
            self.rank, self.steps = rank, steps

        def open(self) -> BusyReading | None:
            seen.append(("open", probe.count))
            return None if starts else BusyReading(rank=self.rank, reason=failed)

        def close(self) -> BusyReading:
            seen.append(("close", probe.count))
            return BusyReading(rank=self.rank, steps=self.steps, busy_s=0.012, wall_s=0.03)

        def abandon(self) -> None:
            seen.append(("abandon", probe.count))

    monkeypatch.setattr(busy_window, "BusyWindow", Capture)
    out = tmp_path / "out"
    with probe_here(probe_env(out, warmup=2, steps=4, stop=True)) as probe:
        probe.busy_steps = 3  # as _decide sets it on a CUDA rank
        ran = train_here()
    assert ran.exit == 0 and len(ran.losses) == 2 + 4 + 3 - 1  # stopped inside step 9
    rank = only_rank(out)
    assert rank.steps == 4 and rank.optimizer_steps == 6  # the measurement as written
    if starts:
        assert seen == [("open", 6), ("close", 9)]
        assert rank.gpu_busy == BusyReading(rank=0, steps=3, busy_s=0.012, wall_s=0.03)
        record, _ = host_bound_block([rank], device="cuda")
        assert record is not None and record.gpu_busy_share == pytest.approx(0.4)
        assert record.host_bound is True  # 40 % busy: under the threshold, host-bound
    else:
        assert seen == [("open", 6)]
        assert rank.gpu_busy == BusyReading(rank=0, reason=failed)


def test_a_model_the_probe_cannot_scan_leaves_forward_unsplit_and_the_rest_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module in the process whose `parameters()` raises stops the search for the model:
    no forward mark (model_forward_s absent), every other figure measured as before."""
    import torch

    class Odd(torch.nn.Module):
        def parameters(self, recurse: bool = True) -> Any:
            raise RuntimeError("no parameters here")

    odd = Odd()
    out = tmp_path / "out"
    with probe_here(probe_env(out, warmup=2, steps=4, stop=True)) as probe:
        ran = train_here()
        assert probe.model_hooks == []
    assert odd is not None and ran.exit == 0
    rank = only_rank(out)
    (window,) = rank.windows
    assert rank.steps == 4 and window.model_forward_s is None
    assert_phases_add_up(rank)
