"""Trace analysis speed and memory: MB of uncompressed trace JSON analysed per second, and the
peak memory the analysis adds, against a bare baseline in the same run (the stdlib `json` just
loading the same files), and against Holistic Trace Analysis when it is installed.

Every measurement runs in a fresh child process, so peak RSS is that job's alone (growth over
the RSS right after imports). Inputs: every folder of ../shared/traces (real GPU traces) and a
generated multi-rank trace directory of at least --large-mb MB uncompressed.

    python benchmarks/trace_analysis.py                  # shared traces + a 520 MB, 8-rank set
    python benchmarks/trace_analysis.py --large-mb 0     # shared traces only
    pip install holistictraceanalysis && python benchmarks/trace_analysis.py --hta

Targets (issue 7): >= 100 MB/s per core; peak growth <= 1.5x the largest single rank file.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "traces"

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
mode, directory = sys.argv[1], Path(sys.argv[2])
if mode == "torchscale":
    from torchscale.profiling.analyze import analyze_directory
elif mode == "json":
    import gzip
elif mode == "hta":
    from hta.trace_analysis import TraceAnalysis
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
cpu0, wall0 = time.process_time(), time.perf_counter()
extra = {}
if mode == "torchscale":
    analysis = analyze_directory(directory)
    extra = {"sync_stall_pct": analysis.sync_stall_pct, "overlap_pct": analysis.overlap_pct,
             "ranks": analysis.ranks_analysed}
elif mode == "json":
    for path in sorted(directory.iterdir()):
        if path.name.endswith(".json.gz"):
            with gzip.open(path, "rb") as f:
                json.load(f)
        elif path.name.endswith(".json"):
            with path.open("rb") as f:
                json.load(f)
else:
    analyzer = TraceAnalysis(trace_dir=str(directory))
    overlap = analyzer.get_comm_comp_overlap(visualize=False)
    extra = {"overlap_pct": overlap.to_dict(orient="records")}
    try:
        breakdown = analyzer.get_temporal_breakdown(visualize=False)
        extra["temporal"] = breakdown.to_dict(orient="records")
    except Exception as exc:  # HTA fails on some inputs: report it, do not hide it
        extra["temporal_error"] = repr(exc)[:200]
cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"cpu_s": cpu, "wall_s": wall, "base": base, "peak": peak, "extra": extra},
                 default=str))
"""


def uncompressed_sizes(directory: Path) -> list[int]:
    sizes = []
    for path in sorted(directory.iterdir()):
        if path.name.endswith(".json.gz"):
            with gzip.open(path, "rb") as handle:
                sizes.append(sum(len(chunk) for chunk in iter(lambda: handle.read(1 << 24), b"")))
        elif path.name.endswith(".json"):
            sizes.append(path.stat().st_size)
    return sizes


def run_child(mode: str, directory: Path) -> dict[str, object] | None:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(directory)],
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
    )
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        print(f"    {mode}: failed: {tail}")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def measure(name: str, directory: Path, hta: bool) -> None:
    sizes = uncompressed_sizes(directory)
    total_mb, largest_mb = sum(sizes) / 1e6, max(sizes) / 1e6
    print(
        f"\n{name}: {len(sizes)} file(s), {total_mb:.1f} MB uncompressed, "
        f"largest {largest_mb:.1f} MB"
    )
    rows = {}
    for mode in ("json", "torchscale", *(("hta",) if hta else ())):
        result = run_child(mode, directory)
        if result is None:
            continue
        rows[mode] = result
        cpu = float(result["cpu_s"])  # type: ignore[arg-type]
        growth = (int(result["peak"]) - int(result["base"])) / 1e6  # type: ignore[call-overload]
        print(
            f"    {mode:<10} {total_mb / cpu:7.1f} MB/s per core ({cpu:6.2f} s CPU, "
            f"{float(result['wall_s']):6.2f} s wall)  peak growth {growth:7.1f} MB "  # type: ignore[arg-type]
            f"= {growth / largest_mb:4.2f}x the largest file"
        )
    if "json" in rows and "torchscale" in rows:
        ratio = float(rows["json"]["cpu_s"]) / float(rows["torchscale"]["cpu_s"])  # type: ignore[arg-type]
        print(f"    torchscale full analysis vs bare json.load: {ratio:.2f}x the speed")
    if "hta" in rows and "torchscale" in rows:
        ratio = float(rows["hta"]["cpu_s"]) / float(rows["torchscale"]["cpu_s"])  # type: ignore[arg-type]
        print(f"    HTA load+overlap+temporal vs torchscale: {ratio:.2f}x the CPU time")
        print(f"    HTA: {json.dumps(rows['hta']['extra'])[:400]}")
        print(f"    torchscale: {json.dumps(rows['torchscale']['extra'])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--large-mb", type=float, default=520.0, help="0: skip the generated set")
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--hta", action="store_true", help="also time Holistic Trace Analysis")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}; one child process per measurement")
    if SHARED.is_dir():
        for folder in sorted(p for p in SHARED.iterdir() if p.is_dir()):
            measure(f"shared/{folder.name}", folder, args.hta)
    if args.large_mb > 0:
        from torchscale.traces.synthetic import write_synthetic_traces

        # ~1.1 MB of JSON per rank and step at 2500 events per step
        steps = max(2, int(args.large_mb / args.ranks / 1.1))
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            write_synthetic_traces(
                Path(tmp),
                ranks=args.ranks,
                steps=steps,
                straggler=1,
                delay_us=5_000,
                events_per_step=2500,
                skew_us=2e6,
            )
            took = time.perf_counter() - started
            print(f"\ngenerated {args.ranks} ranks x {steps} steps in {took:.0f} s")
            measure(f"generated ({args.ranks} ranks)", Path(tmp), args.hta)


if __name__ == "__main__":
    main()
