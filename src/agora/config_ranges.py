"""The settings that are numbers or one of a few words, checked against their bounds.

`agora.config.load_config` and `agora.config.config_problem` ask `out_of_range` of every
configuration: a port past 65535, a ``synchronous`` SQLite has no word for, a duration that
is NaN, infinite or negative, a count below 1, a share of sessions above the whole. Checked
there, where the setting's source is known, rather than where it is used (the store,
``agora serve``'s start), whose refusals could not say which file or variable to fix. The
check returns the setting and why, in the operator's words, or None; it asks
`agora.config_checks.unusable_address` between the words and the numbers, so that of
several problems the same one is said first as before this module was split from
`agora.config`. No I/O.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import msgspec

from agora.config_checks import unusable_address

if TYPE_CHECKING:
    from agora.config import Config

#: Settings that must be 0 or more, more than 0, or at least 1 (a count).
_AT_LEAST_ZERO = ("grace_seconds", "linger_seconds", "ping_interval", "switch_interval_ms")
_ABOVE_ZERO = (
    "commit_timeout",
    "actor_idle_seconds",
    "send_timeout",
    "session_idle_seconds",
    "keep_alive_seconds",
)
#: Settings with a most. A switch interval longer than the interpreter's own 5 ms only makes
#: every commit wait longer for the GIL (100000 took the writes' median from 1.1 to 31 ms):
#: the setting is there to shorten that wait.
_AT_MOST = {"switch_interval_ms": 5.0}
_COUNTS = (
    "max_in_flight",
    "page_size",
    "max_connections",
    "max_sessions",
    "max_sessions_per_principal",
    "keep_alive_requests",
)

#: The values of SQLite's ``synchronous`` pragma the store sets (`agora.store.db`).
_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")


def out_of_range(config: Config) -> tuple[str, str] | None:
    """The first setting whose value the server cannot run with: (its name, why)."""
    if not 0 <= config.port <= 65535:
        return "port", f"port must be between 0 and 65535, not {config.port}"
    if config.synchronous.upper() not in _SYNCHRONOUS:  # SQLite's words, in any case
        wanted = ", ".join(_SYNCHRONOUS)
        return "synchronous", f"synchronous must be one of {wanted}, not {config.synchronous!r}"
    if (address := unusable_address(config)) is not None:
        return address
    fields = msgspec.structs.fields(config)
    # Settings of seconds or milliseconds: a number, but never NaN or infinity (TOML and the
    # AGORA_* variables can both write ``nan`` and ``inf``), which pass every comparison
    # below, or most.
    for name in (f.name for f in fields if f.type is float):
        if not math.isfinite(value := getattr(config, name)):
            return name, f"{name} must be a finite number, not {value}"
    for name in _AT_LEAST_ZERO:
        if (value := getattr(config, name)) < 0:
            return name, f"{name} must be 0 or more, not {value:g}"
    for name in _ABOVE_ZERO:
        if (value := getattr(config, name)) <= 0:
            return name, f"{name} must be more than 0, not {value:g}"
    for name in _COUNTS:
        if (value := getattr(config, name)) < 1:
            return name, f"{name} must be at least 1, not {value}"
    share = next(f.default for f in fields if f.name == "max_sessions_per_principal")
    return _too_large(config, share)


def _too_large(config: Config, default_share: int) -> tuple[str, str] | None:
    """The first setting above its most, a share of sessions above the whole: (name, why).

    ``max_sessions_per_principal`` left at its default (``default_share``) with a smaller
    ``max_sessions`` is that ``max_sessions`` (a share cannot exceed the whole); set above
    it, it is refused.
    """
    for name, most in _AT_MOST.items():
        if (value := getattr(config, name)) > most:
            return name, f"{name} must be at most {most:g}, not {value:g}"
    share, whole = config.max_sessions_per_principal, config.max_sessions
    if share > whole and share != default_share:
        name = "max_sessions_per_principal"
        return name, f"{name} must be at most max_sessions ({whole}), not {share}"
    return None
