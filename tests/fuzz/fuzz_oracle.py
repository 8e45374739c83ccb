"""What every answer to a fuzzed call must satisfy, whatever the input.

- It is a JSON-RPC result or error, never -32603 (internal error), never a result whose text
  names a correlation id (an internal failure shaped for the client), and the server logged
  nothing at WARNING or above while answering.
- A successful structured result is valid against the tool's outputSchema, checked with the
  independent ``jsonschema`` library (agora validates with fastjsonschema). An ``isError``
  body is not held to it here (the official SDK client never validates one either); the
  tools whose error bodies fall outside their outputSchema are kept in ``Oracle.loose_errors``,
  which `test_fuzz_tools` requires empty for every toolset but the router (whose schemas
  must stay exactly the seed's).
- A rejected call (a JSON-RPC error or ``isError``) left every row of the database as it was.
- Strings in successful structured results are harvested into the pool that later calls
  draw ids and handles from.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import TYPE_CHECKING, Any

import jsonschema
from fuzz_live import Watch
from fuzz_settings import count_case

if TYPE_CHECKING:
    from fuzz_live import LiveServer

    from agora.mcp.catalog import ToolEntry

INTERNAL_ERROR = -32603
POOL_SIZE = 400


@functools.cache
def _validator(schema_json: str) -> Any:
    import json

    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    return cls(schema)


def output_problem(tool: ToolEntry, structured: Any) -> str | None:
    """Why ``structured`` breaks ``tool``'s outputSchema, or None."""
    if tool.output_schema is None:
        return None
    import json

    validator = _validator(json.dumps(tool.output_schema, sort_keys=True))
    error = jsonschema.exceptions.best_match(validator.iter_errors(structured))
    return None if error is None else f"{error.json_path}: {error.message}"


def harvest(value: Any, pool: list[str]) -> None:
    """Add short strings found in ``value`` to ``pool`` (bounded, no repeats)."""
    stack = [value]
    while stack and len(pool) < POOL_SIZE:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and 0 < len(item) <= 80 and item not in pool:
            pool.append(item)


class Oracle:
    """Checks each answer against the properties above; remembers the last digest."""

    def __init__(self, live: LiveServer, pool: list[str]) -> None:
        self.live = live
        self.pool = pool
        self.watch = Watch(live.db)
        self.cases = 0
        self.parked: Counter[str] = Counter()
        #: Tool name -> how one of its isError bodies broke its outputSchema.
        self.loose_errors: dict[str, str] = {}

    def check(self, tool: ToolEntry | None, sent: bytes, reply: dict[str, Any] | None) -> None:
        """Assert the properties for one answered (or parked and cancelled) call."""
        self.cases += 1
        count_case()
        where = f"tool {tool.name if tool else '?'} sent {sent[:400]!r}"
        assert not self.live.log.records, f"{where}: server logged {self.live.log.records}"
        touched = self.watch.look()
        if reply is None:  # a long-poll parked, then cancelled: nothing to check but the log
            self.parked[tool.name if tool else "?"] += 1
            return
        if "error" in reply:
            assert reply["error"]["code"] != INTERNAL_ERROR, f"{where}: {reply}"
            assert not touched, f"{where}: rejected with {reply['error']} but {touched} changed"
            return
        result = reply["result"]
        texts = [c.get("text", "") for c in result.get("content", []) if isinstance(c, dict)]
        assert not any("correlation id" in t for t in texts), f"{where}: internal {texts}"
        structured = result.get("structuredContent")
        problem = None
        if tool is not None and structured is not None:
            problem = output_problem(tool, structured)
        if result.get("isError"):
            if problem is not None and tool is not None:
                self.loose_errors.setdefault(tool.name, problem)
            assert not touched, f"{where}: isError {texts[:1]} but {touched} changed"
            return
        assert problem is None, f"{where}: result breaks outputSchema: {problem}\n{result}"
        if structured is not None:
            harvest(structured, self.pool)
