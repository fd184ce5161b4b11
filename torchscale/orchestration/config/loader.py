"""Config file + overrides (`--set a.b=v` or `--a.b=v`) -> a validated BenchConfig, or every
problem at once.

Problems are reported one line each, with file, line, column and the dotted path, so a user can
fix them all in one pass. Overrides are type-checked exactly like the file (they are applied to
the raw data before validation), and a problem they cause names the override.
"""

from __future__ import annotations

from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from torchscale.contracts.errors import ConfigError, ConfigProblem
from torchscale.contracts.suggest import did_you_mean
from torchscale.contracts.wording.spell import as_set
from torchscale.orchestration.config.paths import Path_, render_path
from torchscale.orchestration.config.schema import LIST_TAG, UNION_TAGS, BenchConfig
from torchscale.orchestration.config.seed_keys import seed_key_hint
from torchscale.orchestration.config.yaml_source import YamlIndex, parse_scalar, read_yaml

REQUIRED_HINT = "a config needs at least experiment_name, models (or jobs) and gpu_counts"


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> BenchConfig:
    """Read, override and validate the config at `path`."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError([ConfigProblem("", "file not found", source)]) from None
    except IsADirectoryError:
        raise ConfigError(
            [ConfigProblem("", "is a directory, not a config file", source)]
        ) from None
    except UnicodeDecodeError as exc:
        raise ConfigError([ConfigProblem("", f"not UTF-8 text ({exc.reason})", source)]) from None
    except OSError as exc:
        raise ConfigError([ConfigProblem("", f"cannot read: {exc.strerror}", source)]) from None
    return parse_config(text, source, overrides)


def parse_config(
    text: str, source: str = "<config>", overrides: list[str] | tuple[str, ...] = ()
) -> BenchConfig:
    """Validate YAML `text` (named `source` in messages) with `overrides` applied."""
    data, index = read_yaml(text, source)
    if data is None:
        raise ConfigError([ConfigProblem("", f"the file is empty; {REQUIRED_HINT}", source)])
    if not isinstance(data, dict):
        message = f"the top level must be a mapping of keys to values; {REQUIRED_HINT}"
        raise ConfigError([ConfigProblem("", message, source, line=1)])
    data, applied = apply_overrides(data, overrides)
    return validate_data(data, source, index, applied)


def validate_data(
    data: dict[str, Any],
    source: str,
    index: YamlIndex | None = None,
    applied: dict[Path_, str] | None = None,
) -> BenchConfig:
    """Validate config `data` (from a file, or built by a command from its options) into a
    BenchConfig, or raise ConfigError with every problem, one line each."""
    try:
        return BenchConfig.model_validate(data)
    except ValidationError as exc:
        where = index or YamlIndex()
        problems = [_problem(err, data, where, applied or {}, source) for err in exc.errors()]
        problems.sort(key=lambda p: (p.source != source, p.line or 0, p.column or 0))
        raise ConfigError(problems) from None


def apply_overrides(
    data: dict[str, Any], overrides: list[str] | tuple[str, ...]
) -> tuple[dict[str, Any], dict[Path_, str]]:
    """Apply `a.b.c=value` overrides to a copy of `data`; return it and the paths they set.

    An override written `--a.b.c=value` (the published `--training.precision=bf16` form, which
    the CLI passes on as written) is the same override, named as the user wrote it."""
    import copy

    result = copy.deepcopy(data)
    applied: dict[Path_, str] = {}
    problems: list[ConfigProblem] = []
    for text in overrides:
        published = text.startswith("--")
        source = text if published else f"--set {text}"
        key, sep, raw_value = text.removeprefix("--").partition("=")
        key = key.strip()
        parts = key.split(".")
        if published and not sep and key and all(parts):
            problems.append(ConfigProblem("", f"needs a value: {text}=VALUE", source))
            continue
        if not sep or not key or any(not p for p in parts):
            example = "--training.precision=bf16" if published else "--set training.precision=bf16"
            message = (
                f"expected {'--' if published else ''}KEY=VALUE with a dotted key, e.g. {example}"
            )
            problems.append(ConfigProblem("", message, source))
            continue
        try:
            value = parse_scalar(raw_value)
        except ConfigError as exc:
            problems.append(ConfigProblem(key, exc.problems[0].message, source))
            continue
        node = result
        for depth, part in enumerate(parts[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                problems.append(
                    ConfigProblem(key, f"'{'.'.join(parts[: depth + 1])}' is not a section", source)
                )
                break
            node = child
        else:
            node[parts[-1]] = value
            applied[tuple(parts)] = source
    if problems:
        raise ConfigError(problems)
    return result, applied


# ---------------------------------------------------------------------------------------------
# pydantic errors -> one readable line each

_TYPE_WORDS = {
    **dict.fromkeys(("int_type", "int_parsing"), "an integer"),
    **dict.fromkeys(("float_type", "float_parsing"), "a number"),
    **dict.fromkeys(("bool_type", "bool_parsing"), "true or false"),
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a mapping",
    **dict.fromkeys(("model_type", "model_attributes_type"), "a mapping (a section of keys)"),
}
_COMPARISONS = {
    "greater_than": (">", "gt"),
    "greater_than_equal": (">=", "ge"),
    "less_than": ("<", "lt"),
    "less_than_equal": ("<=", "le"),
}


def _show(value: Any) -> str:
    """A value as a YAML user would write it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return str(value)


