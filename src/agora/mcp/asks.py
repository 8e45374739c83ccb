"""What a server-to-client request needs of the client (its declared capabilities), sans-io.

A handler asks its client with `agora.server.channel.ClientChannel.request` (``roots/list``,
``sampling/createMessage``, ``elicitation/create``). At 2026-07-28 the request travels in the
call's ``input_required`` answer and the client's result comes back in ``inputResponses``;
there, a request the client declared no capability for is refused with -32021
(`missing_capabilities`: the spec's MissingRequiredClientCapabilityError, whose
``data.requiredCapabilities`` lists them).
"""

from __future__ import annotations

from typing import Any

#: JSON-RPC error of a request that needs a capability its client did not declare (2026-07-28).
MISSING_CAPABILITY = -32021


def missing_capabilities(
    method: str, params: dict[str, Any], declared: dict[str, Any]
) -> dict[str, Any] | None:
    """The client capabilities that asking ``method`` with ``params`` needs and ``declared``
    lacks (a ClientCapabilities object), or None when nothing is missing.

    ``roots/list`` needs ``roots``; ``sampling/createMessage`` needs ``sampling`` (and
    ``sampling.tools`` to offer tools, ``sampling.context`` to include context);
    ``elicitation/create`` needs ``elicitation`` with the mode it uses (``form`` unless
    ``params.mode`` is ``url``; a bare ``elicitation: {}`` means form only). Other methods
    need nothing known here.
    """
    if method == "roots/list":
        return None if "roots" in declared else {"roots": {}}
    if method == "sampling/createMessage":
        if "sampling" not in declared:
            return {"sampling": {}}
        sampling = declared["sampling"] if isinstance(declared["sampling"], dict) else {}
        needs: dict[str, Any] = {}
        if ("tools" in params or "toolChoice" in params) and "tools" not in sampling:
            needs["tools"] = {}
        if params.get("includeContext", "none") != "none" and "context" not in sampling:
            needs["context"] = {}
        return {"sampling": needs} if needs else None
    if method == "elicitation/create":
        mode = "url" if params.get("mode") == "url" else "form"
        modes = declared.get("elicitation")
        if isinstance(modes, dict) and not modes:
            modes = {"form": {}}  # the spec's backwards-compatible reading of {}
        if isinstance(modes, dict) and mode in modes:
            return None
        return {"elicitation": {mode: {}}}
    return None
