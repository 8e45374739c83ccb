"""Which argument a router call meant by a name its tool does not take, and how a missing one
is asked for.

Three kinds of name reach a tool in place of one it takes: a misspelling (``routing_contxt``),
which difflib rates close to the name meant; another word for it (``goal`` or ``task`` for
``objective``), which it does not: by its letters ``goal`` is nearest ``goal_binding_id``, a
different field; and a field of a nested object sent at the top level (``workspace_root``,
which ``plan_work`` takes inside ``routing_context``). `meant` names the argument in each
case and nothing when no rule fits: a wrong guess misleads an agent more than none.

A guess by the letters alone is dropped when the two names differ by a whole word of the same
place (``gate_id`` for ``phase_id``: close letters, another field;
`agora.mcp.wording.same_sense`): the value sent is then most likely that other thing, not the
argument.

`reworded` words the ``required`` issues of a refusal, top-level and nested alike
(``routing_context.domains``), with what the schema and these rules know: the name sent in the
missing one's place, ``send null`` or ``send []`` when the field has an empty value, the
values of an enum and the shape of an object (``context``), so an agent can write the
argument without reading the schema. Pure.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from agora.mcp.validation import ValidationIssue
from agora.mcp.wording import REQUIRED, REQUIRED_NULLABLE, misspelt, required, spelt_like

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

#: Words agents send for a router argument under another name (compared casefolded), by the
#: argument meant; a word counts only for a tool that takes that argument.
SYNONYMS: Final = {
    "objective": frozenset(
        {"goal", "task", "description", "prompt", "request", "instruction", "instructions"}
    ),
    "workflow_run_id": frozenset({"run_id", "workflow_id", "run"}),
}

#: At most this many enum values are listed in a refusal.
_MOST_VALUES: Final = 24


def synonym_of(name: str, properties: Mapping[str, Any]) -> str | None:
    """The argument of ``properties`` that ``name`` is another word for, or None."""
    word = name.casefold()
    found = [arg for arg, words in SYNONYMS.items() if word in words and arg in properties]
    return found[0] if found else None


def meant(name: str, properties: Mapping[str, Any]) -> str | None:
    """The argument (of a tool whose inputSchema has ``properties``) that ``name`` stands
    for: the one it is another word for, else a nested field of that name (as
    ``routing_context.workspace_root``: the only object argument holding it), else the closest
    by its letters (`agora.mcp.wording.spelt_like`); None when none fits."""
    if (synonym := synonym_of(name, properties)) is not None:
        return synonym
    holders = [
        f"{arg}.{name}"
        for arg, schema in properties.items()
        if isinstance(schema, dict) and name in schema.get("properties", {})
    ]
    if len(holders) == 1:
        return holders[0]
    return spelt_like(name, sorted(properties))


def reworded(
    schema: Mapping[str, Any], args: Mapping[str, Any], issues: Sequence[ValidationIssue]
) -> list[ValidationIssue]:
    """``issues`` (of ``args`` against the inputSchema ``schema``), each missing argument's,
    top-level or nested, said anew by `asked`: another word for it counts as sent in its place
    (and is never weighed as a misspelling of a different one)."""
    missing: dict[tuple[str | int, ...], list[str]] = {}
    for i in issues:
        if i.rule == "required" and i.path and isinstance(i.path[-1], str):
            missing.setdefault(i.path[:-1], []).append(i.path[-1])
    words: dict[tuple[str | int, ...], str] = {}
    for parent, names in missing.items():
        holder = _object_at(schema, parent)
        if holder is not None:
            said = _asked_in(holder, _value_at(args, parent), names)
            words.update({(*parent, name): text for name, text in said.items()})
    return [
        ValidationIssue(i.path, i.rule, words[i.path])
        if i.rule == "required" and i.path in words
        else i
        for i in issues
    ]


def _asked_in(
    schema: Mapping[str, Any], value: Mapping[str, Any], names: list[str]
) -> dict[str, str]:
    """`asked`'s words for each of ``names`` missing from ``value``, an object of ``schema``."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    claimed = {
        sent: arg
        for sent in value
        if sent not in properties and (arg := synonym_of(sent, properties)) is not None
    }
    guesses: dict[str, tuple[str, str]] = {}
    for sent, arg in claimed.items():
        guesses.setdefault(arg, (sent, arg))
    rest = {k: v for k, v in value.items() if k not in claimed}
    spelt = misspelt(rest, schema, [m for m in names if m not in guesses])
    guesses = spelt | guesses
    return {name: asked(properties.get(name), guesses.get(name)) for name in names}