def _message(err: Any, loc: Path_) -> str:
    kind: str = err["type"]
    ctx: dict[str, Any] = err.get("ctx") or {}
    value = err.get("input")
    if kind == "extra_forbidden":
        key = str(loc[-1])
        hint = seed_key_hint(".".join(str(part) for part in loc), value)
        if hint is not None:
            return f"unknown key '{key}': {hint}"
        return f"unknown key '{key}'{did_you_mean(key, _fields_at(loc[:-1]))}"
    if kind == "missing":
        return "required key is missing"
    if kind == "literal_error":
        return f"{_show(value)} is not allowed; expected one of {ctx.get('expected')}"
    if kind in _COMPARISONS:
        symbol, name = _COMPARISONS[kind]
        return f"must be {symbol} {as_set(float(ctx[name]))} (got {_show(value)})"
    if kind == "string_too_long":
        return f"must be at most {ctx.get('max_length')} characters (got {len(str(value))})"
    if kind == "too_short":
        return "must not be empty"
    if kind == "string_pattern_mismatch":
        return f"{_show(value)} does not match the required pattern {ctx.get('pattern')}"
    if kind == "value_error":
        return str(err["msg"]).removeprefix("Value error, ")
    if kind in _TYPE_WORDS:
        return f"expected {_TYPE_WORDS[kind]}, got {_show(value)}"
    return f"{err['msg']} (got {_show(value)})"


def _unwrap(annotation: Any) -> Any:
    """list[X] -> X, X | None -> X: the model class a path element leads into."""
    while True:
        origin = get_origin(annotation)
        if origin is list:
            annotation = get_args(annotation)[0]
        elif origin in (Union, UnionType):
            args = [a for a in get_args(annotation) if a is not NoneType]
            if len(args) != 1:
                return annotation
            annotation = args[0]
        else:
            return annotation


def _fields_at(loc: Path_) -> list[str]:
    """The keys allowed at `loc` (for did-you-mean); empty if `loc` is not a section."""
    cls: Any = BenchConfig
    for part in loc:
        if isinstance(part, int):
            continue
        if (
            not (isinstance(cls, type) and issubclass(cls, BaseModel))
            or part not in cls.model_fields
        ):
            return []
        cls = _unwrap(cls.model_fields[part].annotation)
    return list(cls.model_fields) if isinstance(cls, type) and issubclass(cls, BaseModel) else []


def _user_path(loc: Path_, data: Any) -> Path_:
    """Cut `loc` back to what the user wrote: `precision: fp8` is reported at
    training.precision, not training.precision[0], and `models: [x]` at models[0]."""
    node = data
    for depth, part in enumerate(loc):
        if isinstance(node, dict):
            if part not in node:
                return loc
            node = node[part]
        elif isinstance(node, list):
            if not isinstance(part, int) or part >= len(node):
                return loc
            node = node[part]
        else:
            return loc[:depth]
    return loc


def _problem(
    err: Any, data: Any, index: YamlIndex, applied: dict[Path_, str], source: str
) -> ConfigProblem:
    raw: Path_ = tuple(err["loc"])
    loc: Path_ = tuple(part for part in raw if part not in UNION_TAGS)
    message = _message(err, loc)
    if raw[-1:] == (LIST_TAG,) and err["type"] == "list_type":  # neither a list nor a word
        message = f"expected a list of batch sizes or auto, got {_show(err.get('input'))}"
    path = _user_path(loc, data)
    for set_path, set_source in applied.items():
        shared = min(len(path), len(set_path))
        if shared and path[:shared] == set_path[:shared]:
            return ConfigProblem(render_path(path), message, set_source)
    mark = index.locate(path, key=err["type"] in ("extra_forbidden",))
    line, column = (mark.line, mark.column) if mark else (None, None)
    return ConfigProblem(render_path(path), message, source, line, column)
