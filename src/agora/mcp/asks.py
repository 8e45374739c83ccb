"""What a server-to-client request needs of the client, and the shape of its answer, sans-io.

A handler asks its client with `agora.server.channel.ClientChannel.request` (``roots/list``,
``sampling/createMessage``, ``elicitation/create``). At 2026-07-28 the request travels in the
call's ``input_required`` answer and the client's result comes back in ``inputResponses``;
there, a request the client declared no capability for is refused with -32021
(`missing_capabilities`: the spec's MissingRequiredClientCapabilityError, whose
``data.requiredCapabilities`` lists them), and an answer that is not the method's result is
refused with -32602 (`answer_problem`), before any handler reads it.
"""

from __future__ import annotations

from typing import Any

ACTIONS = ("accept", "decline", "cancel")
ROLES = ("user", "assistant")


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


def answer_problem(method: str, answer: Any) -> str | None:
    """What is wrong with ``answer`` as the client's result of ``method`` (to follow
    ``inputResponses[method]``), or None when it has the result's shape (or ``method`` is
    none checked here)."""
    check = _CHECKS.get(method)
    return None if check is None else check(answer)


def _roots(answer: Any) -> str | None:
    if not isinstance(answer, dict):
        return " must be a ListRootsResult object ({roots: [{uri, name?}]})"
    roots = answer.get("roots")
    if not isinstance(roots, list):
        return ".roots must be a list of {uri, name?} objects"
    for i, root in enumerate(roots):
        if not isinstance(root, dict) or not isinstance(root.get("uri"), str):
            return f".roots[{i}] must be an object with a string uri"
        if not isinstance(root.get("name", ""), str):
            return f".roots[{i}].name must be a string"
    return None


def _sampled(answer: Any) -> str | None:
    if not isinstance(answer, dict):
        return " must be a CreateMessageResult object ({role, content, model, stopReason?})"
    if answer.get("role") not in ROLES:
        return ".role must be one of " + ", ".join(ROLES)
    content = answer.get("content")
    blocks = content if isinstance(content, list) else [content]
    if not all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in blocks):
        return ".content must be a content block (an object with a string type) or a list of them"
    if not isinstance(answer.get("model"), str):
        return ".model must be a string"
    if not isinstance(answer.get("stopReason", ""), str):
        return ".stopReason must be a string"
    return None


def _elicited(answer: Any) -> str | None:
    if not isinstance(answer, dict):
        return " must be an ElicitResult object ({action, content?})"
    if answer.get("action") not in ACTIONS:
        return ".action must be one of " + ", ".join(ACTIONS)
    content = answer.get("content")
    if content is None:
        return None
    if not isinstance(content, dict):
        return ".content must be an object"
    for name, value in content.items():
        plain = isinstance(value, (str, int, float))  # (a bool is an int)
        if not plain and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            return f".content[{name!r}] must be a string, number, boolean or list of strings"
    return None


_CHECKS = {
    "roots/list": _roots,
    "sampling/createMessage": _sampled,
    "elicitation/create": _elicited,
}
