"""The default HTML of a 500-cell sweep (benchmarks/report_scale.py's results) is at most 1 MB
and 40 screens of 768 px in Chromium at 1366 px (it was 2.6 MB and 153 screens: every row of
13 tables of up to 1,001 rows, 200 findings, and the hidden words of the rows a table's box
scrolled out of view placed by the page, 50,000 px below what was shown). What the default
leaves out is in `--full`: every row and finding."""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path

import pytest

from tests.scale_sample import scale_report
from torchscale.interfaces.report.model import Findings, Report, Table
from torchscale.interfaces.report.render import html as html_format

MAX_BYTES = 1_000_000
SCREEN_PX = (1366, 768)
MAX_SCREENS = 40


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    return scale_report(tmp_path_factory.mktemp("html-size"))


@pytest.mark.slow  # over 2 s on 2 cores
def test_the_default_html_is_at_most_a_megabyte(report: Report) -> None:
    assert len(html_format.render(report)) <= MAX_BYTES


@pytest.mark.slow  # over 2 s on 2 cores
def test_full_keeps_every_row_and_finding_the_default_says_it_left_out(report: Report) -> None:
    default = html_format.render(report).decode("utf-8")
    full = html_format.render(report, full=True).decode("utf-8")
    blocks = [b for s in report.sections for b in s.blocks if isinstance(b, Table | Findings)]
    longest = max((b for b in blocks if isinstance(b, Table)), key=lambda t: len(t.rows))

    def rows(page: str, table_id: str) -> str:
        return page.split(f'id="{table_id}"')[1].split("</table>")[0]

    assert rows(full, longest.id).count("<tr") == len(longest.rows) + 1  # and its heading
    assert rows(default, longest.id).count("<tr") < len(longest.rows)
    more = len(longest.rows) - 40
    assert f"first 40 of {len(longest.rows)} rows; {more} more in <code>torchscale" in default
    findings = [b for b in blocks if isinstance(b, Findings)]
    assert max(len(f.findings) for f in findings) > 10
    assert full.count('<li class="finding ') == sum(len(f.findings) for f in findings)
    assert default.count('<li class="finding ') <= 10 * len(findings)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs a headless Chromium on PATH")
def test_the_default_html_is_at_most_40_screens_tall(report: Report, tmp_path: Path) -> None:
    from tests.interfaces.test_report_browser import chromium_argv, run_chromium, wait_gone

    page = html_format.render(report).decode("utf-8")
    # the page's own CSP admits its own scripts only: this copy drops it to add one that
    # writes the laid-out height where --dump-dom shows it (layout does not depend on the CSP)
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    probe = (
        '<script>window.addEventListener("load", function () { document.body.setAttribute('
        '"data-height", document.documentElement.scrollHeight); });</script></body>'
    )
    path = tmp_path / "report.html"
    path.write_text(page.replace("</body>", probe), encoding="utf-8")
    profile = tmp_path / f"chromium-profile-{uuid.uuid4().hex}"
    size = f"--window-size={SCREEN_PX[0]},{SCREEN_PX[1]}"
    result = run_chromium(chromium_argv(profile, size, "--dump-dom", path.as_uri()))
    assert wait_gone(str(profile)) == []
    assert result.returncode == 0, result.stderr[-2000:]
    found = re.search(r'data-height="(\d+)"', result.stdout)
    assert found is not None, "the probe did not run"
    assert int(found.group(1)) <= MAX_SCREENS * SCREEN_PX[1]
