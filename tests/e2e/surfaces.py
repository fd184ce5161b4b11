"""What every surface of a run says, read as a reader sees it: the terminal unwrapped, HTML as
text, Markdown as it renders. The sweep's and the profile's surface tests (tests/e2e/test_sweep.py,
tests/e2e/test_profile_run.py) compare these with the stored diagnosis, worded by
`report/diagnosis_text.py`."""

from __future__ import annotations

import html as html_lib
import re
from pathlib import Path

from typer.testing import CliRunner

from torchscale.contracts.schema.diagnosis import Diagnosis
from torchscale.interfaces.cli.app import app
from torchscale.interfaces.report.diagnosis_text import (
    split_text,
    straggler_text,
    sync_stall_text,
    whatif_text,
)


def flat(text: str) -> str:
    """Lines unwrapped and whitespace collapsed: what a reader sees, however it was wrapped."""
    return " ".join(text.split())


def printed_once(terminal: str, line: str) -> bool:
    """`line` once in the flat terminal, whole or as the live table prints a note longer than
    its two rows: cut at a word and ended with ' …' (the whole line is in -v and the JSON)."""
    words = line.split()
    shown = [" ".join(words[:k]) + " …" for k in range(3, len(words))]
    return terminal.count(line) + sum(terminal.count(cut) for cut in shown) == 1


def html_text(page: str) -> str:
    without = re.sub(r"<script.*?</script>|<style.*?</style>", " ", page, flags=re.S)
    return flat(html_lib.unescape(re.sub(r"<[^>]+>", " ", without)))


def reports(directory: Path, out: Path) -> dict[str, str]:
    """The Markdown, HTML and term reports of `directory` (the term report whole and as it
    prints by default, its summary), as flat text."""
    texts = {}
    for name, fmt, extra in (
        ("md", "md", []),
        ("html", "html", []),
        ("term", "term", ["--full"]),  # every section, as the others
        ("term summary", "term", []),  # the default: what most readers see
    ):
        target = out / f"report.{name.replace(' ', '_')}"
        result = CliRunner().invoke(
            app,
            ["report", "--source", str(directory), "-f", fmt, "-o", str(target), *extra],
            # wide enough that no table cell wraps: a wrapped cell interleaves its columns
            env={"COLUMNS": "1000"} if fmt == "term" else None,
        )
        assert result.exit_code == 0, result.output
        page = target.read_text(encoding="utf-8")
        if fmt == "md":  # Markdown escapes its own punctuation and writes '<' as '&lt;':
            # read it as it renders
            page = html_lib.unescape(re.sub(r"\\([\\`*_{}\[\]()#+\-.!|<>])", r"\1", page))
        texts[name] = html_text(page) if fmt == "html" else flat(page)
    return texts


def verdict_texts(diagnosis: Diagnosis) -> list[str]:
    """The lines every surface that names the straggler shows: its verdict and, when it names
    one, the what-if."""
    whatif = whatif_text(diagnosis)
    verdict = straggler_text(diagnosis.straggler, diagnosis.ranks)
    return [verdict] if whatif is None else [verdict, whatif]


def headline_texts(diagnosis: Diagnosis) -> list[str]:
    return [sync_stall_text(diagnosis), split_text(diagnosis), *verdict_texts(diagnosis)]
