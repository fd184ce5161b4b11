"""Reading torchscale's own JSON files, one way. The versioned ones (cells, profile analyses,
comm runs, max-batch searches): the checks every reader makes before validating, in one place,
so each kind of file refuses a wrong kind, a bad version or a newer version with the same
one-line reasons. What a child process leaves for its parent (a launch's ranks, a probe):
`read_model` and `read_json_object`, None when the file is missing or not whole. `Record`, the
base of every document model in contracts/: an unknown key is an error, so a misspelt or removed
field never passes silently.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from torchscale.contracts.errors import describe_os_error


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


def version_problem(data: Any, kind: str, what: str, current: int) -> str | None:
    """Why `data` is not a readable `kind` file of version 1..current, or None when it is.
    `what` names it in the reason ('comm result'); the reason for a newer version says to
    upgrade torchscale."""
    if not isinstance(data, dict) or data.get("kind") != kind:
        return f"not a torchscale {what} (kind is not '{kind}')"
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        return f"bad schema_version {version!r}"
    if version > current:
        return (
            f"{what} schema version {version} is newer than this torchscale reads "
            f"({current}): upgrade torchscale to read it"
        )
    return None
