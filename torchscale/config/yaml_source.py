"""Reading YAML the safe way, keeping the line and column of every key and value.

PyYAML's SafeLoader is used with two changes a config reader needs: a repeated key is an error
instead of silently keeping the last one, and `1e-4` is a float (YAML 1.2) instead of a string.
The line index lets every later problem point at the line that caused it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from torchscale.config.paths import Path_, render_path
from torchscale.errors import ConfigError, ConfigProblem


class _ConfigLoader(yaml.SafeLoader):
    """SafeLoader plus YAML 1.2 exponent floats such as 1e-4."""


_ConfigLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


@dataclass(frozen=True)
class Mark:
    line: int  # 1-based
    column: int  # 1-based


@dataclass
class YamlIndex:
    """Where each path's key and value start in the source text."""

    keys: dict[Path_, Mark] = field(default_factory=dict)
    values: dict[Path_, Mark] = field(default_factory=dict)

    def locate(self, path: Path_, *, key: bool = False) -> Mark | None:
        """Mark of `path`, or of its nearest ancestor present in the file."""
        table = self.keys if key else self.values
        if path in table:
            return table[path]
        for cut in range(len(path) - 1, -1, -1):
            parent = path[:cut]
            if parent in self.values:
                return self.values[parent]
        return None


def _mark(node: yaml.Node) -> Mark:
    return Mark(node.start_mark.line + 1, node.start_mark.column + 1)


def _walk(node: yaml.Node, path: Path_, index: YamlIndex, problems: list[ConfigProblem],
          source: str) -> None:
    index.values[path] = _mark(node)
    if isinstance(node, yaml.MappingNode):
        first_seen: dict[Any, Mark] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            mark = _mark(key_node)
            if key in first_seen:
                problems.append(
                    ConfigProblem(
                        path=render_path((*path, key)),
                        message=f"duplicate key '{key}' (first defined on line "
                        f"{first_seen[key].line}); remove one of them",
                        source=source,
                        line=mark.line,
                        column=mark.column,
                    )
                )
                continue
            first_seen[key] = mark
            index.keys[(*path, key)] = mark
            _walk(value_node, (*path, key), index, problems, source)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, (*path, i), index, problems, source)


def read_yaml(text: str, source: str) -> tuple[Any, YamlIndex]:
    """Parse `text` into plain Python data and a line index; raise ConfigError on bad YAML."""
    loader = _ConfigLoader(text)
    try:
        node = loader.get_single_node()
        index = YamlIndex()
        if node is None:
            return None, index
        problems: list[ConfigProblem] = []
        _walk(node, (), index, problems, source)
        if problems:
            raise ConfigError(problems)
        return loader.construct_document(node), index
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        raise ConfigError(
            [
                ConfigProblem(
                    path="",
                    message=f"YAML syntax error: {what}",
                    source=source,
                    line=mark.line + 1 if mark else None,
                    column=mark.column + 1 if mark else None,
                )
            ]
        ) from None
    except yaml.YAMLError as exc:  # errors without a position (e.g. bad encoding)
        raise ConfigError(
            [ConfigProblem(path="", message=f"YAML error: {exc}", source=source)]
        ) from None
    finally:
        loader.dispose()


def parse_scalar(text: str) -> Any:
    """A command-line value read as YAML, so `--set a=3` is an int and `--set a=[1,2]` a list."""
    value, _ = read_yaml(text, source="--set")
    return value
