"""docs/architecture.md against the tree: every package path it names exists, and its layer
picture is the one `layer_picture()` draws from the tree today. A module that moves fails here
until the page says where it went (`python -m tests.project.test_architecture_doc` rewrites
the picture)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "torchscale"
DOC = REPO_ROOT / "docs" / "architecture.md"
LAYERS = (  # (number, package, what runs there): the order of docs/architecture.md
    (4, "interfaces", "entry points and presentation: flags -> one api call -> print"),
    (3, "orchestration", "the host process: plans cells, launches torchrun, collects"),
    (2, "rank", "inside every torchrun rank"),
    (2, "offline", "readers, pure analysis, the loader: anywhere"),
    (1, "contracts", "what every role shares, torch-free"),
)
BEGIN, END = "<!-- layer picture: generated -->", "<!-- end of layer picture -->"
WIDTH = 96


def _entries(package: Path) -> list[str]:
    """A layer's units: its sub-packages (`name/`) and modules, sorted, private ones left out."""
    names = [
        f"{p.name}/" if p.is_dir() else p.name
        for p in package.iterdir()
        if (p.is_dir() and (p / "__init__.py").exists())
        or (p.suffix == ".py" and p.name != "__init__.py")
    ]
    return sorted(names, key=lambda n: (not n.endswith("/"), n))


def layer_picture() -> str:
    """The layers as the tree has them: one block per layer package, its units wrapped."""
    out = ["```"]
    for number, name, what in LAYERS:
        out.append(f"{number}  {name}/  ({what})")
        line = "     "
        for entry in _entries(PACKAGE / name):
            if len(line) + len(entry) + 1 > WIDTH:
                out.append(line.rstrip())
                line = "     "
            line += entry + " "
        out.append(line.rstrip())
    top = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    out.append(f"   top level (entry points that only re-export): {' '.join(top)}")
    out.append("```")
    return "\n".join(out)


def _named_paths(text: str) -> set[str]:
    """Backticked paths of the package: `worker/capture.py`, `schedulers/slurm/`,
    `torchscale/rank/worker/`."""
    found = set()
    for token in re.findall(r"`([A-Za-z0-9_./]+)`", text):
        elsewhere = token.startswith(("tests/", "docs/", "benchmarks/", ".ci/", "../", "/"))
        if "/" in token and token.endswith((".py", "/")) and not elsewhere:
            found.add(token.removeprefix("torchscale/"))
    return found


def _exists(path: str) -> bool:
    """Relative to the package, or to any layer package (the page's convention), or to any
    package below them (a short form such as `local/launcher.py`)."""
    if (PACKAGE / path).exists():
        return True
    return any((p / path).exists() for p in PACKAGE.rglob("*") if p.is_dir())


def test_every_path_the_page_names_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = sorted(p for p in _named_paths(text) if not _exists(p))
    assert not missing, f"docs/architecture.md names paths that are not in torchscale/: {missing}"


def test_the_layer_picture_is_the_tree() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert BEGIN in text and END in text, f"docs/architecture.md lacks {BEGIN} ... {END}"
    shown = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert shown == layer_picture(), (
        "the layer picture is stale: python -m tests.project.test_architecture_doc rewrites it"
    )


def main() -> int:
    text = DOC.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        print(f"docs/architecture.md lacks the markers {BEGIN} ... {END}", file=sys.stderr)
        return 1
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    DOC.write_text(f"{head}{BEGIN}\n{layer_picture()}\n{END}{tail}", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
