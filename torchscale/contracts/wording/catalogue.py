"""The catalogue of finding codes as docs/results.md shows it, "Finding codes": made from the
phrase tables themselves, so the docs never word a code a second time and never miss one.

    python -m torchscale.contracts.wording --markdown               (the table, on stdout)
    python -m torchscale.contracts.wording --markdown --write docs/results.md

A row per code: the code, the module that words it (the document it belongs to: each module's
docstring says which document and fields), and its template, or for a phrase that needs logic
its docstring's first line (else the function's name)."""

from __future__ import annotations

import argparse
import ast
import functools
import inspect
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the package imports this module while it joins its table
    from torchscale.contracts.wording import Phrase

BEGIN = "<!-- finding codes: generated -->"
END = "<!-- end -->"
COMMAND = "python -m torchscale.contracts.wording --markdown --write docs/results.md"


def _cell(text: str) -> str:
    """Text safe in a Markdown table cell: no pipe, no tag, no emphasis."""
    for plain, escaped in (("|", "\\|"), ("<", "&lt;"), ("*", "\\*")):
        text = text.replace(plain, escaped)
    return " ".join(text.split())


def _words(code: str, phrase: Phrase, module: str) -> str:
    """A template as it is; a function by its docstring's first line, else by the figures it
    reads ('(computed from rank, held_s)')."""
    if isinstance(phrase, str):
        return phrase
    doc = inspect.getdoc(phrase)
    if doc and getattr(phrase, "__name__", "") != "<lambda>":
        return "(computed) " + doc.strip().splitlines()[0]
    read = _figures_read(code, module)
    return f"(computed from {', '.join(read)})" if read else "(computed)"


@functools.cache
def _tree(module: str) -> ast.Module:
    from torchscale.contracts import wording

    return ast.parse(inspect.getsource(getattr(wording, module)))


def _figures_read(code: str, module: str) -> list[str]:
    """The figures a phrase of `module`'s table reads (`f['x']`, `f.get('x')`), through the
    module's functions it hands its figures to."""
    tree = _tree(module)
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    entry = next(
        value
        for node in ast.walk(tree)
        if isinstance(node, ast.Dict)
        for key, value in zip(node.keys, node.values, strict=True)
        if isinstance(key, ast.Constant) and key.value == code
    )
    found: list[str] = []
    seen: set[str] = set()

    def visit(node: ast.AST, param: str) -> None:
        for sub in ast.walk(node):
            name = None
            if (
                isinstance(sub, ast.Subscript)
                and isinstance(sub.value, ast.Name)
                and sub.value.id == param
                and isinstance(sub.slice, ast.Constant)
            ):
                name = sub.slice.value
            elif (
                isinstance(sub, ast.Call)
                and isinstance(sub.func, ast.Attribute)
                and sub.func.attr == "get"
                and isinstance(sub.func.value, ast.Name)
                and sub.func.value.id == param
                and sub.args
                and isinstance(sub.args[0], ast.Constant)
            ):
                name = sub.args[0].value
            elif (
                isinstance(sub, ast.Call)
                and isinstance(sub.func, ast.Name)
                and sub.func.id in defs
                and sub.func.id not in seen
                and any(isinstance(a, ast.Name) and a.id == param for a in sub.args)
            ):
                seen.add(sub.func.id)
                called = defs[sub.func.id]
                index = next(
                    i for i, a in enumerate(sub.args) if isinstance(a, ast.Name) and a.id == param
                )
                if index < len(called.args.args):
                    visit(called, called.args.args[index].arg)
            if isinstance(name, str) and name not in found:
                found.append(name)

    if isinstance(entry, ast.Lambda) and entry.args.args:
        visit(entry.body, entry.args.args[0].arg)
    elif isinstance(entry, ast.Name) and entry.id in defs and defs[entry.id].args.args:
        visit(defs[entry.id], defs[entry.id].args.args[0].arg)
    return found


def _modules() -> dict[str, str]:
    """Each code -> the module whose table holds it (a template has no module of its own)."""
    from torchscale.contracts import wording

    found = {}
    for name, module in vars(wording).items():
        if inspect.ismodule(module) and module.__name__ == f"{wording.__name__}.{name}":
            for code in getattr(module, "PHRASES", {}):
                found[code] = name
    return found


def markdown() -> str:
    """The generated block of docs/results.md, markers included."""
    from torchscale.contracts.wording import PHRASES

    module_of = _modules()
    rows = sorted((module_of[code], i, code) for i, code in enumerate(PHRASES))
    lines = [
        BEGIN,
        f"<!-- written by `{COMMAND}`: word a code in its module, never here -->",
        "",
        "| code | module (document) | words |",
        "|---|---|---|",
    ]
    lines += [
        f"| `{code}` | `{module}.py` | {_cell(_words(code, PHRASES[code], module))} |"
        for module, _, code in rows
    ]
    return "\n".join([*lines, END])


def replaced(text: str) -> str:
    """`text` (docs/results.md) with its generated block made anew."""
    head, begin, rest = text.partition(BEGIN)
    if not begin:
        raise SystemExit(f"no {BEGIN} marker in the file")
    _, end, tail = rest.partition(END)
    if not end:
        raise SystemExit(f"no {END} marker after {BEGIN}")
    return head + markdown() + tail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchscale.contracts.wording")
    parser.add_argument("--markdown", action="store_true", help="the finding codes' table")
    parser.add_argument("--write", type=Path, help="replace the table in this Markdown file")
    args = parser.parse_args(argv)
    if not args.markdown:
        parser.error("say what to make: --markdown")
    if args.write is None:
        sys.stdout.write(markdown() + "\n")
        return 0
    args.write.write_text(replaced(args.write.read_text(encoding="utf-8")), encoding="utf-8")
    return 0
