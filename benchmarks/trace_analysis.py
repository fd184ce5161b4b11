"""Trace analysis speed and memory: MB of uncompressed trace JSON analysed per second, and the
peak memory the analysis adds, against a bare baseline in the same run (the stdlib `json` just
loading the same files), and against Holistic Trace Analysis when it is installed.

Every measurement runs in a fresh child process, so peak RSS is that job's alone (growth over
the RSS right after imports). Inputs: every folder of ../shared/traces (real GPU traces) and a
generated multi-rank trace directory of at least --large-mb MB uncompressed.

    python benchmarks/trace_analysis.py                  # shared traces + a 520 MB, 8-rank set
    python benchmarks/trace_analysis.py --large-mb 0     # shared traces only
    pip install holistictraceanalysis && python benchmarks/trace_analysis.py --hta
    python benchmarks/trace_analysis.py --large-mb 0 --hta-python /tmp/htavenv/bin/python

Targets: >= 100 MB/s per core; peak growth <= 1.5x the largest single rank file.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "traces"

CHILD = r"""
import json, os, resource, sys, time
from pathlib import Path
def cpu_time():  # this process and its finished children (HTA parses ranks in a process pool)
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
def peak_rss():
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return max(own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) * 1024
mode, directory = sys.argv[1], Path(sys.argv[2])
if mode == "torchscale":
    from torchscale.offline.results.profile_figures import sync_stall_pct
    from torchscale.orchestration.profiling.analyze import analyze_directory
elif mode == "json":
    import gzip
elif mode.startswith("hta"):
    from hta.trace_analysis import TraceAnalysis
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
cpu0, wall0 = cpu_time(), time.perf_counter()
extra = {}
if mode == "torchscale":
    analysis = analyze_directory(directory)
    extra = {"sync_stall_pct": sync_stall_pct(analysis).value, "overlap_pct": analysis.overlap_pct,
             "ranks": analysis.ranks_analysed,
             "steps_overlap": {r.rank: r.overlap_pct for r in analysis.ranks}}
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
    extra = {"overlap": {int(r["rank"]): r["comp_comm_overlap_pctg"]
                         for r in overlap.to_dict(orient="records")}}
    try:
        breakdown = analyzer.get_temporal_breakdown(visualize=False)
        extra["idle"] = {int(r["rank"]): r["idle_time_pctg"]
                         for r in breakdown.to_dict(orient="records")}
        extra["compute"] = {int(r["rank"]): r["compute_time_pctg"]
                            for r in breakdown.to_dict(orient="records")}
    except Exception as exc:  # HTA fails on some inputs: report it, do not hide it
        extra["temporal_error"] = repr(exc)[:200]
cpu, wall = cpu_time() - cpu0, time.perf_counter() - wall0
peak = peak_rss()
if mode == "torchscale" and len(sys.argv) > 3:  # HTA's scope, outside the timed part
    sys.path.insert(0, sys.argv[3])
    from hta_scope import hta_scope_figures
    extra["hta_scope"] = hta_scope_figures(directory)
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


def run_child(mode: str, directory: Path, python: str, hta: bool) -> dict[str, object] | None:
    argv = [python, "-c", CHILD, mode, str(directory)]
    if mode == "torchscale" and hta:
        argv.append(str(Path(__file__).resolve().parent))  # where hta_scope.py lives
    env = dict(os.environ)
    if mode == "hta-exact":  # HTA shrinks every event to whole microseconds unless told not to
        env["HTA_DISABLE_NS_ROUNDING"] = "1"
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=1800, env=env)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        print(f"    {mode}: failed: {tail}")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _cell(value: object) -> str:
    return f"{float(value):7.2f}" if isinstance(value, (int, float)) else f"{'-':>7}"


