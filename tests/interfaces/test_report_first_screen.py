"""The HTML report's first screen in a real headless Chromium: what a reader sees before
scrolling decides. On a real 8-cell sweep (tests/fixtures/cpu_default_sweep) and a 2-rank profile
(tests/fixtures/cpu_sweep_profile/profile), at 1440x900: the decision sentence and every figure card
(at most MAX_CARDS) lie inside the first 900 px, and they say what the report model says (the
headline's verdict is the model's decision, each card is the model's card, no figure beyond
the cards is drawn as one). At 390 px wide (a phone): the decision sentence is on the screen
and nothing scrolls sideways.

The page measures itself: a small probe script, added to a copy of the page with its hash
allowed by the page's Content-Security-Policy, posts the boxes and texts of the headline and
the cards to the test's page, which holds each report in a frame of exactly a screen's size and
keeps what they post in its DOM, read from Chromium's serialised DOM: one browser launch.

Run as a script to save the screenshots of docs/reporting.md ('What the first screen shows'):
    python tests/interfaces/test_report_first_screen.py docs/images
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.interfaces.test_report_browser import (
    CHROMIUM,
    Tree,
    chromium_argv,
    run_chromium,
    wait_gone,
)
from torchscale.contracts.wording.spell import format_value
from torchscale.interfaces.api import build_report
from torchscale.interfaces.formatting import strip_code
from torchscale.interfaces.report.model import MAX_CARDS, KeyFigure, KeyFigures, Report

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="needs a headless Chromium on PATH (Debian package `chromium`; CI installs it)",
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SWEEP = FIXTURES / "cpu_default_sweep"  # a real 8-cell sweep
PROFILE = FIXTURES / "cpu_sweep_profile" / "profile"  # one profiled 2-rank run
DESKTOP = (1440, 900)
PHONE = (390, 844)
# the headline's opening per decision (parts/usable.py), to catch one that says another
OPENINGS = {
    "no": "These numbers cannot be used",
    "nothing to judge": "No figures to use",
    "with care": "These numbers can be used with care",
    "yes": "These numbers can be used",
}

# runs once the page has laid itself out (after the table cues): the boxes a reader sees, in
# page coordinates, what they say (severity marks and screen-reader words left out) and how
# wide the page is against its viewport; posted to the frame's parent, the test's own page
PROBE = """(function () {
  "use strict";
  function box(el) {
    var r = el.getBoundingClientRect();
    return {top: r.top + window.scrollY, bottom: r.bottom + window.scrollY,
            left: r.left, right: r.right};
  }
  function shown(el) {
    if (!el) { return null; }
    var copy = el.cloneNode(true);
    var hidden = copy.querySelectorAll(".sev-mark, .visually-hidden");
    for (var i = 0; i < hidden.length; i++) { hidden[i].remove(); }
    return copy.textContent;
  }
  function all(selector, each) {
    return Array.prototype.map.call(document.querySelectorAll(selector), each);
  }
  function measure() {
    var headline = document.querySelector("[data-headline]");
    var decision = document.querySelector(".decision");
    var out = {
      key: window.location.hash.slice(1),
      width: window.innerWidth,
      height: window.innerHeight,
      scroll_width: document.documentElement.scrollWidth,
      js_errors: document.body.getAttribute("data-js-errors"),
      usable: decision ? decision.getAttribute("data-usable") : null,
      headline: headline ? box(headline) : null,
      headline_text: shown(headline),
      headline_class: headline ? headline.className : null,
      lines: all(".decision-lines > li", shown),
      cards: all(".card", function (card) {
        var out = box(card);
        out.label = shown(card.querySelector(".card-label"));
        out.value = shown(card.querySelector(".card-value"));
        out.class = card.className;
        var section = card.closest("[data-section]");
        out.section = section ? section.getAttribute("data-section") : null;
        return out;
      }),
      more: all(".more-label", shown)
    };
    window.parent.postMessage(JSON.stringify(out), "*");
  }
  if (document.readyState === "complete") { measure(); }
  else { window.addEventListener("load", measure); }
})();"""

# the test's page: each report in a frame of exactly a screen's size (a headless window is
# at least 500 px wide and keeps part of its height for itself; a frame is the viewport asked
# for), collecting what each frame's probe posts
FRAMES = """<!DOCTYPE html>
<html><head><meta charset="utf-8"></head><body>
<script>
var screens = {};
window.addEventListener("message", function (event) {
  var screen = JSON.parse(event.data);
  screens[screen.key] = screen;
  document.body.setAttribute("data-screens", JSON.stringify(screens));
});
</script>
FRAMES_HERE
</body></html>"""


def _csp_hash(script: str) -> str:
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def with_probe(page: bytes) -> bytes:
    """The page with PROBE as its last script, allowed by hash in its own CSP (the page's
    other rules unchanged, so the page is measured under the policy it ships with)."""
    text = page.decode("utf-8")
    text, count = re.subn(r"script-src ", f"script-src {_csp_hash(PROBE)} ", text, count=1)
    assert count == 1, "the page has no script-src to allow the probe in"
    text = text.replace("</body>", f"<script>{PROBE}</script>\n</body>", 1)
    return text.encode("utf-8")


def key(name: str, size: tuple[int, int]) -> str:
    return f"{name}-{size[0]}x{size[1]}"


def measure(work: Path, pages: dict[str, bytes], sizes: list[tuple[int, int]]) -> dict[str, Any]:
    """Each page in a frame of each size, in one Chromium: key(name, size) -> its probe's
    measures."""
    frames = []
    for name, page in pages.items():
        path = work / f"{name}.html"
        path.write_bytes(with_probe(page))
        for width, height in sizes:
            frames.append(
                f'<iframe src="{path.name}#{key(name, (width, height))}" width="{width}" '
                f'height="{height}" style="display:block;border:0"></iframe>'
            )
    wrapper = work / "frames.html"
    wrapper.write_text(FRAMES.replace("FRAMES_HERE", "\n".join(frames)), encoding="utf-8")
    profile = work / f"chromium-profile-{uuid.uuid4().hex}"
    result = run_chromium(chromium_argv(profile, "--dump-dom", wrapper.as_uri()))
    assert wait_gone(str(profile)) == []
    shutil.rmtree(profile, ignore_errors=True)
    assert result.returncode == 0, result.stderr[-2000:]
    tree = Tree()
    tree.feed(result.stdout)
    tree.close()
    (body,) = [n for n in tree.root.iter() if n.tag == "body"]
    screens: dict[str, Any] = json.loads(body.attrs.get("data-screens", "{}"))
    assert sorted(screens) == sorted(key(n, s) for n in pages for s in sizes), "a probe did not run"
    for name, size in ((n, s) for n in pages for s in sizes):
        # laid out in a viewport of exactly the screen's size
        assert (screens[key(name, size)]["width"], screens[key(name, size)]["height"]) == size
    return screens


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Report, bytes]]:
    """Each fixture's default HTML report (SVG charts), as `torchscale report -f html` writes
    it, with its report model."""
    work = tmp_path_factory.mktemp("first-screen-pages")
    out = {}
    for name, source in (("sweep", SWEEP), ("profile", PROFILE)):
        output = work / f"{name}.html"
        run = build_report(source, "html", output=output)
        out[name] = (run.report, output.read_bytes())
    return out


@pytest.fixture(scope="module")
def screens(
    reports: dict[str, tuple[Report, bytes]], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("first-screen")
    pages = {n: page for n, (_, page) in reports.items()}
    # a negative control: the sweep's page with its header pushed a screen down, as a header
    # that grew would push it (the measures must see the cards leave the first screen)
    pages["pushed"] = pages["sweep"].replace(
        b"</head>", b"<style>.report-header { padding-bottom: 900px; }</style></head>", 1
    )
    return measure(work, pages, [DESKTOP, PHONE])


def _cards(report: Report) -> list[KeyFigure]:
    summary = report.section("summary")
    assert summary is not None
    blocks = [b for b in summary.blocks if isinstance(b, KeyFigures) and b.role == "cards"]
    return [f for b in blocks for f in b.figures]


def _more(report: Report) -> list[KeyFigure]:
    return [
        f
        for s in report.sections
        for b in s.blocks
        if isinstance(b, KeyFigures) and b.role == "more"
        for f in b.figures
    ]


NAMES = ["sweep", "profile"]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_the_decision_and_the_cards_fit_the_first_screen(
    screens: dict[str, Any], name: str
) -> None:
    screen = screens[key(name, DESKTOP)]
    width, height = DESKTOP
    assert screen["js_errors"] == ""
    headline = screen["headline"]
    assert headline is not None
    assert headline["top"] >= 0 and headline["bottom"] <= height, headline
    summary = [card for card in screen["cards"] if card["section"] == "summary"]
    assert 1 <= len(summary) <= MAX_CARDS
    for card in summary:
        assert card["bottom"] <= height, (name, card)  # every card whole on the first screen
        assert card["top"] >= headline["bottom"]  # under the decision, never before it
        assert card["left"] >= 0 and card["right"] <= width
    assert len({card["top"] for card in summary}) == 1  # one row: none wrapped under another
    # the summary's cards are the only ones on the first screen (other sections' come later)
    assert [card for card in screen["cards"] if card["top"] < height] == summary
    assert screen["scroll_width"] <= width


@pytest.mark.slow
def test_the_measures_see_cards_pushed_off_the_first_screen(screens: dict[str, Any]) -> None:
    pushed = [c for c in screens[key("pushed", DESKTOP)]["cards"] if c["section"] == "summary"]
    assert pushed and min(card["top"] for card in pushed) > DESKTOP[1]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_the_first_screen_says_what_the_model_decided(
    screens: dict[str, Any], reports: dict[str, tuple[Report, bytes]], name: str
) -> None:
    screen = screens[key(name, DESKTOP)]
    report = reports[name][0]
    assert report.headline is not None and report.decision is not None
    assert screen["usable"] == report.decision.usable
    shown = screen["headline_text"]
    assert shown == strip_code(report.headline.text)
    assert f"sev-{report.headline.severity}" in screen["headline_class"].split()
    # the verdict, where the headline gives one, is the decision's; no line under it gives
    # another
    # (after what the run is for: 'No accelerator figure here: ...')
    said = [u for u, opening in OPENINGS.items() if f"{opening}:" in shown]
    assert said in ([], [report.decision.usable]), (said, report.decision.usable)
    lines = screen["lines"]
    said_lines = report.decision.conclusions() + report.decision.by_model()
    assert lines == [strip_code(t.text) for t in said_lines]
    others = [o for u, o in OPENINGS.items() if u != report.decision.usable]
    assert not [o for o in others for line in lines if line.startswith(o + ":")]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_each_card_is_the_models_card_and_no_other_figure_is_one(
    screens: dict[str, Any], reports: dict[str, tuple[Report, bytes]], name: str
) -> None:
    screen = screens[key(name, DESKTOP)]
    report = reports[name][0]
    figures = _cards(report)
    cards = [card for card in screen["cards"] if card["section"] == "summary"]
    assert len(cards) == len(figures) <= MAX_CARDS
    for card, figure in zip(cards, figures, strict=True):
        assert card["label"] == figure.label
        assert card["value"] == format_value(figure.value, figure.format)
        assert f"sev-{figure.severity}" in card["class"].split()
    # the figures beyond the cards are listed, each once, and none of them is a card
    assert screen["more"] == [f.label for f in _more(report)]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_on_a_phone_the_decision_is_on_screen_without_sideways_scrolling(
    screens: dict[str, Any], name: str
) -> None:
    screen = screens[key(name, PHONE)]
    width, height = PHONE
    assert screen["scroll_width"] <= width  # the page itself never scrolls sideways
    headline = screen["headline"]
    assert headline is not None
    assert headline["left"] >= 0 and headline["right"] <= width, headline
    assert headline["top"] >= 0 and headline["bottom"] <= height, headline


def screenshots(folder: Path) -> list[Path]:
    """The first screen of the 8-cell fixture's report at 1440x900 and 390x844, as PNGs in
    `folder` (quantised to 256 colours, to keep the docs light)."""
    from PIL import Image

    folder = folder.resolve()
    work = folder / f".first-screen-{uuid.uuid4().hex}"
    work.mkdir(parents=True)
    written = []
    try:
        page = work / "report.html"
        build_report(SWEEP, "html", output=page)
        for width, height in (DESKTOP, PHONE):
            out = folder / f"first-screen-{width}x{height}.png"
            argv = chromium_argv(
                work / f"profile-{width}",
                "--hide-scrollbars",
                f"--window-size={width},{height}",
                f"--screenshot={out.resolve()}",
                page.as_uri(),
            )
            result = run_chromium(argv)
            if result.returncode != 0:
                raise SystemExit(result.stderr[-2000:])
            wait_gone(str(work))
            with Image.open(out) as image:
                # octree keeps the verdicts' small red and green marks (median cut merged red
                # into amber); a third of the size of the full-colour PNG
                small = image.convert("RGB").quantize(
                    colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE
                )
            small.save(out, optimize=True)
            written.append(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return written


if __name__ == "__main__":
    if CHROMIUM is None:
        raise SystemExit("chromium is not on PATH")
    for path in screenshots(Path(sys.argv[1] if len(sys.argv) > 1 else ".")):
        print(f"{path} ({path.stat().st_size // 1024} KB)")
