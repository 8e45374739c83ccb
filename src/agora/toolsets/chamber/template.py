"""Room templates: their shape, and the one reader of the data files that hold them.

A template is objects, a chain of lock slots, and which object opens when. The templates
themselves are data, one TOML file per engine under ``rooms/`` (shipped as package data);
`load` decodes a file strictly (msgspec Structs that forbid unknown fields, then checks that
every name a template uses is one it defines) into the frozen dataclasses below, which
`generate` turns into rooms. Any error names the file and the key. This module must not
generate rooms, draw randomness, or hold any template text itself.
"""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass
from typing import Final

import msgspec

from agora.toolsets.chamber.lock import ANSWER_IS, LockSpec

#: Engine (as the contract's suites name it) -> the file under ``rooms/`` of its templates.
FILES: Final = {"chamber": "chrono.toml", "atelier": "atelier.toml"}


class TemplateError(ValueError):
    """A template file that does not decode, or names something it does not define."""


@dataclass(frozen=True, slots=True)
class ObjectSpec:
    """A template object; ``opens_with`` is the op of the lock whose opening unseals it."""

    id: str
    name: str
    summary: str
    flavor: str
    opens_with: str | None = None


@dataclass(frozen=True, slots=True)
class LockSlot:
    """A template lock: what it is, which objects may carry its clues, whether optional."""

    spec: LockSpec
    holders: tuple[str, ...]
    optional: bool = False


@dataclass(frozen=True, slots=True)
class Template:
    """A family of rooms sharing a theme, objects and a chain of lock kinds."""

    id: str
    title: str
    intro: str
    objects: tuple[ObjectSpec, ...]
    locks: tuple[LockSlot, ...]


class ObjectData(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A ``[[templates.objects]]`` table: the fields of `ObjectSpec`."""

    id: str
    name: str
    summary: str
    flavor: str
    opens_with: str | None = None


class LockData(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A ``[[templates.locks]]`` table: the fields of `LockSpec`, its holders, optional."""

    op: str
    kind: str
    label: str
    holders: tuple[str, ...]
    optional: bool = False
    pool: tuple[str, ...] = ()
    size: int = 0
    slots: tuple[str, ...] = ()
    noun: str = ""
    events: tuple[str, ...] = ()


class TemplateData(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A ``[[templates]]`` table."""

    id: str
    title: str
    intro: str
    objects: tuple[ObjectData, ...]
    locks: tuple[LockData, ...]


class FileData(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A whole template file."""

    templates: tuple[TemplateData, ...]


def _problems(data: TemplateData) -> list[str]:
    """What in one template is defined twice, or named without being defined."""
    objects = [o.id for o in data.objects]
    ops = [lock.op for lock in data.locks]
    found = [f"object {x!r} twice" for x in sorted(set(objects)) if objects.count(x) > 1]
    found += [f"op {x!r} twice" for x in sorted(set(ops)) if ops.count(x) > 1]
    for lock in data.locks:
        if lock.kind not in ANSWER_IS:
            found.append(f"lock {lock.op}: unknown kind {lock.kind!r}")
        found += [f"lock {lock.op}: no object {h!r}" for h in lock.holders if h not in objects]
    found += [
        f"object {o.id}: opens_with names no lock op {o.opens_with!r}"
        for o in data.objects
        if o.opens_with is not None and o.opens_with not in ops
    ]
    return found


def _template(data: TemplateData) -> Template:
    objects = tuple(
        ObjectSpec(o.id, o.name, o.summary, o.flavor, o.opens_with) for o in data.objects
    )
    locks = tuple(
        LockSlot(
            LockSpec(s.op, s.kind, s.label, s.pool, s.size, s.slots, s.noun, s.events),
            s.holders,
            s.optional,
        )
        for s in data.locks
    )
    return Template(data.id, data.title, data.intro, objects, locks)


def parse(text: bytes, source: str) -> tuple[Template, ...]:
    """The templates of one file's contents, in file order (generation draws by position).

    Args:
        text: The TOML document.
        source: What errors call the file, e.g. ``rooms/chrono.toml``.

    Returns:
        The templates.

    Raises:
        TemplateError: the document is not TOML, has a key or type the Structs above do not
            allow, or a template names an object, op or lock kind it does not define.
    """
    try:
        data = msgspec.toml.decode(text, type=FileData)
    except msgspec.DecodeError as exc:  # ValidationError included
        raise TemplateError(f"{source}: {exc}") from None
    ids = [t.id for t in data.templates]
    found = [f"template {i!r} twice" for i in sorted(set(ids)) if ids.count(i) > 1]
    found += [f"template {t.id}: {p}" for t in data.templates for p in _problems(t)]
    if found:
        raise TemplateError(f"{source}: " + "; ".join(found))
    return tuple(_template(t) for t in data.templates)


def load(name: str) -> tuple[Template, ...]:
    """The templates of the packaged file ``rooms/<name>``.

    Raises:
        TemplateError: see `parse`.
    """
    resource = importlib.resources.files("agora.toolsets.chamber") / "rooms" / name
    return parse(resource.read_bytes(), f"rooms/{name}")


def load_all() -> dict[str, tuple[Template, ...]]:
    """Every engine's templates, by engine (see `FILES`)."""
    return {engine: load(name) for engine, name in FILES.items()}
