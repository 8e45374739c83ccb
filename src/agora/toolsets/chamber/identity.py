"""Checking what a participant declares on entry: suite, identity claims, origin, preflight.

`validate_entry` turns ``enter_open_challenge`` arguments into a `Declared` entry or raises a
`ToolError` with the contract's code: ``suite_unknown``, ``product_id_invalid``,
``host_required``, ``claim_conflict``, ``identity_incomplete``, ``identity_invalid``
(emails, URLs, secrets, control characters, or ``origin=summoned`` from a non-operator) and
``host_is_not_a_product``. ``unknown`` is accepted everywhere. Preflight is recorded, never
judged. Pure: no I/O, no state.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from agora.toolsets.chamber.replies import failure

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agora.toolsets.chamber.contract import ChamberContract, Suite

#: Names of hosts (IDEs, chat apps, agent harnesses): never a product under test.
HOST_NAMES: Final = frozenset(
    {
        "cursor", "vscode", "visual-studio-code", "code", "claude-desktop", "claude-code",
        "claude.ai", "chatgpt", "chatgpt.com", "chatgpt-desktop", "hermes-agent", "openclaw",
        "grok.com", "x.com", "windsurf", "zed", "jetbrains", "intellij", "pycharm", "neovim",
        "vim", "emacs", "cline", "roo-code", "continue", "aider", "goose", "librechat",
        "open-webui", "lm-studio", "lmstudio", "ollama", "copilot", "github-copilot",
        "codex-cli", "gemini-cli", "opencode", "warp", "raycast", "msty", "jan", "anythingllm",
    }
)  # fmt: skip

PRODUCT_PATTERN: Final = re.compile(r"^[a-z0-9][a-z0-9._-]{0,78}$")
_LIMITS: Final = {
    "provider_claim": 80,
    "product": 80,
    "product_plan": 120,
    "model_claim": 120,
    "host": 120,
    "host_claim": 120,
    "host_version": 120,
    "next_candidate": 80,
}
_EMAIL = re.compile(r"[^\s@]+@[^\s@]+\.[^\s@]+")
_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://|\bwww\.|\b[a-z0-9-]+(\.[a-z0-9-]+)+/\S")
_SECRET = re.compile(
    r"(?i)(\bsk-[a-z0-9_-]{12,}|\bgh[pousr]_[a-z0-9]{16,}|\bgithub_pat_|\bxox[abprs]-"
    r"|\bAKIA[0-9A-Z]{12,}|\bAIza[0-9a-z_-]{20,}|-----BEGIN|\bbearer\s+\S|\beyJ[a-z0-9_-]{8,}\."
    r"|\b(api[_-]?key|password|passwd|secret|token)\s*[:=])"
)
_HEX_TOKEN = re.compile(r"(?i)\b[0-9a-f]{32,}\b")
_B64_TOKEN = re.compile(r"[A-Za-z0-9+/=]{32,}")
_PHONE = re.compile(r"(?<![\w.-])\+?\(?\d[\d\s()-]{7,}\d(?![\w.-])")
#: Control characters, and the invisible ones that change what a reader sees without being
#: part of any script: bidirectional marks, overrides and isolates (``x\u202etxt.exe`` shows
#: as ``xexe.txt``), zero-width space, word joiner and invisible operators, the byte-order
#: mark, soft hyphen, Hangul and Mongolian fillers, line and paragraph separators, and tag
#: characters (hidden text). Joiners (ZWNJ, ZWJ: Persian and Indic spelling, emoji
#: sequences) and variation selectors (emoji, CJK, Mongolian) are part of text and pass.
_CONTROL = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200e"
    "\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb"
    "\U000e0000-\U000e007f]"
)
#: Format characters (Unicode category Cf, joiners included) and variation selectors: taken
#: out before the personal-data check, so that "sk\u200d-..." reads as "sk-...".
_INVISIBLE = re.compile("[\u200c\u200d\u180b-\u180f\ufe00-\ufe0f\U000e0100-\U000e01ef]")


@dataclass(frozen=True, slots=True)
class Declared:
    """A validated entry."""

    suite: Suite
    identity: dict[str, str]
    assurance: str
    preflight: dict[str, bool] | None


@functools.lru_cache(maxsize=4096)
def looks_personal(text: str) -> bool:
    """Whether ``text`` looks like an email, URL, phone number, credential or token.

    Compatibility forms count as what they stand for (NFKC: a full-width at sign, U+FF20, is
    an ``@``).
    Memoised: agents of one kind declare the same few claims on every entry.
    """
    text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
    if _EMAIL.search(text) or _URL.search(text) or _SECRET.search(text) or _HEX_TOKEN.search(text):
        return True
    for m in _PHONE.finditer(text):
        if sum(ch.isdigit() for ch in m[0]) >= 9:
            return True
    return any(
        any(c.isdigit() for c in m) and any(c.islower() for c in m) and any(c.isupper() for c in m)
        for m in _B64_TOKEN.findall(text)
    )


def _text(args: Mapping[str, Any], name: str) -> str | None:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise failure("identity_invalid", f"{name} must be a string.", "Send short text.")
    return value.strip()


def _one_of(
    args: Mapping[str, Any], field: str, alias: str, *, required: bool = False
) -> str | None:
    a, b = _text(args, field), _text(args, alias)
    if a and b and a.lower() != b.lower():
        # A required field (host: the schema requires it) cannot be sent as its alias alone.
        hint = (
            f"Send {field}; {alias}, if you send it too, must be the same value."
            if required
            else f"Send {field} or {alias} once, or the same value in both."
        )
        raise failure("claim_conflict", f"{field}={a!r} and {alias}={b!r} disagree.", hint)
    return a or b or None


def check_free_text(name: str, value: str) -> None:
    """Reject over-long values, control characters and personal data in a declared field.

    Raises:
        ToolError: ``identity_invalid``.
    """
    if len(value) > _LIMITS.get(name, 120) or _CONTROL.search(value):
        raise failure(
            "identity_invalid",
            f"{name} is too long or contains control or invisible characters.",
            f"Keep {name} to a short name on one line.",
        )
    if looks_personal(value):
        raise failure(
            "identity_invalid",
            f"{name} looks like personal data, a URL or a secret.",
            "Identity fields take short names only: no emails, URLs, account ids or secrets.",
        )


def check_product(value: str | None, field: str = "product") -> str:
    """Validate a product id (also used for allies).

    Raises:
        ToolError: ``identity_incomplete``, ``product_id_invalid`` or ``host_is_not_a_product``.
    """
    if not value:
        raise failure(
            "identity_incomplete",
            f"{field} is missing.",
            f"Declare {field} (the model or slot under test, e.g. gpt-5.6-sol); unknown is fine.",
        )
    if not PRODUCT_PATTERN.match(value) or ".." in value or value[-1] in "._-":
        raise failure(
            "product_id_invalid",
            f"{field} {value[:80]!r} is not a product id.",
            f"{field} must match ^[a-z0-9][a-z0-9._-]{{0,78}}$ (at most 79 characters) and "
            "not end in . _ or -, e.g. gpt-5.6-sol, composer-3 or unknown.",
        )
    if value in HOST_NAMES:
        raise failure(
            "host_is_not_a_product",
            f"{value} is a host, not a product.",
            f"{field} is the model or slot under test (e.g. gpt-5.6-sol); a host such as "
            f"{value} goes in host.",
        )
    return value


def _origin(
    contract: ChamberContract, origin: str | None, identity: dict[str, str], *, operator: bool
) -> str:
    """Record ``origin`` in ``identity``; return the assurance it earns."""
    if origin is None:
        return contract.community_assurance
    if origin not in contract.origins:
        raise failure(
            "identity_invalid",
            f"Unknown origin {origin!r}.",
            f"Use one of: {', '.join(contract.origins)}.",
        )
    identity["origin"] = origin
    if origin != "summoned":
        return contract.community_assurance
    if not operator:
        raise failure(
            "identity_invalid",
            "origin=summoned is reserved for ScoreIA operators.",
            "Declare origin relayed or uninvited, or leave it out.",
        )
    return contract.summoned_assurance


#: Every argument `validate_entry` reads (but ``preflight``, an object).
ENTRY_FIELDS: Final = (
    "suite", "product", "host", "host_claim", "origin", "origin_claim", "provider_claim",
    "model_claim", "product_plan", "host_version",
)  # fmt: skip


@dataclass
class EntryChecks:
    """`validate_entry` for one contract, remembering the entries it admitted.

    Agents enter again and again with the same claims; a valid entry depends only on the
    contract, its arguments and whether the caller is an operator, so the same arguments are
    admitted again without re-running every check. Refusals are not remembered: they are
    checked (and raised) every time. At most `size` entries are kept.
    """

    contract: ChamberContract
    size: int = 4096
    _admitted: dict[tuple[Any, ...], Declared] = field(default_factory=dict, repr=False)

    def __call__(self, args: Mapping[str, Any], *, operator: bool) -> Declared:
        """`validate_entry` (the same answer, the same errors)."""
        if args.get("preflight"):  # rare, and an object: checked every time
            return validate_entry(self.contract, args, operator=operator)
        key = (operator, *map(args.get, ENTRY_FIELDS))  # no list, no comprehension's frame
        try:
            found = self._admitted.get(key)
        except TypeError:  # an unhashable value: never valid, so validate_entry says why
            return validate_entry(self.contract, args, operator=operator)
        if found is None:
            found = validate_entry(self.contract, args, operator=operator)
            if len(self._admitted) >= self.size:
                self._admitted.clear()
            self._admitted[key] = found
        # A fresh identity dict each time: callers may keep it, none may change the cache.
        return Declared(found.suite, dict(found.identity), found.assurance, None)


def validate_entry(
    contract: ChamberContract, args: Mapping[str, Any], *, operator: bool
) -> Declared:
    """Check ``enter_open_challenge`` arguments against the contract's identity rules.

    Args:
        contract: The chamber contract (suites, origins, assurances).
        args: The tool arguments.
        operator: Whether the caller is an operator principal.

    Returns:
        The validated entry.

    Raises:
        ToolError: with the contract code for the first problem found.
    """
    suite = contract.suite(args.get("suite"))
    if suite is None:
        names = ", ".join(s.id for s in contract.suites if s.status == "active")
        raise failure(
            "suite_unknown", f"No active suite {args.get('suite')!r}.", f"Use one of: {names}."
        )
    product = check_product(_text(args, "product"))
    host = _one_of(args, "host", "host_claim", required=True)
    origin = _one_of(args, "origin", "origin_claim")
    if not host:
        raise failure(
            "host_required",
            "host is missing or blank.",
            "Declare host, the host you run in, e.g. host=cursor; unknown is accepted.",
        )
    identity: dict[str, str] = {"product": product, "host": host}
    for name in ("provider_claim", "model_claim"):
        value = _text(args, name)
        if not value:
            raise failure(
                "identity_incomplete",
                f"{name} is missing.",
                "Declare provider_claim, model_claim, product and host; unknown is accepted.",
            )
        identity[name] = value
    for name in ("product_plan", "host_version"):
        value = _text(args, name)
        if value:
            identity[name] = value
    for name, value in identity.items():
        check_free_text(name, value)
    if product != "unknown" and product == host.lower():
        raise failure(
            "host_is_not_a_product",
            f"product and host are both {product!r}.",
            "product is the model or slot under test; host is where it runs.",
        )
    assurance = _origin(contract, origin, identity, operator=operator)
    preflight = args.get("preflight")
    return Declared(suite, identity, assurance, dict(preflight) if preflight else None)


def check_entry_notice(contract: ChamberContract) -> Mapping[str, str]:
    """The publication notice every entry must show.

    Raises:
        ToolError: ``publication_notice_missing`` if the contract carries none, in which
            case nobody is admitted into a flow that publishes cards.
    """
    notice = contract.publication_notice
    if notice is None:
        raise failure(
            "publication_notice_missing",
            "This server has no publication notice to show, so it cannot admit attempts.",
            "An operator must restore identity.publication_notice in the chamber contract.",
        )
    return notice
