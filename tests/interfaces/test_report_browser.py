"""The HTML report in a real headless Chromium: charts drawn, no JavaScript error, hostile
strings shown as text and never run. One browser launch for the module; every process it
starts is killed (its whole process group) and checked gone.

Run as a script to save a screenshot of the sample report:
    python tests/interfaces/test_report_browser.py /tmp/report_html.png
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.report_sample import HOSTILE, sample_report
from torchscale.interfaces.report.model import Report
from torchscale.interfaces.report.render import html as html_format

CHROMIUM = shutil.which("chromium")
TIMEOUT_S = 90
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="needs a headless Chromium on PATH (Debian package `chromium`; CI installs it)",
)


def render(report: Report) -> bytes:
    """The interactive page (plotly), what this module checks in a browser."""
    return html_format.render(report, interactive=True)


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.iter()

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


class Tree(HTMLParser):
    """A lenient DOM tree of Chromium's serialised DOM (HTML with inline SVG)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def chromium_argv(profile: Path, *action: str) -> list[str]:
    assert CHROMIUM is not None
    return [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=5000",
        *action,
    ]


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run_chromium(argv: list[str], timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """Chromium in its own session; its whole process group is killed afterwards, whether it
    finished, timed out or the test was interrupted (renderer and zygote helpers included)."""
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        _kill_group(proc.pid)
        proc.communicate()
        raise
    finally:
        _kill_group(proc.pid)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def processes_mentioning(marker: str) -> list[int]:
    """Live processes whose command line contains `marker` (Linux /proc; pgrep elsewhere)."""
    proc = Path("/proc")
    if not proc.is_dir():
        pgrep = shutil.which("pgrep")
        if pgrep is None:
            return []
        found = subprocess.run([pgrep, "-f", marker], capture_output=True, text=True, check=False)
        return [int(pid) for pid in found.stdout.split()]
    pids = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            pids.append(int(entry.name))
    return pids


def wait_gone(marker: str, within_s: float = 10.0) -> list[int]:
    deadline = time.monotonic() + within_s
    while (left := processes_mentioning(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@dataclass
class Dumped:
    report: Report
    dom: Node
    leftover: list[int]


def dump_dom(work: Path, page: bytes) -> tuple[Node, list[int]]:
    """The DOM of `page` after its scripts ran, and any process of that launch still alive."""
    path = work / f"page-{uuid.uuid4().hex}.html"
    path.write_bytes(page)
    profile = work / f"chromium-profile-{uuid.uuid4().hex}"
    result = run_chromium(chromium_argv(profile, "--dump-dom", path.as_uri()))
    leftover = wait_gone(str(profile))
    shutil.rmtree(profile, ignore_errors=True)  # a browser profile is megabytes of cache
    assert result.returncode == 0, result.stderr[-2000:]
    tree = Tree()
    tree.feed(result.stdout)
    tree.close()
    return tree.root, leftover


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("report-browser")


@pytest.fixture(scope="module")
def dumped(work: Path) -> Dumped:
    report = sample_report(4)
    dom, leftover = dump_dom(work, render(report))
    return Dumped(report, dom, leftover)


@pytest.fixture(scope="module")
def injected(work: Path) -> Dumped:
    """A negative control: the report with markup spliced in raw, as if escaping had failed.
    The page's CSP must stop it, and the error recorder must say so (so an empty
    data-js-errors in the other tests means something)."""
    report = sample_report(1)
    payload = (
        "<script>document.body.setAttribute('data-pwned', 'script')</script>"
        "<img src=x onerror=\"document.body.setAttribute('data-pwned', 'img')\">"
    )
    page = render(report).replace(b"</main>", payload.encode() + b"</main>", 1)
    dom, leftover = dump_dom(work, page)
    return Dumped(report, dom, leftover)


def body(dumped: Dumped) -> Node:
    return next(n for n in dumped.dom.iter() if n.tag == "body")


def element(dumped: Dumped, element_id: str) -> Node:
    found = [n for n in dumped.dom.iter() if n.attrs.get("id") == element_id]
    assert len(found) == 1, element_id
    return found[0]


@pytest.mark.slow
def test_no_javascript_errors(dumped: Dumped) -> None:
    # the page's own recorder: errors, failed loads, unhandled rejections, CSP blocks
    assert body(dumped).attrs.get("data-js-errors") == ""


@pytest.mark.slow
def test_every_chart_is_drawn(dumped: Dumped) -> None:
    charts = dumped.report.charts()
    assert body(dumped).attrs.get("data-charts-rendered") == str(len(charts))
    for chart in charts:
        div = element(dumped, chart.id)
        svgs = [n for n in div.iter() if n.tag == "svg" and "main-svg" in n.classes()]
        assert svgs, f"chart {chart.id} has no plotly svg"
        plotted = [n for n in div.iter() if n.tag == "g" and n.classes() & {"trace", "hm"}]
        assert plotted or chart.kind == "heatmap", f"chart {chart.id} drew no trace"


@pytest.mark.slow
def test_hostile_text_is_shown_literally(dumped: Dumped) -> None:
    line = element(dumped, "throughput-vs-gpus")
    titles = [n.text() for n in line.iter() if "gtitle" in n.classes()]
    assert titles == [f"Throughput vs GPUs {HOSTILE}"]
    legend = [n.text() for n in line.iter() if "legendtext" in n.classes()]
    assert f"{HOSTILE} b16" in legend
    (h1,) = [n for n in dumped.dom.iter() if n.tag == "h1"]
    assert h1.text() == f"Scaling report {HOSTILE}"


@pytest.mark.slow
def test_nothing_was_injected(dumped: Dumped) -> None:
    nodes = list(dumped.dom.iter())
    assert [n for n in nodes if n.tag == "img" and n.attrs.get("src") == "x"] == []
    assert [n for n in nodes if n.tag in ("img", "iframe", "object", "embed")] == []
    assert [(n.tag, a) for n in nodes for a in n.attrs if a.lower() == "onerror"] == []
    scripts = [n for n in nodes if n.tag == "script"]
    # ours only: error recorder, table cues, plotly.js, chart drawing and one JSON block per
    # chart
    assert len(scripts) == 4 + len(dumped.report.charts())
    assert all("<script" not in s.text().lower() for s in scripts if "data-lib" not in s.attrs)
    links = [n.attrs["href"] for n in nodes if n.tag == "a" and "href" in n.attrs]
    assert not [h for h in links if h.lower().startswith("javascript:")]


@pytest.mark.slow
def test_csp_stops_markup_that_escaped_escaping(injected: Dumped) -> None:
    attrs = body(injected).attrs
    assert "data-pwned" not in attrs
    errors = attrs.get("data-js-errors", "")
    assert "blocked by CSP: script-src" in errors  # the inline <script> and the onerror handler
    assert "blocked by CSP: img-src" in errors  # and nothing is fetched, not even a local file
    assert attrs.get("data-charts-rendered") == str(len(injected.report.charts()))


@pytest.mark.slow
def test_no_chromium_process_is_left(dumped: Dumped, injected: Dumped) -> None:
    assert dumped.leftover == []
    assert injected.leftover == []


def screenshot(out: Path, width: int = 1280, height: int = 4300) -> None:
    """A screenshot of the sample report (for a person to look at, not asserted)."""
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"report-shot-{uuid.uuid4().hex}"
    work.mkdir(parents=True)
    try:
        page = work / "report.html"
        page.write_bytes(render(sample_report(4)))
        argv = chromium_argv(
            work / "profile",
            "--hide-scrollbars",
            f"--window-size={width},{height}",
            f"--screenshot={out.resolve()}",
            page.as_uri(),
        )
        result = run_chromium(argv)
        if result.returncode != 0:
            raise SystemExit(result.stderr[-2000:])
        wait_gone(str(work))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if CHROMIUM is None:
        raise SystemExit("chromium is not on PATH")
    screenshot(Path(sys.argv[1] if len(sys.argv) > 1 else "report_html.png"))
