"""A figure, a unit or a percentage is spelled in one place: the wording layer
(`contracts/wording/`), and inside it by one module, `spell.py` (a figure with its interval:
`figures.py`), each kind of figure one way. Anywhere else an f-string with a number format
(`{x:.1f}`, `{n:,}`, `{x * 100...}`), a value followed by a unit (`{t} ms`), `format(x, spec)`
or `"%.1f" % x` is a second spelling that drifts from the first ("79%" beside
"79 %", "us" beside "µs"). Exception messages, log lines and CLI help keep theirs (they are not
a result, a report or the terminal's answer).

What does not hold yet is listed in NOT_YET with its count; the list must match the code
exactly, so it can only shrink: a file that spells fewer figures fails until its entry is
lowered or deleted.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "torchscale"
WORDING = PACKAGE / "contracts" / "wording"

_UNIT = re.compile(
    r"^\s?(?:%|ms\b|µs\b|us\b|ns\b|s\b|[KMGT]i?B\b|[KMGT]B/s|Gbit/s|TFLOP/s|TFLOPS|W\b"
    r"|MHz\b|°C|C\b|[a-z]+/s\b|x\b)"
)
_NUMBER_SPEC = re.compile(r"[efg%]|,|\.\d")
_LOG_CALLS = {"debug", "info", "warning", "error", "exception", "critical", "warn", "log"}
_CLI_CALLS = {"Option", "Argument", "Exit", "BadParameter"}


def _exempt_nodes(tree: ast.AST) -> set[int]:
    """Nodes inside an exception, a log line or a CLI option's help."""
    exempt: set[int] = set()
    for node in ast.walk(tree):
        inside: ast.AST | None = None
        if isinstance(node, ast.Raise):
            inside = node.exc
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _LOG_CALLS or name in _CLI_CALLS or name.endswith("Error"):
                inside = node
        if inside is not None:
            exempt.update(id(child) for child in ast.walk(inside))
    return exempt


def _spec_text(spec: ast.expr | None) -> str:
    """The literal part of a format spec ('.1f' of `{x:.1f}`; '' of `{x:>{width}}`)."""
    if not isinstance(spec, ast.JoinedStr):
        return ""
    return "".join(str(v.value) for v in spec.values if isinstance(v, ast.Constant))


def _spells(node: ast.AST) -> bool:
    if isinstance(node, ast.JoinedStr):
        parts = node.values
        for index, part in enumerate(parts):
            if not isinstance(part, ast.FormattedValue):
                continue
            spec = _spec_text(part.format_spec)
            after = parts[index + 1] if index + 1 < len(parts) else None
            text_after = after.value if isinstance(after, ast.Constant) else ""
            if (
                _NUMBER_SPEC.search(spec)
                or "* 100" in ast.unparse(part.value)
                or _UNIT.match(str(text_after))
            ):
                return True
        return False
    if isinstance(node, ast.Call):
        return getattr(node.func, "id", "") == "format" and len(node.args) == 2
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = node.left
        return (
            isinstance(left, ast.Constant)
            and isinstance(left.value, str)
            and bool(re.search(r"%[\d.]*[dfeg]", left.value))
        )
    return False


def spelled_figures(path: Path) -> list[int]:
    """The lines of a module that spell a figure outside an exception, a log line or help."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exempt = _exempt_nodes(tree)
    return sorted(
        {node.lineno for node in ast.walk(tree) if id(node) not in exempt and _spells(node)}
    )


def _spellings() -> dict[str, int]:
    found: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if WORDING in path.parents:
            continue
        lines = spelled_figures(path)
        if lines:
            found[path.relative_to(PACKAGE).as_posix()] = len(lines)
    return found


NOT_YET: dict[str, int] = {}

# inside the wording layer, the modules that define spellers; a phrase (a function of a
# finding's figures: `f`, `figures`, or annotated so) may spell a figure as a template would,
# but a function of a number is a speller and belongs in spell.py
SPELLERS = {"spell.py", "figures.py"}
_FIGURES = {"F", "Figures", "Mapping[str, Any]"}


def _of_figures(function: ast.FunctionDef | ast.Lambda) -> bool:
    args = function.args.args
    if not args:
        return False
    first = args[0]
    named = first.arg in ("f", "figures", "_")
    return named or (first.annotation is not None and ast.unparse(first.annotation) in _FIGURES)


def spellers(path: Path) -> list[str]:
    """The functions of a module that spell a figure and are not phrases of a finding."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exempt = _exempt_nodes(tree)
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.Lambda) or _of_figures(function):
            continue
        if any(id(node) not in exempt and _spells(node) for node in ast.walk(function)):
            found.append(getattr(function, "name", f"<lambda at line {function.lineno}>"))
    return found


@pytest.mark.slow  # over 2 s on 2 cores
def test_no_module_outside_the_wording_layer_spells_a_figure() -> None:
    found = _spellings()
    new = {path: n for path, n in found.items() if n > NOT_YET.get(path, 0)}
    assert not new, f"figures spelled outside contracts/wording/ (use it): {new}"
    stale = {path: n for path, n in NOT_YET.items() if found.get(path, 0) != n}
    assert not stale, f"NOT_YET no longer matches the code (lower or delete): {stale}"


def test_no_wording_module_but_spell_defines_a_speller() -> None:
    found = {
        path.name: spellers(path)
        for path in sorted(WORDING.glob("*.py"))
        if path.name not in SPELLERS and spellers(path)
    }
    assert found == {}, f"figures spelled outside spell.py (make it a SPECS name there): {found}"


def test_the_speller_detector_tells_a_speller_from_a_phrase(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "def _gib(value):\n    return f'{value / 2**30:.1f} GiB'\n"
        "def _phrase(f):\n    return f\"{f['x']:.1f} GiB\"\n"
        "def _said(figures: F) -> str:\n    return f\"{figures['n']} ms\"\n"
        "def _name(noun):\n    return f'{noun} of'\n"
        "PHRASES = {'a.b': lambda f: f\"{f['x']} ms\"}\n"
    )
    assert spellers(module) == ["_gib"]


def test_the_detector_sees_each_way_of_spelling_a_figure(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "a = f'{x:.1f}'\n"
        "b = f'{share * 100:.0f} %'\n"
        "c = f'{t} ms'\n"
        "d = format(x, ',')\n"
        "e = '%.2f' % x\n"
        "f = f'{n} GPUs'\n"
        "g = f'{name:>12}'\n"
        "raise ValueError(f'{x:.1f} too big')\n"
        "log.info(f'{x:.1f}')\n"
        "h = f'{n:,}'\n"
    )
    assert spelled_figures(module) == [1, 2, 3, 4, 5, 10]
