#!/usr/bin/env python3
"""An example evaluation adapter for agora's router (protocol ``agora-router-adapter/1``).

agora runs it as the operator's trusted command, once per attempt, and writes one JSON request
to its stdin: ``{"protocol", "attempt", "case"}``, where ``case`` is a sealed case with its
files' contents inlined. It answers one JSON object on stdout:
``{"items": [{"item_id", "passed", "hard_violations"}]}``.

The "model" under evaluation here is the keyword routing table of the case's arm
(``arm.rules``, read from the file ``arm.json``): each item's objective is routed to the
envelope of the first rule whose keyword it contains (``single`` otherwise). An item passes
when that equals ``expected``; choosing an envelope the item lists as ``forbidden`` is a hard
violation. Standard library only; it reads nothing but stdin.
"""

from __future__ import annotations

import json
import sys


def route(objective: str, rules: list[dict[str, str]]) -> str:
    text = objective.casefold()
    for rule in rules:
        if rule["keyword"] in text:
            return rule["envelope"]
    return "single"


def main() -> int:
    request = json.load(sys.stdin)
    case = request["case"]
    rules = json.loads(case["files"]["arm.json"])["rules"]
    items = []
    for item in case["items"]:
        chosen = route(item["objective"], rules)
        items.append(
            {
                "item_id": item["item_id"],
                "passed": chosen == item["expected"],
                "hard_violations": int(chosen in item.get("forbidden", [])),
            }
        )
    json.dump({"items": items}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
