"""No render path edits words: a report section or a console printer shows a stored
sentence as stored, and a finding by the wording layer's words (`contracts/wording/`); it
never rewrites text with `str.replace` or a regex substitution, which drifts the moment the
words it matches change. Escaping and markup (a renderer's quoting of `<`, a line break
glued for wrapping) are not words: those helpers are listed in ESCAPES.

A pragmatic AST check over interfaces/report and interfaces/console: every `.replace(a, b)`
with two or more arguments and every `re.sub`/`<pattern>.sub` is named by the function it is
in; the ones that remain are listed in NOT_YET with why, and the list must match the code
exactly, so it can only shrink.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "torchscale"
RENDER_PATHS = ("interfaces/report", "interfaces/console")

# escaping, quoting and line-glueing: markup of the format, never a change of the words
ESCAPES: frozenset[str] = frozenset(
    {
        "interfaces/report/render/markdown.py::escape",
        "interfaces/report/render/markdown.py::inline",
        "interfaces/report/render/plotly_charts.py::plotly_text",
        "interfaces/report/render/html.py::script_json",
        "interfaces/report/render/html.py::plotly_js",
        "interfaces/report/parts/context.py::slug",
        "interfaces/console/lines.py::glued",
        "interfaces/console/lines.py::unglued",
        "interfaces/console/lines.py::_wrap",
        "interfaces/console/report_full.py::_table",  # a header broken after '/' and '-'
    }
)

# edits still to go, each with what it edits: the words belong in contracts/wording/
NOT_YET: dict[str, str] = {}


def _edits(tree: ast.AST) -> list[tuple[str, int]]:
    """(enclosing function, line) of every text edit in `tree`."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, function: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr, subject = node.func.attr, node.func.value
            replaced = attr == "replace" and len(node.args) >= 2 and not node.keywords
            substituted = attr in ("sub", "subn") and len(node.args) >= 2
            literal = isinstance(subject, ast.Constant)
            if (replaced and not literal) or substituted:
                found.append((function, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, "<module>")
    return found


def render_edits() -> dict[str, list[int]]:
    """`path::function` -> lines, for every text edit in the render paths."""
    edits: dict[str, list[int]] = {}
    for root in RENDER_PATHS:
        for path in sorted((PACKAGE / root).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            name = path.relative_to(PACKAGE).as_posix()
            for function, line in _edits(tree):
                edits.setdefault(f"{name}::{function}", []).append(line)
    return edits


def test_no_render_path_edits_words() -> None:
    edits = render_edits()
    new = {where: lines for where, lines in edits.items() if where not in ESCAPES | set(NOT_YET)}
    assert not new, f"text edited on a render path (make the words in contracts/wording/): {new}"


def test_the_lists_name_only_edits_that_exist() -> None:
    edits = render_edits()
    gone = (ESCAPES | set(NOT_YET)) - set(edits)
    assert not gone, f"listed but no longer there (delete): {sorted(gone)}"


def test_the_check_finds_an_edit_of_a_stored_sentence() -> None:
    source = (
        "def warning_line(result):\n"
        "    return result.warnings[0].text.replace('GPU', 'rank')\n"
        "def cv(reason):\n"
        "    return _CV.sub(lambda m: m[1], reason)\n"
        "def fine():\n"
        "    return 'a {x}'.replace('{x}', 'b')\n"
    )
    assert [f for f, _ in _edits(ast.parse(source))] == ["warning_line", "cv"]
