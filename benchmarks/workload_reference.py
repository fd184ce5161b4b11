"""Is torchscale's workload as fast as a bare loop written for speed?

The reference is a nanoGPT-style GPT written here, independent of torchscale's model code, the
way speed recipes write it: vocabulary padded to a multiple of 64, no dropout, SDPA with
`is_causal`, the LM head tied to the token embedding, AdamW fused (CUDA and CPU), bf16
autocast on CUDA, and with `--compile` one compiled callable for the model's forward and its
loss, as nanoGPT's compiled `GPT.forward` returns the loss (a loss computed eager outside the
compiled model copies the fp32 logits several times a step: 13 ms of GPT-2 b16's 49 ms on an
H100, which made the reference, not torchscale, the slow side). Its residual stream and
LayerNorms run in the cell's precision: in bf16 under bf16 autocast (`--residual bf16`, what a
bf16 GPT-2 cell does by default: `training.bf16_activations`), or in fp32 on both sides
(`--residual fp32`: the reference as nanoGPT writes it, the cell with bf16_activations off).
It trains the same shapes (hidden, layers, heads, vocabulary, sequence, batch) as a torchscale
cell of the chosen model at world size 1, and the script checks that both count the same
parameters. The zoo's other models (ViT-B/16, BERT, ResNet) have plain loops of their own in
benchmarks/reference_loops.py, compared the same way. Both run as their own process, ROUNDS
rounds taking turns, the order swapped every round (reference first in odd rounds, torchscale
first in even ones: a shared machine's drift, and whatever one process leaves behind for the
next, hits both sides alike), and the script prints each one's samples/s, the ratio torchscale /
reference per round and its median. On CPU both sides run with the glibc malloc settings a CPU
cell has by default (launcher.cpu_malloc: reuse; `--cpu-malloc default` runs both with glibc's
own).
The target is a ratio within 0.97-1.02: the last line judges it by the median ratio's 95 %
interval (Student t on the log ratios over the rounds): within, below (torchscale slower than
the bare loop), above (the bare loop slower than torchscale: a weak reference, no pass) or not
settled by the run. On a GPU it also gives the reference's own MFU, and says when that is below
what such a loop reaches (a slow reference cannot catch the harness's overhead).

    python benchmarks/workload_reference.py [--model tiny-gpt2|gpt2|...|vit-b16|bert-large|
        resnet50|...] [--batch 8] [--steps 30] [--rounds 5] [--device cpu|cuda] [--compile] \
        [--residual bf16|fp32] [--no-telemetry] [--cpu-malloc reuse|default]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# (hidden, layers, heads, vocab, seq_len, positions) of the torchscale models compared; the
# position table as torchscale's model has it (tiny-gpt2: 256 rows, 64 used), so both sides
# train, and AdamW updates, the same parameters (the driver checks the counts)
SHAPES = {
    "tiny-gpt2": (64, 2, 4, 1024, 64, 256),
    "gpt2": (768, 12, 12, 50257, 1024, 1024),
    "gpt2-medium": (1024, 24, 16, 50257, 1024, 1024),
    "gpt2-large": (1280, 36, 20, 50257, 1024, 1024),
}
# the zoo's other models: benchmarks/reference_loops.py's LOOPS (it imports torch: named here)
OTHER_LOOPS = ("bert-base", "bert-large", "resnet18", "resnet50", "tiny-bert", "vit-b16")
MODELS = (*SHAPES, *OTHER_LOOPS)


@dataclass
class Reference:
    """The bare loop, built: `train_loss(inputs, targets)` returns the loss, the whole forward
    in one callable (the compiled one with --compile)."""

    model: Any
    optimizer: Any
    train_loss: Callable[[Any, Any], Any]
    inputs: Any
    targets: Any
    autocast: Any
    # GPT-2: 6N + 12LHQT a token, N the matmul weights (the tied head included), times the
    # sequence; the other loops: the FLOPs torchscale counts for a sample of the model
    flops_per_sample: float
    tokens_per_sample: int | None = None  # a language model's sequence; None: images

    def step(self) -> None:
        with self.autocast:
            loss = self.train_loss(self.inputs, self.targets)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)


def build_reference(
    args: argparse.Namespace, compile_: Callable[[Any], Any] | None = None
) -> Reference:
    """The bare loop of `args`' model on `args.device`; `compile_` (torch.compile unless given)
    compiles the model's forward and loss together when `args.compile` is set."""
    if args.model not in SHAPES:
        return _other_loop(args, compile_)
    import torch
    import torch.nn.functional as F
    from torch import nn

    hidden, layers, heads, vocab, seq, positions = SHAPES[args.model]
    padded = (vocab + 63) // 64 * 64
    device = torch.device(args.device)
    # bf16 residual stream and LayerNorms exist only under bf16 autocast (CUDA here)
    bf16_stream = device.type == "cuda" and args.residual == "bf16"

    class Norm(nn.LayerNorm):
        """LayerNorm; on a bf16 input in the bf16 stream it stays bf16 (fp32 statistics in
        the kernel), where autocast would return fp32."""

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if not (bf16_stream and x.dtype == torch.bfloat16):
                y: torch.Tensor = super().forward(x)
                return y
            with torch.autocast(device.type, enabled=False):
                weight, bias = self.weight.to(x.dtype), self.bias.to(x.dtype)
                return F.layer_norm(x, self.normalized_shape, weight, bias, self.eps)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1, self.ln_2 = Norm(hidden), Norm(hidden)
            self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
            self.fc, self.fc2 = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln_1(x)).split(c, dim=2)
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, c))
            out: torch.Tensor = x + self.fc2(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))
            return out

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte, self.wpe = nn.Embedding(padded, hidden), nn.Embedding(positions, hidden)
            self.blocks = nn.Sequential(*(Block() for _ in range(layers)))
            self.ln_f = Norm(hidden)

        def forward(self, idx: torch.Tensor) -> torch.Tensor:
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
            if bf16_stream and torch.is_autocast_enabled(device.type):
                x = x.to(torch.bfloat16)
            return F.linear(self.ln_f(self.blocks(x)), self.wte.weight)

    model = GPT().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)  # CUDA and CPU

    def train_loss(inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = model(inputs)
        # the pad logits can never be a target: the loss equals the unpadded model's
        return F.cross_entropy(logits[..., :vocab].flatten(0, 1), targets.flatten())

    if args.compile:
        train_loss = (compile_ or torch.compile)(train_loss)
    tokens = torch.randint(0, vocab, (args.batch, seq + 1), device=device)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
    matmul_weights = model.wte.weight.numel() + sum(
        p.numel() for p in model.blocks.parameters() if p.dim() == 2
    )
    flops_per_sample = (6 * matmul_weights + 12 * layers * hidden * seq) * seq
    return Reference(
        model,
        optimizer,
        train_loss,
        tokens[:, :-1],
        tokens[:, 1:],
        autocast,
        flops_per_sample,
        tokens_per_sample=seq,
    )


def _other_loop(args: argparse.Namespace, compile_: Callable[[Any], Any] | None) -> Reference:
    """A loop of benchmarks/reference_loops.py, at the cell's default sequence (BERT), its
    FLOPs a sample torchscale's count of the model (the MFU of both sides on one count)."""
    import torch

    from torchscale.contracts.model_specs.registry import BUILTIN

    sys.path.insert(0, str(Path(__file__).parent))
    import reference_loops

    measured = BUILTIN[args.model].measured
    device = torch.device(args.device)
    model, loss, (inputs, targets) = reference_loops.build(
        args.model, args.batch, measured.input_shape[0], device
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)  # CUDA and CPU

    def train_loss(inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = loss(model(inputs), targets)
        return out

    if args.compile:
        train_loss = (compile_ or torch.compile)(train_loss)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
    return Reference(
        model,
        optimizer,
        train_loss,
        inputs,
        targets,
        autocast,
        float(measured.train_flops),
        tokens_per_sample=measured.tokens_per_sample,
    )


def reference_run(args: argparse.Namespace) -> dict[str, Any]:
    """The bare loop, in this process: tokens/s over `steps` steps after `warmup`, the
    parameters it trains and, on a GPU in the peak table, its MFU."""
    import torch

    ref = build_reference(args)
    cuda = ref.inputs.device.type == "cuda"
    for _ in range(args.warmup):
        ref.step()
    if cuda:
        torch.cuda.synchronize()
    before = process_counters()
    start = time.perf_counter()
    for _ in range(args.steps):
        ref.step()
    if cuda:
        torch.cuda.synchronize()
    wall = time.perf_counter() - start
    after = process_counters()
    samples_per_s = args.batch * args.steps / wall
    figures: dict[str, Any] = {
        "samples_per_s": samples_per_s,
        "parameters": sum(p.numel() for p in ref.model.parameters()),
    }
    if ref.tokens_per_sample:  # benchmarks/cpu_malloc.py reads a language loop in tokens
        figures["tokens_per_s"] = samples_per_s * ref.tokens_per_sample
    figures["mfu"], figures["mfu_note"] = reference_mfu(
        samples_per_s * ref.flops_per_sample, torch.cuda.get_device_name() if cuda else None
    )
    if before is not None and after is not None:  # Linux: what the steps cost the kernel
        faults, user, system = (b - a for a, b in zip(before, after, strict=True))
        figures["page_faults_per_s"] = faults / wall
        figures["kernel_share"] = system / (user + system) if user + system else 0.0
    return figures


def reference_mfu(flops_per_s: float, device_name: str | None) -> tuple[float | None, str | None]:
    """(MFU, None) against the GPU's dense bf16 peak (torchscale's table), or (None, why)."""
    if device_name is None:
        return None, "no MFU on CPU"
    from torchscale.contracts.gpu_peaks import peak_tflops
    from torchscale.contracts.wording import why

    peak, note = peak_tflops(device_name, "bf16", tf32=False)  # note: a finding, printed as JSON
    return (None, why(note)) if peak is None else (flops_per_s / (peak * 1e12), None)


def process_counters() -> tuple[float, float, float] | None:
    """(minor page faults, user s, system s) of this process so far; None off Linux."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    return float(fields[7]), int(fields[11]) / tick, int(fields[12]) / tick


def bf16_stream(args: argparse.Namespace) -> bool:
    """Whether both sides keep the residual stream and LayerNorms in bf16 (bf16 autocast on
    CUDA only; the GPT-2 loop only: PyTorch's encoder layer keeps it in fp32)."""
    return bool(args.device == "cuda" and args.residual == "bf16" and args.model in SHAPES)


def residual_line(args: argparse.Namespace) -> str:
    """What the residual stream runs in on both sides, said once."""
    if args.device != "cuda":
        return "residual stream and LayerNorms: fp32 on both sides (no autocast on CPU)"
    if args.model not in SHAPES:
        return (
            "residual stream and LayerNorms: fp32 on both sides under bf16 autocast (the "
            "loop's PyTorch layers; the cell with training.bf16_activations: false)"
        )
    if bf16_stream(args):
        return (
            "residual stream and LayerNorms: bf16 on both sides (the cell's "
            "training.bf16_activations: true, its default for bf16 GPT-2)"
        )
    return (
        "residual stream and LayerNorms: fp32 on both sides under bf16 autocast (the cell "
        "with training.bf16_activations: false)"
    )


def cell_config(args: argparse.Namespace, threads: str) -> str:
    """The torchscale cell of the reference's shapes, precision and residual stream."""
    precision = "bf16" if args.device == "cuda" else "fp32"
    training = f"precision: {precision}, compile: {str(args.compile).lower()}"
    if args.device == "cuda":
        training += f", bf16_activations: {str(bf16_stream(args)).lower()}"
    return (
        "experiment_name: ref\n"
        f"models: [{args.model}]\n"
        f"batch_sizes: [{args.batch}]\n"
        "gpu_counts: [1]\n"
        f"device: {args.device}\n"
        f"training: {{{training}}}\n"
        f"launcher: {{omp_num_threads: {threads}, cpu_malloc: {args.cpu_malloc}}}\n"
        f"measurement: {{warmup_steps: {args.warmup}, steps: {args.steps}, repeats: 1, "
        "comm_overhead: false, flops: false"
        f"{', telemetry: {enabled: false}' if args.no_telemetry else ''}}}\n"
    )


def run_or_exit(argv: list[str], env: dict[str, str], what: str) -> str:
    """`argv`'s stdout; a failure ends the script with the tail of what it printed."""
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:])
        sys.exit(f"{what} failed (exit {done.returncode}):\n{tail}")
    return done.stdout


def torchscale_run(
    args: argparse.Namespace, workdir: Path, env: dict[str, str]
) -> tuple[float, int]:
    """One torchscale cell of the same shapes, world size 1, as a user runs it, with the
    reference's threads (a cell sets its ranks' OMP_NUM_THREADS itself, from the config or
    the cores, and would otherwise ignore the shell's)."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "cell.yaml"
    config.write_text(cell_config(args, env["OMP_NUM_THREADS"]), encoding="utf-8")
    out = workdir / "out"
    run_or_exit(
        [sys.executable, "-m", "torchscale", "benchmark", "-c", str(config), "-o", str(out), "-q"],
        env,
        "the torchscale cell",
    )
    [cell] = (out / "ref" / "cells").glob("*.json")
    result = json.loads(cell.read_text(encoding="utf-8"))
    if result.get("status") != "ok" or not result.get("throughput"):
        error = (result.get("error") or {}).get("reason")
        sys.exit(f"the torchscale cell ended {result.get('status')}: {error}")
    return float(result["throughput"]["samples_per_s"]), int(result["parameters"])


def reference_subprocess(env: dict[str, str]) -> dict[str, Any]:
    """The reference in its own process: its figures (reference_run)."""
    stdout = run_or_exit(
        [sys.executable, __file__, *sys.argv[1:], "--role", "reference"], env, "the reference"
    )
    figures: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny-gpt2", choices=sorted(MODELS))
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--compile", action="store_true")
    parser.add_argument(
        "--residual",
        default="bf16",
        choices=["bf16", "fp32"],
        help="CUDA: the residual stream and LayerNorms of both sides in bf16 (the cell's "
        "default, training.bf16_activations) or in fp32 (nanoGPT's; the cell with "
        "bf16_activations: false); CPU trains in fp32 either way",
    )
    parser.add_argument(
        "--no-telemetry",
        action="store_true",
        help="the cell without its telemetry sampler thread (what that thread costs)",
    )
    parser.add_argument(
        "--cpu-malloc",
        default="reuse",
        choices=["reuse", "default"],
        help="CPU: both sides with the glibc malloc settings of launcher.cpu_malloc (reuse, "
        "torchscale's default) or with glibc's own (default)",
    )
    parser.add_argument("--role", default="driver", choices=["driver", "reference"])
    args = parser.parse_args()
    if args.role == "reference":
        print(json.dumps(reference_run(args)))
        return
    threads = str(os.cpu_count() or 1)
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", threads)}
    if args.device == "cpu" and args.cpu_malloc == "reuse":
        # both sides under the glibc malloc settings a CPU cell runs with by default
        from torchscale.orchestration.launch.cpu_malloc import malloc_reuse_env

        env.update(malloc_reuse_env(env))
    print(residual_line(args), flush=True)
    with tempfile.TemporaryDirectory(prefix="workload-reference-") as tmp:
        ratios, parameters, mfus = take_turns(args, Path(tmp), env)
    print(f"both sides train {parameters:,} parameters")
    print(
        f"{args.model} b{args.batch} on {args.device}"
        f"{' (compile)' if args.compile else ''}, {env['OMP_NUM_THREADS']} thread(s) a side: "
        f"median ratio torchscale / reference {statistics.median(ratios):.3f} "
        f"(rounds {min(ratios):.3f}-{max(ratios):.3f}); {verdict(ratios)}"
    )
    line = mfu_line(args, mfus, statistics.median(ratios))
    if line:
        print(line)


def take_turns(
    args: argparse.Namespace, workdir: Path, env: dict[str, str]
) -> tuple[list[float], int, list[float | None]]:
    """ROUNDS rounds of both sides, the order swapped every round: the ratios, the parameter
    count both sides train (a mismatch ends the run) and the reference's MFU per round."""
    ratios = []
    mfus: list[float | None] = []
    parameters = 0
    for round_ in range(1, args.rounds + 1):
        cell_dir = workdir / f"round{round_}"
        if round_ % 2:
            bare = reference_subprocess(env)
            ours, our_params = torchscale_run(args, cell_dir, env)
        else:
            ours, our_params = torchscale_run(args, cell_dir, env)
            bare = reference_subprocess(env)
        bare_samples, bare_params = float(bare["samples_per_s"]), int(bare["parameters"])
        if bare_params != our_params:
            sys.exit(
                f"the two sides train different models: reference {bare_params:,} parameters, "
                f"torchscale {our_params:,}"
            )
        ratios.append(ours / bare_samples)
        mfus.append(bare.get("mfu"))
        print(
            f"round {round_} ({'reference' if round_ % 2 else 'torchscale'} first): reference "
            f"{bare_samples:,.1f} samples/s, torchscale {ours:,.1f} samples/s, "
            f"ratio {ours / bare_samples:.3f}",
            flush=True,
        )
        parameters = bare_params
    return ratios, parameters, mfus


TARGET = 0.97  # the cell reaches at least 97 % of the bare loop's samples/s
CEILING = 1.02  # and beats it by at most 2 %: more means the bare loop is the slow side
# The MFU a bare GPT-2 small loop reaches at batch >= 8 on a GPU in the peak table: below it
# the reference itself is slow and the ratio cannot catch the harness's overhead. From the
# torchscale cell on one H100 (docs/measured.md): 40.7 % compiled at b16, 24 % eager at b8
# (6N + 12LHQT over the dense bf16 peak)
MFU_FLOOR = {True: 0.35, False: 0.20}  # compiled, eager
MFU_FLOOR_MODEL, MFU_FLOOR_BATCH = "gpt2", 8


def verdict(ratios: list[float]) -> str:
    """The target range judged by the median ratio's 95 % interval (Student t on the log
    ratios over the rounds, as torchscale judges several runs of a cell: each round runs both
    loops anew, so the rounds' spread holds the drift between runs): within, below, above (a
    reference slower than the cell is no bar to pass), or not settled."""
    from torchscale.offline.analysis.uncertainty import median_of_runs

    target = f"the target range {TARGET}-{CEILING}"
    median = median_of_runs(ratios)
    if median.low is None or median.high is None:
        return f"one round: no interval, {target} is not judged"
    interval = f"95 % interval {median.low:.3f}-{median.high:.3f}"
    if median.low >= TARGET and median.high <= CEILING:
        return f"{interval}: within {target}"
    if median.high < TARGET:
        return f"{interval}: below {target} (torchscale is slower than the bare loop)"
    if median.low > CEILING:
        return (
            f"{interval}: above {target} (the bare loop is slower than the cell: the "
            "reference is weak, not torchscale fast; no pass)"
        )
    return f"{interval}: spans an edge of {target}, not settled by {len(ratios)} rounds"


def mfu_line(args: argparse.Namespace, mfus: list[float | None], ratio: float) -> str | None:
    """The reference's MFU (median of the rounds) and torchscale's at the same FLOPs per
    token, with a warning where the reference is below MFU_FLOOR; None without a peak."""
    known = [m for m in mfus if m is not None]
    if not known:
        return None
    mfu = statistics.median(known)
    counted = "6N + 12LHQT" if args.model in SHAPES else "torchscale's FLOPs of the model"
    line = (
        f"MFU ({counted} over the dense bf16 peak): reference {mfu:.1%}, torchscale "
        f"{mfu * ratio:.1%}"
    )
    floor = MFU_FLOOR[bool(args.compile)]
    if args.model == MFU_FLOOR_MODEL and args.batch >= MFU_FLOOR_BATCH and mfu < floor:
        line += (
            f"; the reference is below the {floor:.0%} a {'compiled' if args.compile else 'eager'}"
            f" GPT-2 small loop reaches at batch >= {MFU_FLOOR_BATCH}: it is too slow a bar to "
            "catch the harness's overhead, whatever the ratio"
        )
    return line


if __name__ == "__main__":
    main()
