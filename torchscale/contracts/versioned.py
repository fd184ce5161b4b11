"""Reading torchscale's own JSON files, one way. The versioned ones (cells, profile analyses,
comm runs, max-batch searches): the checks every reader makes before validating, in one place,
so each kind of file refuses a wrong kind or a bad version with the same one-line reasons, and a
file of another version stops the read (`VersionError`). What a child process leaves for its
parent (a launch's ranks, a probe): `read_model` and `read_json_object`, None when the file is
missing or not whole. `Record`, the
base of every document model in contracts/: an unknown key is an error, so a misspelt or removed
field never passes silently.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from torchscale.contracts.errors import UsageError, describe_os_error

# the one-off that brings files of an older version to today's (run from a torchscale checkout)
CONVERTER = "python tools/convert_results.py"


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FrozenRecord(Record):
    """A record used as a key or identity: hashable, never changed after it is built."""

    model_config = ConfigDict(extra="forbid", frozen=True)


M = TypeVar("M", bound=BaseModel)


def read_json(path: Path) -> tuple[Any, str | None]:
    """(decoded JSON, None) or (None, why it could not be read); never raises."""
    try:
        return json.loads(path.read_text(encoding="utf-8")), None
    except OSError as exc:
        return None, f"unreadable: {describe_os_error(exc)}"
    except ValueError as exc:
        return None, f"not valid JSON: {exc}"


def read_json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in `path`; None when it is missing, unreadable, not JSON or no object."""
    data, why = read_json(path)
    return data if why is None and isinstance(data, dict) else None


def read_model(model: type[M], path: Path) -> M | None:
    """`path` validated as `model`; None when it is missing, unreadable, not JSON or not a
    valid `model` (a child that wrote nothing, or died writing)."""
    data, why = read_json(path)
    return None if why is not None else validated(model, data, model.__name__)[0]


def validated(model: type[M], data: Any, what: str) -> tuple[M | None, str | None]:
    """(`data` as `model`, None) or (None, 'invalid <what>: <where>: <why>'), its first error."""
    try:
        return model.model_validate(data), None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return None, f"invalid {what}: {where}: {first['msg']}"


class VersionError(UsageError):
    """A stored file of another schema version than this torchscale reads: nothing is read
    from a folder half converted, so the command stops with the one line that says what to
    do (convert it, or upgrade torchscale)."""


def version_problem(data: Any, kind: str, what: str, current: int, where: Path) -> str | None:
    """Why `data` is not a `kind` file (wrong kind, a bad version), or None when it is one of
    the current version. `what` names it in the reason ('comm result'). A file of another
    version raises `VersionError`, naming `where`, its version and, where stored, the
    torchscale that wrote it."""
    if not isinstance(data, dict) or data.get("kind") != kind:
        return f"not a torchscale {what} (kind is not '{kind}')"
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        return f"bad schema_version {version!r}"
    if version == current:
        return None
    writer = data.get("torchscale_version")
    by = f" (written by torchscale {writer})" if isinstance(writer, str) else ""
    if version > current:
        todo = "upgrade torchscale to read it"
    else:
        todo = f"convert its folder with `{CONVERTER} FOLDER`"
    raise VersionError(
        f"{where}: {what} of schema {version}{by}; this torchscale reads {current}: {todo}"
    )
