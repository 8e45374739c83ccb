"""Which argument a router call meant by a name its tool does not take, and how a missing one
is asked for.

Three kinds of name reach a tool in place of one it takes: a misspelling (``routing_contxt``),
which difflib rates close to the name meant; another word for it (``goal`` or ``task`` for
``objective``), which it does not: by its letters ``goal`` is nearest ``goal_binding_id``, a
different field; and a field of a nested object sent at the top level (``workspace_root``,
which ``plan_work`` takes inside ``routing_context``). `meant` names the argument in each
case and nothing when no rule fits: a wrong guess misleads an agent more than none.

`reworded` words the top-level ``required`` issues of a refusal with what the schema and these
rules know: the name sent in the missing one's place, ``send null`` or ``send []`` when the
field has an empty value, and the values of an enum, so an agent can write the argument
without reading the schema. Pure.
"""

from __future__ import annotations

import difflib
import json
from typing import TYPE_CHECKING, Any, Final

from agora.mcp.validation import ValidationIssue
from agora.mcp.wording import REQUIRED, REQUIRED_NULLABLE, misspelt, required

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
    by its letters as difflib rates it; None when none fits."""
    if (synonym := synonym_of(name, properties)) is not None:
        return synonym
    holders = [
        f"{arg}.{name}"
        for arg, schema in properties.items()
        if isinstance(schema, dict) and name in schema.get("properties", {})
    ]
    if len(holders) == 1:
        return holders[0]
    close = difflib.get_close_matches(name, sorted(properties), n=1, cutoff=0.6)
    return close[0] if close else None


def reworded(
    schema: Mapping[str, Any], args: Mapping[str, Any], issues: Sequence[ValidationIssue]
) -> list[ValidationIssue]:
    """``issues`` (of ``args`` against the inputSchema ``schema``), each missing top-level
    argument's said anew by `asked`: another word for it counts as sent in its place (and is
    never weighed as a misspelling of a different one)."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    top = {id(i): str(i.path[0]) for i in issues if i.rule == "required" and len(i.path) == 1}
    if not top:
        return list(issues)
    claimed = {
        sent: arg
        for sent in args
        if sent not in properties and (arg := synonym_of(sent, properties)) is not None
    }
    guesses: dict[str, tuple[str, str]] = {}
    for sent, arg in claimed.items():
        guesses.setdefault(arg, (sent, arg))
    rest = {k: v for k, v in args.items() if k not in claimed}
    guesses = misspelt(rest, schema, [m for m in top.values() if m not in guesses]) | guesses
    return [
        ValidationIssue(i.path, i.rule, asked(properties.get(name), guesses.get(name)))
        if (name := top.get(id(i))) is not None
        else i
        for i in issues
    ]


def asked(schema: Any, misspelling: tuple[str, str] | None = None) -> str:
    """The words for a missing argument whose schema is ``schema``: its empty value when it
    has one (null, or ``[]`` for an array that may be empty), its values when it is an enum,
    and the name sent in its place (``misspelling``: sent, meant)."""
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
