"""What a JSON Schema rule asks of a value, in words a model can act on.

`describe` turns one failed rule of a schema (fastjsonschema's exception: the rule, its
definition, the value) into the end of a refusal's sentence, e.g. ``must be one of "q", "r"``
or ``must be "use", "only", "all" or null, got "maybe"``; `agora.mcp.validation` puts the
field's name in front; `required` words a missing property, and says to send null when its
schema takes null, so a model does not invent a value it has none of, and names the argument
sent in its place when one looks like it misspelt (`misspelt`). Pure functions over plain
values.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

_JSON_TYPES = {type(None): "null", bool: "boolean", int: "integer", float: "number", str: "string"}
_JSON_TYPES |= {dict: "object", list: "array"}
_TYPE_WORDS = {"integer": "an integer", "object": "an object", "array": "an array", "null": "null"}
_TEMPLATES = {
    "pattern": "must match pattern {}",
    "format": "must be a valid {}",
    "minimum": "must be >= {}",
    "maximum": "must be <= {}",
    "exclusiveMinimum": "must be > {}",
    "exclusiveMaximum": "must be < {}",
    "multipleOf": "must be a multiple of {}",
    "minItems": "must have at least {} {items}",
    "maxItems": "must have at most {} {items}",
    "minProperties": "must have at least {} {fields}",
    "maxProperties": "must have at most {} {fields}",
    "minLength": "must be at least {} {characters} long",
    "maxLength": "must be at most {} {characters} long",
    "uniqueItems": "must not contain duplicate items",
    "anyOf": "must match at least one of the allowed forms",
    "oneOf": "must match exactly one of the allowed forms",
    "not": "must not match the excluded form",
    "contains": "must contain at least one matching item",
    "false": "is not allowed here",
}


def _forms(alternatives: Any, value: Any) -> str | None:
    """The forms of an ``anyOf`` in words, when each is a set of values or a bare type (e.g.
    ``"use", "only", "all" or null``); None when one is more than that."""
    words: list[str] = []
    for alt in alternatives if isinstance(alternatives, list) else ():
        if not isinstance(alt, dict) or set(alt) - {"enum", "const", "type", "description"}:
            return None
        if "enum" in alt or "const" in alt:
            values = alt["enum"] if "enum" in alt else [alt["const"]]
            words += [json.dumps(v, ensure_ascii=False) for v in values]
        elif "type" in alt:
            types = [alt["type"]] if isinstance(alt["type"], str) else list(alt["type"])
            words += [_TYPE_WORDS.get(t, f"a {t}") for t in types]
        else:
            return None
    if not words or len(words) > 24:
        return None
    listed = ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else words[0]
    return f"must be {listed}, got {_given(value)}"


def _given(value: Any) -> str:
    """What a value was, for a refusal: short scalars as JSON, anything else by its type."""
    if isinstance(value, bool | int | float | type(None)) or (
        isinstance(value, str) and len(value) <= 32
    ):
        return json.dumps(value, ensure_ascii=False)
    return _JSON_TYPES.get(type(value), type(value).__name__)


def describe(rule: str, definition: Mapping[str, Any], value: Any, fallback: str) -> str:
    """Say what the value must be to satisfy ``rule`` of ``definition``."""
    spec = definition.get(rule)
    if rule == "anyOf" and (forms := _forms(spec, value)) is not None:
        return forms
    if rule == "type":
        types = [spec] if isinstance(spec, str) else list(spec or ())
        words = " or ".join(_TYPE_WORDS.get(t, f"a {t}") for t in types)
        return f"must be {words}, got {_JSON_TYPES.get(type(value), type(value).__name__)}"
    if rule == "enum":
        choices = list(spec or ())
        more = f", ... ({len(choices) - 24} more)" if len(choices) > 24 else ""
        return f"must be one of {json.dumps(choices[:24], ensure_ascii=False)[1:-1]}{more}"
    if rule == "const":
        return f"must be exactly {json.dumps(spec, ensure_ascii=False)}"
    if rule in _TEMPLATES:
        sized = rule.startswith(("min", "max")) and isinstance(value, str | list | dict)
        nouns = {n: n if spec != 1 else n[:-1] for n in ("items", "fields", "characters")}
        said = _TEMPLATES[rule].format(spec, **nouns)
        return said + (f" (got {len(value)})" if sized else "")
    if rule == "propertyNames" and isinstance(spec, dict):
        limits = [
            describe(k, spec, None, "") for k in ("pattern", "maxLength", "enum") if k in spec
        ]
        return "has a field name that is not allowed: names " + ("; ".join(limits) or "are limited")
    # Rarer rules (dependencies, ...): fastjsonschema's own sentence without its "data..." name.
    return f"breaks rule {rule}: {fallback.split(' ', 1)[-1]}"


#: What a missing property must be told when its schema takes null: the model must not invent
#: a value for a field it has none for (the router's ``goal_binding_id``).
REQUIRED = "is required"
REQUIRED_NULLABLE = "is required (send null if there is none)"


#: At most this many sent names the schema does not know are weighed as misspellings, each
#: at most this long: a misspelling is a short name, and a refusal echoes little of the call.
_MOST_GUESSED = 32
_LONGEST_GUESSED = 64


def required(schema: Any, misspelling: tuple[str, str] | None = None) -> str:
    """The words for a missing property whose schema is ``schema``; ``misspelling``: the
    name the caller sent that is probably this property misspelt, and the property's name
    (`misspelt`), so the refusal says which argument to rename."""
    nullable = _takes_null(schema)
    if misspelling is None:
        return REQUIRED_NULLABLE if nullable else REQUIRED
    sent, name = misspelling
    null = "send null if there is none; " if nullable else ""
    return f"{REQUIRED} ({null}you sent '{sent}': did you mean '{name}'?)"


def misspelt(
    value: Mapping[str, Any], definition: Mapping[str, Any], missing: Iterable[str]
) -> dict[str, tuple[str, str]]:
    """Which name ``value`` holds in place of each ``missing`` property of ``definition``,
    as ``{property: (sent, property)}`` (`required`'s ``misspelling``): a sent name the schema
    names neither in ``properties`` nor by ``patternProperties`` whose closest property (as
    difflib rates it, like the router's unknown-argument warnings) is the missing one. Only
    refusals get here: a valid call pays nothing for it."""
    known = definition.get("properties", {})
    wanted, names = set(missing), sorted(known)
    if not wanted or not names:
        return {}
    patterns = [re.compile(p) for p in definition.get("patternProperties", {})]
    guesses: dict[str, tuple[str, str]] = {}
    weighed = 0
    for sent in value:
        if not isinstance(sent, str) or sent in known or len(sent) > _LONGEST_GUESSED:
            continue
        if not sent.isprintable():
            continue
        if any(p.search(sent) for p in patterns):
            continue
        close = closest(sent, names)
        if close in wanted:
            guesses.setdefault(close, (sent, close))
        weighed += 1
        if weighed == _MOST_GUESSED:
            break
    return guesses


def closest(sent: str, names: list[str]) -> str | None:
    """The one of ``names`` that ``sent`` most likely means: the closest as difflib rates it
    when it may mean the same (`same_sense`), else the only name of which ``sent`` is one
    whole ``_``-separated word (``role`` for ``viewer_role``: too short a part of it for
    difflib, yet plainly that field)."""
    if (close := spelt_like(sent, names)) is not None:
        return close
    holding = [name for name in names if sent in name.split("_") and sent != name]
    return holding[0] if len(holding) == 1 else None


def spelt_like(sent: str, names: list[str]) -> str | None:
    """The one of ``names`` closest to ``sent`` by its letters (difflib's rating), when it
    may mean the same (`same_sense`); None if none is close."""
    close = difflib.get_close_matches(sent, names, n=1, cutoff=0.6)
    return close[0] if close and same_sense(sent, close[0]) else None


def same_sense(sent: str, name: str) -> bool:
    """Whether ``sent``, rated close to ``name`` by its letters, may mean it: not when both
    have as many ``_``-separated words and a word of ``sent`` is far from the word of ``name``
    at its place (``gate_id`` and ``phase_id`` share ``_id``, but a gate is no phase: a value
    sent as one is most likely that other thing); nor when, their first words alike, what
    follows them is far apart (every debate tool begins ``debate_``: ``debate_nope`` is no
    ``debate_bind_role``)."""
    words, named = sent.casefold().split("_"), name.casefold().split("_")
    if len(words) != len(named):
        shared = next(
            (i for i, (a, b) in enumerate(zip(words, named, strict=False)) if a != b),
            min(len(words), len(named)),
        )
        rest, named_rest = "_".join(words[shared:]), "_".join(named[shared:])
        return not (shared and rest and named_rest) or _close(rest, named_rest)
    if len(words) < 2:
        return True
    return all(a == b or _close(a, b) for a, b in zip(words, named, strict=True))


def _close(a: str, b: str) -> bool:
    """Whether two words are alike enough to be one misspelt (difflib's rating, as `closest`)."""
    return difflib.SequenceMatcher(None, a, b).ratio() >= 0.6


def not_allowed(sent: str, known: Iterable[str], value: Mapping[str, Any]) -> str:
    """The words for ``sent``, a field the schema does not allow: the allowed ones, led by
    the one it looks like a misspelling of (as `misspelt` rates it) when ``value`` does not
    hold that one already."""
    names = sorted(known)
    allowed = f"allowed: {', '.join(names[:24]) or 'none'}"
    if sent.isprintable() and len(sent) <= _LONGEST_GUESSED:
        close = closest(sent, names)
        if close is not None and close not in value:
            return f"is not an allowed field (did you mean '{close}'? {allowed})"
    return f"is not an allowed field ({allowed})"


def _takes_null(schema: Any) -> bool:
    """Whether ``schema`` names null among its values: its ``type`` (with no ``enum`` or
    ``const`` ruling null out), its ``enum`` or ``const``, or a form of its ``anyOf`` or
    ``oneOf``. A schema that says nothing of null (``{}``) is not taken to ask for it."""
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind is not None and kind != "null" and not (isinstance(kind, list) and "null" in kind):
        return False
    if "const" in schema:
        return schema["const"] is None
    if "enum" in schema:
        return None in schema["enum"]
    if kind is not None:
        return True
    return any(_takes_null(form) for key in ("anyOf", "oneOf") for form in schema.get(key, ()))
