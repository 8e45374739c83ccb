"""The compiled argument validator agrees with the jsonschema reference on generated values.

Hypothesis draws values that mostly fit each contract's input schema and sometimes break it in
one place; both validators must give the same verdict.
"""

from __future__ import annotations

import jsonschema
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from agora.mcp.contracts import load_contract
from agora.mcp.validation import compile_validator

TEXT = st.text(st.characters(exclude_characters="\n"), max_size=12)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
ANY_JSON = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)  # fmt: skip


def _fitting(schema, depth):  # noqa: C901 - one branch per JSON Schema keyword family
    if not isinstance(schema, dict) or depth > 6:
        return ANY_JSON
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "anyOf" in schema or "oneOf" in schema:
        return st.one_of([_near(s, depth + 1) for s in schema.get("anyOf", schema.get("oneOf"))])
    types = schema.get("type", "object" if "properties" in schema else None)
    if types is None:
        return ANY_JSON
    options = []
    for kind in [types] if isinstance(types, str) else types:
        if kind == "string" and "pattern" in schema:
            options.append(st.from_regex(schema["pattern"], fullmatch=True) | TEXT)
        elif kind == "string":
            low, high = schema.get("minLength", 0), schema.get("maxLength", 10)
            options.append(st.text(st.characters(exclude_characters="\n"), min_size=max(0, low - 1),
                                   max_size=min(high + 1, 300)))  # fmt: skip
        elif kind in ("integer", "number"):
            low, high = schema.get("minimum", -(2**53)), schema.get("maximum", 2**53)
            options.append(
                st.integers(low - 1, high + 1) | st.floats(allow_nan=False, allow_infinity=False)
            )
        elif kind == "boolean":
            options.append(st.booleans())
        elif kind == "null":
            options.append(st.none())
        elif kind == "array":
            items = _near(schema.get("items", {}), depth + 1)
            options.append(st.lists(items, max_size=min(schema.get("maxItems", 4) + 1, 5)))
        elif kind == "object":
            options.append(_objects(schema, depth))
    return st.one_of(options)


def _objects(schema, depth):
    props = schema.get("properties", {})
    required = [k for k in schema.get("required", []) if k in props]
    base = st.fixed_dictionaries(
        {k: _near(props[k], depth + 1) for k in required},
        optional={k: _near(v, depth + 1) for k, v in props.items() if k not in required},
    )

    def mutate(pair):
        value, (action, key) = pair
        value = dict(value)
        if action == "drop" and required:
            value.pop(required[key % len(required)], None)
        elif action == "extra":
            value["unexpected_field"] = key
        return value

    actions = st.tuples(st.sampled_from(["keep"] * 6 + ["drop", "extra"]), st.integers(0, 9))
    return st.tuples(base, actions).map(mutate)


def _near(schema, depth=0):
    """Values that mostly fit ``schema`` and sometimes break it in one place."""
    return st.integers(0, 9).flatmap(lambda n: ANY_JSON if n == 0 else _fitting(schema, depth))


def _reference(schema):
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema)


_COMPILED: dict[int, object] = {}


def _compiled(schema):
    # Contract schemas live as long as the cached contract, so id() is a stable key.
    return _COMPILED.setdefault(id(schema), compile_validator(schema))


def _input_schemas(*toolsets):
    return [
        pytest.param(tool.input_schema, id=f"{toolset}.{tool.name}")
        for toolset in toolsets
        for tool in load_contract(toolset).tools.values()
    ]


def _agree(schema, data):
    value = data.draw(_near(schema), label="value")
    assert _compiled(schema).is_valid(value) == _reference(schema).is_valid(value)


@pytest.mark.parametrize("schema", _input_schemas("chess", "chamber"))
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_compiled_validator_agrees_with_jsonschema(schema, data):
    _agree(schema, data)


@pytest.mark.parametrize("schema", _input_schemas("router"))
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_compiled_validator_agrees_with_jsonschema_on_router_schemas(schema, data):
    _agree(schema, data)


@pytest.mark.parametrize("schema", _input_schemas("chess", "chamber"))
def test_generated_values_include_accepted_and_rejected_ones(schema):
    reference = _reference(schema)
    # Generation only: an example is enough, shrinking it would only cost time.
    quick = settings(
        max_examples=500,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    find(_near(schema), lambda v: not reference.is_valid(v), settings=quick)
    find(_near(schema), reference.is_valid, settings=quick)
