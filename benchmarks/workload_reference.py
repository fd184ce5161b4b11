"""Is torchscale's GPT-2 workload as fast as a bare loop written for speed?

The reference is a nanoGPT-style GPT written here, independent of torchscale's model code, the
way speed recipes write it: vocabulary padded to a multiple of 64, no dropout, SDPA with
`is_causal`, the LM head tied to the token embedding, AdamW fused (CUDA and CPU), bf16
autocast on CUDA, `torch.compile` when asked. It trains the same shapes (hidden, layers, heads,
vocabulary, sequence, batch) as a torchscale cell of the chosen model at world size 1, and the
script checks that both count the same parameters. Both run as their own process, ROUNDS
rounds taking turns, the order swapped every round (reference first in odd rounds, torchscale
first in even ones: a shared machine's drift, and whatever one process leaves behind for the
next, hits both sides alike), and the script prints each one's tokens/s, the ratio torchscale /
reference per round and its median. On CPU both sides run with the glibc malloc settings a
CPU cell has by default (launcher.cpu_malloc: reuse; `--cpu-malloc default` runs both with
glibc's own).
The target is a ratio of at least 0.97: the last line judges it by the median ratio's
95 % interval (Student t on the log ratios over the rounds), met, missed or not settled by the
run.

    python benchmarks/workload_reference.py [--model tiny-gpt2|gpt2] [--batch 8] \
        [--steps 30] [--rounds 5] [--device cpu|cuda] [--compile] [--no-telemetry] \
        [--cpu-malloc reuse|default]
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
from pathlib import Path

# (hidden, layers, heads, vocab, seq_len, positions) of the torchscale models compared; the
# position table as torchscale's model has it (tiny-gpt2: 256 rows, 64 used), so both sides
# train, and AdamW updates, the same parameters (the driver checks the counts)
SHAPES = {
    "tiny-gpt2": (64, 2, 4, 1024, 64, 256),
    "gpt2": (768, 12, 12, 50257, 1024, 1024),
}


def reference_run(args: argparse.Namespace) -> dict[str, float]:
    """The bare loop, in this process: tokens/s over `steps` steps after `warmup`, and the
    parameters it trains."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    hidden, layers, heads, vocab, seq, positions = SHAPES[args.model]
    padded = (vocab + 63) // 64 * 64
    device = torch.device(args.device)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
            self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
            self.fc, self.fc2 = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln_1(x)).split(c, dim=2)
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, c))
            return x + self.fc2(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte, self.wpe = nn.Embedding(padded, hidden), nn.Embedding(positions, hidden)
            self.blocks = nn.Sequential(*(Block() for _ in range(layers)))
            self.ln_f = nn.LayerNorm(hidden)

        def forward(self, idx: torch.Tensor) -> torch.Tensor:
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
            return F.linear(self.ln_f(self.blocks(x)), self.wte.weight)

    model = GPT().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)  # CUDA and CPU
    step_model = torch.compile(model) if args.compile else model
    tokens = torch.randint(0, vocab, (args.batch, seq + 1), device=device)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")

    def step() -> None:
        with autocast:
            logits = step_model(inputs)
        # the pad logits can never be a target: the loss equals the unpadded model's
        loss = F.cross_entropy(logits[..., :vocab].float().flatten(0, 1), targets.flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(args.warmup):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    before = process_counters()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    wall = time.perf_counter() - start
    after = process_counters()
    figures = {
        "tokens_per_s": args.batch * seq * args.steps / wall,
        "parameters": sum(p.numel() for p in model.parameters()),
    }
    if before is not None and after is not None:  # Linux: what the steps cost the kernel
        faults, user, system = (b - a for a, b in zip(before, after, strict=True))
        figures["page_faults_per_s"] = faults / wall
        figures["kernel_share"] = system / (user + system) if user + system else 0.0
    return figures


def process_counters() -> tuple[float, float, float] | None:
    """(minor page faults, user s, system s) of this process so far; None off Linux."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    return float(fields[7]), int(fields[11]) / tick, int(fields[12]) / tick


def torchscale_run(
    args: argparse.Namespace, workdir: Path, env: dict[str, str]
) -> tuple[float, int]:
    """One torchscale cell of the same shapes, world size 1, as a user runs it, with the
    reference's threads (a cell sets its ranks' OMP_NUM_THREADS itself, from the config or
    the cores, and would otherwise ignore the shell's)."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "cell.yaml"
    precision = "bf16" if args.device == "cuda" else "fp32"
    config.write_text(
        "experiment_name: ref\n"
        f"models: [{args.model}]\n"
        f"batch_sizes: [{args.batch}]\n"
        "gpu_counts: [1]\n"
        f"device: {args.device}\n"
        f"training: {{precision: {precision}, compile: {str(args.compile).lower()}}}\n"
        f"launcher: {{omp_num_threads: {env['OMP_NUM_THREADS']}, "
        f"cpu_malloc: {args.cpu_malloc}}}\n"
        f"measurement: {{warmup_steps: {args.warmup}, steps: {args.steps}, repeats: 1, "
        "comm_overhead: false, flops: false"
        f"{', telemetry: {enabled: false}' if args.no_telemetry else ''}}}\n",
        encoding="utf-8",
    )
    out = workdir / "out"
    subprocess.run(
        [sys.executable, "-m", "torchscale", "benchmark", "-c", str(config), "-o", str(out), "-q"],
        env=env,
        check=True,
        capture_output=True,
    )
    [cell] = (out / "ref" / "cells").glob("*.json")
    result = json.loads(cell.read_text(encoding="utf-8"))
    return float(result["throughput"]["tokens_per_s"]), int(result["parameters"])


def reference_subprocess(env: dict[str, str]) -> tuple[float, int]:
    done = subprocess.run(
        [sys.executable, __file__, *sys.argv[1:], "--role", "reference"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return float(figures["tokens_per_s"]), int(figures["parameters"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny-gpt2", choices=sorted(SHAPES))
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--compile", action="store_true")
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
    with tempfile.TemporaryDirectory(prefix="workload-reference-") as tmp:
        ratios, parameters = take_turns(args, Path(tmp), env)
    print(f"both sides train {parameters:,} parameters")
    print(
        f"{args.model} b{args.batch} on {args.device}"
        f"{' (compile)' if args.compile else ''}, {env['OMP_NUM_THREADS']} thread(s) a side: "
        f"median ratio torchscale / reference {statistics.median(ratios):.3f} "
        f"(rounds {min(ratios):.3f}-{max(ratios):.3f}); {verdict(ratios)}"
    )


def take_turns(
    args: argparse.Namespace, workdir: Path, env: dict[str, str]
) -> tuple[list[float], int]:
    """ROUNDS rounds of both sides, the order swapped every round: the ratios, and the
    parameter count both sides train (a mismatch ends the run)."""
    ratios = []
    parameters = 0
    for round_ in range(1, args.rounds + 1):
        cell_dir = workdir / f"round{round_}"
        if round_ % 2:
            bare, bare_params = reference_subprocess(env)
            ours, our_params = torchscale_run(args, cell_dir, env)
        else:
            ours, our_params = torchscale_run(args, cell_dir, env)
            bare, bare_params = reference_subprocess(env)
        if bare_params != our_params:
            sys.exit(
                f"the two sides train different models: reference {bare_params:,} parameters, "
                f"torchscale {our_params:,}"
            )
        ratios.append(ours / bare)
        print(
            f"round {round_} ({'reference' if round_ % 2 else 'torchscale'} first): reference "
            f"{bare:,.0f} tokens/s, torchscale {ours:,.0f} tokens/s, ratio {ours / bare:.3f}",
            flush=True,
        )
        parameters = bare_params
    return ratios, parameters


TARGET = 0.97  # the cell reaches at least 97 % of the bare loop's tokens/s


def verdict(ratios: list[float]) -> str:
    """The target judged by the median ratio's 95 % interval (Student t on the log ratios over
    the rounds, as torchscale judges several runs of a cell: each round runs both loops anew,
    so the rounds' spread holds the drift between runs): met, missed, or not settled."""
    from torchscale.offline.analysis.uncertainty import median_of_runs

    median = median_of_runs(ratios)
    if median.low is None or median.high is None:
        return f"one round: no interval, the target ({TARGET}) is not judged"
    interval = f"95 % interval {median.low:.3f}-{median.high:.3f}"
    if median.low >= TARGET:
        return f"{interval}: meets the target (>= {TARGET})"
    if median.high < TARGET:
        return f"{interval}: below the target (>= {TARGET})"
    return f"{interval}: spans the target {TARGET}, not settled by {len(ratios)} rounds"


if __name__ == "__main__":
    main()
