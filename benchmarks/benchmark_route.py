"""The route of one benchmark: a 1-cell CPU run followed call by call from `api.run_benchmark`.

Runs `torchscale.api.run_benchmark` in this process on a tiny config (tiny-mlp, one CPU rank,
a few steps) with a profile hook (`sys.setprofile`) on the host process, and prints:

- the steps: every call from one torchscale module into another (calls made while a module is
  being imported do not count: they are the import, not the route), with each module's layer
  (the map of tests/project/test_architecture.py: contracts 1, rank and offline 2, orchestration 3,
  interfaces 4);
- the modules visited, and the calls into a module the route had already left (re-entries);
- the calls from a lower layer into a higher one, in two kinds: a callback (the caller does not
  import the callee's module: the function or object was handed down to it, as the sweep's
  hooks are) and a real call back up (the caller imports the higher module: what the layers
  forbid);
- how many times each file of the experiment is written, in every process: the host's writes
  through `torchscale.contracts.atomic` and its renames onto a file, and the ranks' atomic
  writes (the ranks run in torchrun's children: a `sitecustomize` on their PYTHONPATH records
  them). A result file written twice means one process rewrote what another wrote.

The rank side itself (inside torchrun) is not traced: its route is the worker's, one process
per rank. `--steps` prints every step, `--out DIR` keeps the results directory.

    python benchmarks/benchmark_route.py [--steps] [--out DIR]
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import linecache
import os
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "torchscale"
WRITES_ENV = "TORCHSCALE_ROUTE_WRITES"  # the file every process appends its writes to

TINY: dict[str, Any] = {
    "experiment_name": "route",
    "models": ["tiny-mlp"],
    "batch_sizes": [4],
    "gpu_counts": [1],
    "device": "cpu",
    "measurement": {"warmup_steps": 1, "steps": 3, "repeats": 1},
    "launcher": {"cell_timeout_s": 300, "omp_num_threads": 1},
}

# loaded into every child interpreter (torchrun, its ranks) from the PYTHONPATH: each atomic
# write appended to WRITES_ENV's file as one JSON line
SITECUSTOMIZE = """
import json, os
_log = os.environ.get("{env}")
if _log:
    import torchscale.contracts.atomic as _atomic
    _write = _atomic.write_bytes_atomic

    def write_bytes_atomic(path, data):
        written = _write(path, data)
        line = json.dumps({{"pid": os.getpid(), "how": "atomic", "path": str(written),
                           "rank": os.environ.get("RANK")}}) + "\\n"
        with open(_log, "a", encoding="utf-8") as handle:
            handle.write(line)
        return written

    _atomic.write_bytes_atomic = write_bytes_atomic
"""


def _layers() -> dict[str, int]:
    """The layer map tests/project/test_architecture.py enforces (one source: loaded, not
    copied)."""
    architecture = REPO / "tests" / "project" / "test_architecture.py"
    spec = importlib.util.spec_from_file_location("_arch", architecture)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.LAYERS)


LAYERS = _layers()


def layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS[parts[1] if len(parts) > 1 else "torchscale"]


def short(module: str) -> str:
    return module.removeprefix("torchscale.")


_IMPORTS: dict[str, set[str]] = {}


def imports_of(module: str) -> set[str]:
    """Every torchscale module `module` imports, wherever the statement stands (as the
    architecture test reads them): `from pkg import name` counts as pkg and pkg.name."""
    if module in _IMPORTS:
        return _IMPORTS[module]
    loaded = sys.modules.get(module)
    path = Path(getattr(loaded, "__file__", "") or "")
    found: set[str] = set()
    if path.suffix == ".py":
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                target = node.module or ""
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                found.add(target)
                found.update(f"{target}.{alias.name}" for alias in node.names)
    _IMPORTS[module] = found
    return found


@dataclass(frozen=True)
class Step:
    """One call from a torchscale module into another."""

    index: int
    depth: int  # module changes on the stack down to the callee (run_benchmark's: 0)
    caller: str
    caller_function: str
    callee: str
    callee_function: str
    line: str  # the caller's source line
    reentry: bool  # the callee's module was visited before and is not on the stack
    back: bool  # the callee's module is on the stack: a call back to a caller

    @property
    def up(self) -> bool:
        return layer(self.callee) > layer(self.caller)

    @property
    def callback(self) -> bool:
        """Reached as a value handed down: the caller does not import the callee's module."""
        return self.callee not in imports_of(self.caller)


def _qualname(frame: FrameType) -> str:
    code = frame.f_code
    return str(getattr(code, "co_qualname", code.co_name))  # Python 3.11+: with its class


