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

from torchscale.contracts.errors import ConfigError, ConfigProblem
from torchscale.orchestration.config.paths import Path_, render_path


class _ConfigLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 numbers: `1e-4` is a float, and `1:30:00` stays a string
    (YAML 1.1 reads it as the base-60 integer 5400, a trap for Slurm time limits)."""


_INT = re.compile(
    r"""^(?:[-+]?0b[0-1_]+
    |[-+]?0[0-7_]+
    |[-+]?(?:0|[1-9][0-9_]*)
    |[-+]?0x[0-9a-fA-F_]+)$""",
    re.X,
)
_FLOAT = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?
    |[-+]?\.[0-9][0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)
_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
_ConfigLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in _NUMBER_TAGS]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
# int first: a plain "64" must stay an int, the float pattern would also match it
_ConfigLoader.add_implicit_resolver(_NUMBER_TAGS[0], _INT, list("-+0123456789"))
_ConfigLoader.add_implicit_resolver(_NUMBER_TAGS[1], _FLOAT, list("-+0123456789."))


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
        parents = (path[:cut] for cut in range(len(path) - 1, -1, -1))
        return next((self.values[p] for p in parents if p in self.values), None)


def _mark(node: yaml.Node) -> Mark:
    return Mark(node.start_mark.line + 1, node.start_mark.column + 1)


def _walk(
    node: yaml.Node, path: Path_, index: YamlIndex, problems: list[ConfigProblem], source: str
) -> None:
    index.values[path] = _mark(node)
    if isinstance(node, yaml.MappingNode):
        first_seen: dict[Any, Mark] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            mark = _mark(key_node)
            if key in first_seen:
                where = render_path((*path, key))
                first = f"(first defined on line {first_seen[key].line})"
                message = f"duplicate key '{key}' {first}; remove one of them"
                problems.append(ConfigProblem(where, message, source, mark.line, mark.column))
                continue
            first_seen[key] = mark
            child: Path_ = (*path, key)
            index.keys[child] = mark
            _walk(value_node, child, index, problems, source)
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
        line, column = (mark.line + 1, mark.column + 1) if mark else (None, None)
        problem = ConfigProblem("", f"YAML syntax error: {what}", source, line, column)
        raise ConfigError([problem]) from None
    except yaml.YAMLError as exc:  # errors without a position (e.g. bad encoding)
        raise ConfigError([ConfigProblem("", f"YAML error: {exc}", source)]) from None
    finally:
        loader.dispose()


class _ConfigDumper(yaml.SafeDumper):
    """SafeDumper that quotes exactly the strings _ConfigLoader would read as numbers
    (e.g. '1e5'), so what `config show` prints reads back as the same config."""


_ConfigDumper.yaml_implicit_resolvers = {
    first: list(resolvers) for first, resolvers in _ConfigLoader.yaml_implicit_resolvers.items()
}


def dump_yaml(data: Any) -> str:
    """YAML text that read_yaml reads back as `data` (keys in the given order)."""
    return yaml.dump(data, Dumper=_ConfigDumper, sort_keys=False, default_flow_style=False)


def parse_scalar(text: str) -> Any:
    """A command-line value read as YAML, so `--set a=3` is an int and `--set a=[1,2]` a list."""
    value, _ = read_yaml(text, source="--set")
    return value
