"""The default HTML report (SVG charts inline, no plotly) in a real headless Chromium, on the real
8-cell sweep of tests/fixtures/cpu_default_sweep: every chart is drawn (an SVG with marks, a size on
the page, a hover <title> on each series), the page logs nothing to the console, and its
Content-Security-Policy lets its own scripts run (the error recorder and the table cues leave
their marks in the DOM) while it still refuses a script it does not list.

Two launches: the page as written (console, CSP, DOM), and a copy with a probe that measures
each chart's box (allowed by hash) and a script the policy does not list (the negative control:
its refusal must reach the console, so an empty console above means something).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.interfaces.test_report_browser import (
    CHROMIUM,
    Node,
    Tree,
    chromium_argv,
    run_chromium,
    wait_gone,
)
from torchscale.interfaces.api import build_report
from torchscale.interfaces.report.model import Report

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="needs a headless Chromium on PATH (Debian package `chromium`; CI installs it)",
)

SWEEP = Path(__file__).resolve().parents[1] / "fixtures" / "cpu_default_sweep"
CONSOLE = re.compile(r":CONSOLE(?::|\()")  # Chromium's log line for a console message
PROBE = """(function () {
  "use strict";
  var boxes = {};
  var charts = document.querySelectorAll(".chart-svg");
  for (var i = 0; i < charts.length; i++) {
    var svg = charts[i].querySelector("svg");
    var r = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    boxes[charts[i].id] = [r.width, r.height];
  }
  document.body.setAttribute("data-chart-boxes", JSON.stringify(boxes));
})();"""
UNLISTED = "<script>document.body.setAttribute('data-unlisted', 'ran')</script>"


@dataclass
class Loaded:
    dom: Node
    console: list[str]


def _load(work: Path, page: bytes) -> Loaded:
    path = work / f"svg-page-{uuid.uuid4().hex}.html"
    path.write_bytes(page)
    profile = work / f"chromium-profile-{uuid.uuid4().hex}"
    argv = chromium_argv(
        profile, "--window-size=1440,900", "--enable-logging=stderr", "--v=0", "--dump-dom"
    )
    result = run_chromium([*argv, path.as_uri()])
    assert wait_gone(str(profile)) == []
    shutil.rmtree(profile, ignore_errors=True)
    assert result.returncode == 0, result.stderr[-2000:]
    tree = Tree()
    tree.feed(result.stdout)
    tree.close()
    return Loaded(tree.root, [line for line in result.stderr.splitlines() if CONSOLE.search(line)])


def _csp_hash(script: str) -> str:
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, bytes]:
    """The sweep's default HTML report, as `torchscale report -f html` writes it."""
    output = tmp_path_factory.mktemp("svg-report") / "report.html"
    run = build_report(SWEEP, "html", output=output)
    return run.report, output.read_bytes()


@pytest.fixture(scope="module")
def as_written(written: tuple[Report, bytes], tmp_path_factory: pytest.TempPathFactory) -> Loaded:
    return _load(tmp_path_factory.mktemp("svg-browser"), written[1])


@pytest.fixture(scope="module")
def probed(written: tuple[Report, bytes], tmp_path_factory: pytest.TempPathFactory) -> Loaded:
    text = written[1].decode("utf-8")
    text, count = re.subn("script-src ", f"script-src {_csp_hash(PROBE)} ", text, count=1)
    assert count == 1
    text = text.replace("</body>", f"{UNLISTED}<script>{PROBE}</script></body>", 1)
    return _load(tmp_path_factory.mktemp("svg-probe"), text.encode("utf-8"))


def _body(loaded: Loaded) -> Node:
    (body,) = [n for n in loaded.dom.iter() if n.tag == "body"]
    return body


@pytest.mark.slow
def test_the_default_page_is_svg_without_plotly(written: tuple[Report, bytes]) -> None:
    page = written[1]
    assert b"data-lib=" not in page and b"Plotly" not in page
    assert written[0].charts()


@pytest.mark.slow
def test_the_page_logs_nothing_and_its_scripts_run(as_written: Loaded) -> None:
    assert as_written.console == []
    body = _body(as_written)
    # the recorder ran (it sets the attribute) and recorded nothing: no error, no CSP block
    assert body.attrs.get("data-js-errors") == ""
    # the table cues ran: every table box carries its widths
    boxes = [n for n in as_written.dom.iter() if "table-scroll" in n.classes()]
    assert boxes and all("data-widths" in box.attrs for box in boxes)


@pytest.mark.slow
def test_the_policy_still_refuses_a_script_it_does_not_list(probed: Loaded) -> None:
    body = _body(probed)
    assert "data-unlisted" not in body.attrs
    assert "blocked by CSP: script-src" in body.attrs.get("data-js-errors", "")
    assert [line for line in probed.console if "Content Security Policy" in line]


@pytest.mark.slow
def test_every_chart_is_drawn_with_hover_titles(
    written: tuple[Report, bytes], as_written: Loaded, probed: Loaded
) -> None:
    charts = written[0].charts()
    assert _body(as_written).attrs.get("data-charts-rendered") == str(len(charts))
    boxes: dict[str, Any] = json.loads(_body(probed).attrs["data-chart-boxes"])
    assert sorted(boxes) == sorted(c.id for c in charts)
    for chart in charts:
        width, height = boxes[chart.id]
        assert width > 200 and height > 100, (chart.id, width, height)  # laid out, not empty
        (holder,) = [n for n in as_written.dom.iter() if n.attrs.get("id") == chart.id]
        (svg,) = [n for n in holder.children if isinstance(n, Node) and n.tag == "svg"]
        assert [n for n in svg.iter() if n.tag == "text"], chart.id  # axes and labels
        # each series is a group holding its marks and, for the hover, its values as <title>
        titled = [g for g in svg.iter() if g.tag == "g" and any(_titles(g))]
        if chart.series:
            assert titled, chart.id
        for group in titled:
            assert all(_titles(group)), chart.id
            assert [n for n in group.iter() if n.tag in MARKS], chart.id


MARKS = ("path", "use", "rect", "polyline", "polygon", "circle")


def _titles(group: Node) -> list[str]:
    return [c.text().strip() for c in group.children if isinstance(c, Node) and c.tag == "title"]