@dataclass
class Tracer:
    """The profile hook: every torchscale frame on a stack per thread; a step where the
    module changes."""

    steps: list[Step] = field(default_factory=list)
    visited: set[str] = field(default_factory=set)
    _local: threading.local = field(default_factory=threading.local)

    def _stack(self) -> list[tuple[FrameType, str, bool, int]]:
        stack: list[tuple[FrameType, str, bool, int]] | None = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event not in ("call", "return"):
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("torchscale."):
            return
        stack = self._stack()
        if event == "return":
            while stack:
                top = stack.pop()[0]
                if top is frame:
                    break
            return
        importing = frame.f_code.co_name == "<module>" or bool(stack and stack[-1][2])
        depth = stack[-1][3] if stack else 0
        if stack and not importing and stack[-1][1] != module:
            caller_frame, caller, _, _ = stack[-1]
            on_stack = {m for _, m, _, _ in stack}
            depth += 1
            self.steps.append(
                Step(
                    index=len(self.steps) + 1,
                    depth=depth,
                    caller=caller,
                    caller_function=_qualname(caller_frame),
                    callee=module,
                    callee_function=_qualname(frame),
                    line=linecache.getline(
                        caller_frame.f_code.co_filename, caller_frame.f_lineno
                    ).strip(),
                    reentry=module in self.visited and module not in on_stack,
                    back=module in on_stack,
                )
            )
        if not importing:
            self.visited.add(module)
        stack.append((frame, module, importing, depth))


@contextmanager
def traced(tracer: Tracer) -> Iterator[None]:
    threading.setprofile(tracer)
    sys.setprofile(tracer)
    try:
        yield
    finally:
        sys.setprofile(None)
        threading.setprofile(None)


_IN_ATOMIC = threading.local()


@contextmanager
def host_writes(log: Path) -> Iterator[None]:
    """Record the host's atomic writes and its renames onto a file (not the atomic writer's
    own rename of its temporary file) in `log`, as the children's sitecustomize does."""
    import torchscale.contracts.atomic as atomic

    def record(how: str, path: Any) -> None:
        line = {"pid": os.getpid(), "how": how, "path": str(path), "rank": None}
        with log.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")

    original_write = atomic.write_bytes_atomic
    original_os_replace = os.replace  # Path.replace calls it

    def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
        _IN_ATOMIC.on = True
        try:
            written = original_write(path, data)
        finally:
            _IN_ATOMIC.on = False
        record("atomic", written)
        return written

    def os_replace(src: Any, dst: Any, **kwargs: Any) -> None:
        original_os_replace(src, dst, **kwargs)
        if not getattr(_IN_ATOMIC, "on", False):
            record("rename", dst)

    atomic.write_bytes_atomic = write_bytes_atomic
    os.replace = os_replace
    try:
        yield
    finally:
        atomic.write_bytes_atomic = original_write
        os.replace = original_os_replace


def run(out: Path, cli_events: bool) -> tuple[Tracer, list[dict[str, Any]], Path, Any]:
    """Run the tiny benchmark traced; the tracer, every write, the experiment root, the run.
    `cli_events`: with the events `torchscale benchmark` passes (its printer, whose lines go
    to this process's output), else none."""
    from torchscale import api
    from torchscale.orchestration.config.loader import load_config

    with tempfile.TemporaryDirectory(prefix="route-") as temporary:
        work = Path(temporary)
        config_path = work / "route.yaml"
        config_path.write_text(json.dumps(TINY), encoding="utf-8")
        (work / "sitecustomize.py").write_text(SITECUSTOMIZE.format(env=WRITES_ENV), "utf-8")
        writes_log = work / "writes.jsonl"
        writes_log.touch()
        python_path = [str(work), str(REPO), os.environ.get("PYTHONPATH", "")]
        env = {
            **os.environ,
            WRITES_ENV: str(writes_log),
            "PYTHONPATH": os.pathsep.join(p for p in python_path if p),
        }
        config = load_config(config_path, [])
        events = None
        if cli_events:
            from torchscale.interfaces.console.benchmark import BenchmarkPrinter

            plan = api.plan_benchmark(config)
            events = BenchmarkPrinter(len(plan.cells), plan).events()
        tracer = Tracer()
        with host_writes(writes_log), traced(tracer):
            benchmark = api.run_benchmark(config, out, env=env, events=events)
        lines = writes_log.read_text(encoding="utf-8").splitlines()
    return tracer, [json.loads(line) for line in lines], out / config.experiment_name, benchmark


def _where(step: Step, callee: bool) -> str:
    module = step.callee if callee else step.caller
    function = step.callee_function if callee else step.caller_function
    return f"{layer(module)} {short(module)}.{function}"


def _route(steps: list[Step]) -> list[tuple[Step, list[str]]]:
    """The route by module: each step with the functions it called in its module, a run of
    consecutive steps into one module at one depth folded into the first."""
    route: list[tuple[Step, list[str]]] = []
    for step in steps:
        if route and (route[-1][0].depth, route[-1][0].callee) == (step.depth, step.callee):
            if step.callee_function not in route[-1][1]:
                route[-1][1].append(step.callee_function)
        else:
            route.append((step, [step.callee_function]))
    return route