def print_comparison(
    ours: dict[str, object], hta: dict[str, object], exact: dict[str, object]
) -> None:
    """Per rank, HTA's figure (as shipped, and with its rounding to whole microseconds turned
    off) next to ours on three scopes: HTA's kernel set (launched before the last
    ProfilerStep), the whole trace, and full ProfilerStep windows (what `profile analyze`
    reports, median step)."""
    scope = ours.get("hta_scope") or {}
    steps = ours.get("steps_overlap") or {}
    assert isinstance(scope, dict) and isinstance(steps, dict)
    print("    overlap % (comm time with compute running / comm time), per rank:")
    print(
        "      rank      HTA  HTA-exact  ours@HTA-scope  ours@whole  ours@steps"
        "   idle% HTA  HTA-exact  ours@HTA-scope"
    )
    overlap = hta.get("overlap") or {}
    idle = hta.get("idle") or {}
    overlap_x = exact.get("overlap") or {}
    idle_x = exact.get("idle") or {}
    assert isinstance(overlap, dict) and isinstance(idle, dict)
    assert isinstance(overlap_x, dict) and isinstance(idle_x, dict)
    for rank in sorted({int(r) for r in overlap} | {int(r) for r in scope}):
        mine = scope.get(str(rank)) or scope.get(rank) or {}
        print(
            f"      {rank:>4}  {_cell(overlap.get(str(rank), overlap.get(rank)))}"
            f"    {_cell(overlap_x.get(str(rank), overlap_x.get(rank)))}"
            f"  {_cell(mine.get('hta_scope_overlap_pct'))}       "
            f"  {_cell(mine.get('whole_overlap_pct'))}"
            f"    {_cell(steps.get(str(rank), steps.get(rank)))}"
            f"     {_cell(idle.get(str(rank), idle.get(rank)))}"
            f"    {_cell(idle_x.get(str(rank), idle_x.get(rank)))}"
            f"         {_cell(mine.get('hta_scope_idle_pct'))}"
        )
    if "temporal_error" in hta:
        print(f"      HTA temporal breakdown failed: {hta['temporal_error']}")


def measure(name: str, directory: Path, hta_python: str | None) -> None:
    sizes = uncompressed_sizes(directory)
    total_mb, largest_mb = sum(sizes) / 1e6, max(sizes) / 1e6
    print(
        f"\n{name}: {len(sizes)} file(s), {total_mb:.1f} MB uncompressed, "
        f"largest {largest_mb:.1f} MB"
    )
    rows = {}
    for mode in ("json", "torchscale", *(("hta", "hta-exact") if hta_python else ())):
        python = hta_python if mode.startswith("hta") and hta_python else sys.executable
        result = run_child(mode, directory, python, hta_python is not None)
        if result is None:
            continue
        rows[mode] = result
        if mode == "hta-exact":
            continue  # figures only: the timed HTA run is the default one
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
        hta_growth = int(rows["hta"]["peak"]) - int(rows["hta"]["base"])  # type: ignore[call-overload]
        our_growth = int(rows["torchscale"]["peak"]) - int(rows["torchscale"]["base"])  # type: ignore[call-overload]
        print(
            f"    HTA (load + overlap + temporal) vs torchscale (full analysis): {ratio:.2f}x "
            f"the CPU time, {hta_growth / max(our_growth, 1):.2f}x the peak growth"
        )
        exact = rows.get("hta-exact", {}).get("extra", {})
        print_comparison(rows["torchscale"]["extra"], rows["hta"]["extra"], exact)  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--large-mb", type=float, default=520.0, help="0: skip the generated set")
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--hta", action="store_true", help="also run Holistic Trace Analysis")
    parser.add_argument(
        "--hta-python",
        default=None,
        help="interpreter that has holistictraceanalysis (default: this one); keeps HTA and "
        "its Jupyter dependencies out of the project's environment",
    )
    args = parser.parse_args()
    hta_python = (args.hta_python or sys.executable) if (args.hta or args.hta_python) else None
    print(f"python {sys.version.split()[0]}; one child process per measurement")
    if SHARED.is_dir():
        for folder in sorted(p for p in SHARED.iterdir() if p.is_dir()):
            measure(f"shared/{folder.name}", folder, hta_python)
    if args.large_mb > 0:
        from synthetic_traces import write_synthetic_traces

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
            measure(f"generated ({args.ranks} ranks)", Path(tmp), hta_python)


if __name__ == "__main__":
    main()