def _object_at(schema: Any, path: Sequence[str | int]) -> Mapping[str, Any] | None:
    """The object schema (or object form of an ``anyOf``) at ``path`` under ``schema``."""
    for key in (*path, None):
        forms = [schema, *schema.get("anyOf", ())] if isinstance(schema, dict) else []
        if key is None:
            return next((f for f in forms if isinstance(f, dict) and "properties" in f), None)
        if isinstance(key, int):
            schema = next((f["items"] for f in forms if isinstance(f, dict) and "items" in f), None)
        else:
            held = [f["properties"][key] for f in forms if key in f.get("properties", {})]
            schema = held[0] if held else None
    return None


def _value_at(args: Any, path: Sequence[str | int]) -> Mapping[str, Any]:
    """The object sent at ``path`` under ``args``; empty when it is none."""
    for key in path:
        if isinstance(args, dict) and isinstance(key, str):
            args = args.get(key)
        elif isinstance(args, list) and isinstance(key, int) and key < len(args):
            args = args[key]
        else:
            return {}
    return args if isinstance(args, dict) else {}


def asked(schema: Any, misspelling: tuple[str, str] | None = None) -> str:
    """The words for a missing argument whose schema is ``schema``: its empty value when it
    has one (null, or ``[]`` for an array that may be empty), its values when it is an enum,
    the shape of an object (`_shape`), and the name sent in its place (``misspelling``: sent,
    meant)."""
    parts = []
    nullable = required(schema) == REQUIRED_NULLABLE
    if nullable:
        parts.append("send null if there is none")
    elif _empty_array(schema):
        parts.append("send [] if there is none")
    values = _values(schema)
    if values:
        listed = ", ".join(json.dumps(v, ensure_ascii=False) for v in values[:_MOST_VALUES])
        more = f", ... ({len(values) - _MOST_VALUES} more)" if len(values) > _MOST_VALUES else ""
        parts.append(f"{'else ' if nullable else ''}one of {listed}{more}")
    if (shape := _shape(schema)) is not None:
        parts.append(f"an object: {shape}")
    if misspelling is not None:
        parts.append(f"you sent '{misspelling[0]}': did you mean '{misspelling[1]}'?")
    return f"{REQUIRED} ({'; '.join(parts)})" if parts else REQUIRED


def _empty_array(schema: Any) -> bool:
    return (
        isinstance(schema, dict) and schema.get("type") == "array" and not schema.get("minItems", 0)
    )


def _values(schema: Any) -> list[Any]:
    """The values an enum schema (or the enum forms of its ``anyOf``) allows, null left out."""
    if not isinstance(schema, dict):
        return []
    forms = [schema, *schema.get("anyOf", ())]
    values = [v for form in forms if isinstance(form, dict) for v in form.get("enum", ())]
    return [v for v in values if v is not None]


#: The placeholder of a value of each JSON type in `_shape`'s example.
_PLACEHOLDERS: Final = {"string": "...", "integer": 0, "number": 0, "boolean": False,
                        "array": [], "object": {}, "null": None}  # fmt: skip


def _shape(schema: Any) -> str | None:
    """An example of an object schema's required properties, as JSON with a placeholder
    for each value (``{"session_id": "...", ...}``), or None if ``schema`` is no such
    object."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return None
    properties = schema.get("properties", {})
    names = schema.get("required", ())
    if not names:
        return None
    return json.dumps({name: _placeholder(properties.get(name)) for name in names})


def _placeholder(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return "..."
    values = _values(schema)
    if values:
        return values[0]
    kinds = [schema.get("type"), *(f.get("type") for f in schema.get("anyOf", ()))]
    return next((_PLACEHOLDERS[k] for k in kinds if isinstance(k, str)), "...")


def summary(issues: Sequence[ValidationIssue]) -> str:
    """The message of a refusal of ``issues``: its one issue described, else how many there
    are, each in brief (the missing arguments in one list), and the first described in full:
    an agent fixing the first alone would be refused again for the next."""
    if len(issues) < 2:
        return issues[0].describe() if issues else "invalid arguments"
    missing = [f"'{i.field}'" for i in issues if i.rule == "required"]
    parts = [f"missing required argument{'s' if len(missing) > 1 else ''} {', '.join(missing)}"]
    parts = parts if missing else []
    parts += [
        f"argument '{i.field}' breaks its {i.rule} rule" for i in issues if i.rule != "required"
    ]
    return (
        f"{len(issues)} problems with the arguments: {'; '.join(parts)}. issues says how to fix"
        f" each; the first: {issues[0].describe()}"
    )