@dataclass(frozen=True)
class Route:
    """What the tool measures of one run (pure: from the tracer's steps and the writes)."""

    steps: list[Step]
    writes: Counter[str]  # file (relative to the experiment) -> times written
    writers: dict[str, set[str]]  # file -> who wrote it and how ('host atomic', 'rank 0 ...')

    @property
    def modules(self) -> set[str]:
        return {s.callee for s in self.steps} | {s.caller for s in self.steps}

    @property
    def up(self) -> list[Step]:
        return [s for s in self.steps if s.up]

    @property
    def real_up(self) -> list[Step]:
        return [s for s in self.up if not s.callback]

    @property
    def callbacks_up(self) -> list[Step]:
        return [s for s in self.up if s.callback]

    @property
    def result_files(self) -> list[str]:
        return sorted(f for f in self.writes if f.startswith("cells/"))

    def counts(self) -> list[tuple[str, int]]:
        return [
            ("steps (calls from one torchscale module into another)", len(self.steps)),
            ("modules visited", len(self.modules)),
            ("calls into a module already left (re-entries)", sum(s.reentry for s in self.steps)),
            (
                "calls back into a module on the stack (to a caller)",
                sum(s.back for s in self.steps),
            ),
            ("calls back up the layers, real (caller imports callee)", len(self.real_up)),
            ("calls back up the layers, callbacks (handed down)", len(self.callbacks_up)),
            ("result files (cells/)", len(self.result_files)),
            (
                "result files written more than once",
                sum(self.writes[f] > 1 for f in self.result_files),
            ),
        ]


def route_of(steps: list[Step], writes: list[dict[str, Any]], root: Path) -> Route:
    """The route: the steps, and the writes of files under the experiment `root` by path."""
    counted: Counter[str] = Counter()
    writers: dict[str, set[str]] = {}
    for w in writes:
        path = Path(w["path"])
        if not path.is_relative_to(root):
            continue
        rel = path.relative_to(root).as_posix()
        counted[rel] += 1
        process = "host" if w["rank"] is None else f"rank {w['rank']}"
        writers.setdefault(rel, set()).add(f"{process} {w['how']}")
    return Route(steps, counted, writers)


def report(route: Route, root: Path, every_step: bool) -> None:
    print("The route of one benchmark (1 cell, tiny-mlp, one CPU rank), from api.run_benchmark")
    print("  layers: 1 contracts, 2 rank/offline, 3 orchestration, 4 interfaces")
    print()
    if every_step:
        for s in route.steps:
            mark = " UP" if s.up else ""
            print(f"  {s.index:3d}. {'  ' * s.depth}{_where(s, True)}{mark}")
        print()
    print("the route by module (indent: nesting; layer, module: the functions called in it):")
    for number, (step, functions) in enumerate(_route(route.steps), start=1):
        indent = "  " * (step.depth - 1)
        called = ", ".join(functions)
        print(f"  {number:3d}. {indent}{layer(step.callee)} {short(step.callee)}: {called}")
    print()
    print(f"files written under {root} (atomic writes, and renames onto the file):")
    for rel in sorted(route.writes):
        flag = "   <- written more than once" if route.writes[rel] > 1 else ""
        print(f"  {route.writes[rel]}x {rel}  ({', '.join(sorted(route.writers[rel]))}){flag}")
    print()
    counts = route.counts()
    width = max(len(label) for label, _ in counts) + 1
    for label, count in counts:
        print(f"{label + ':':<{width}} {count}")
    for kind, listed in (("real", route.real_up), ("callback", route.callbacks_up)):
        for s, count in _folded(listed):
            print(
                f"  {kind}: {_where(s, False)} -> {_where(s, True)}"
                f"{f' x{count}' if count > 1 else ''}   [{s.line}]"
            )


def _folded(steps: list[Step]) -> list[tuple[Step, int]]:
    """Each distinct (caller function, callee function) once, with how often it was called."""
    seen: dict[tuple[str, str, str, str], tuple[Step, int]] = {}
    for s in steps:
        key = (s.caller, s.caller_function, s.callee, s.callee_function)
        step, count = seen.get(key, (s, 0))
        seen[key] = (step, count + 1)
    return list(seen.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", action="store_true", help="print every step")
    parser.add_argument("--out", type=Path, help="results directory to keep (default: a temp)")
    parser.add_argument(
        "--cli-events",
        action="store_true",
        help="pass the events `torchscale benchmark` passes (its printer: its callbacks count)",
    )
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="route-results-"))
    tracer, writes, root, benchmark = run(out, args.cli_events)
    statuses = [r.status.value for r in benchmark.sweep.results]
    report(route_of(tracer.steps, writes, root), root, args.steps)
    print(f"cell statuses: {', '.join(statuses)}")


if __name__ == "__main__":
    main()
