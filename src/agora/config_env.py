"""AGORA_* environment variables: the settings they set, and the ones agora does not know.

A setting ``name`` is read from ``AGORA_<NAME>`` (`agora.config.load_config`), its text
converted to the setting's type. A variable that names no setting is not refused, as an
unknown key of the config file is, but said in a warning with the closest setting's
variable: the file is agora's own, every key in it is meant for agora, while the
environment is shared with every other program, any of which may use an AGORA_* name of
its own (AGORA_APP_ID, say), so a variable agora does not know need not be a mistake, and
refusing it would stop the server for another program's setting. A misspelt one (AGORA_DB_PAHT) is
still seen at start, before the banner that shows the database actually used.
"""

from __future__ import annotations

import difflib
import logging
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

log = logging.getLogger("agora.config")

PREFIX = "AGORA_"
#: AGORA_* variables that are not settings, read by agora or by its test and CI scripts:
#: never warned about (the suite passes its own to the servers it starts).
#: tests/test_config_env.py checks that every AGORA_* name in the tree is here or a setting.
NOT_SETTINGS = frozenset(
    {
        "AGORA_TOKEN",  # the caller's bearer token: agora stdio, agora call
        "AGORA_INSTALL_ONLY",  # scripts/test.sh: install, then stop before pytest
        "AGORA_FUZZ_EXAMPLES",  # tests/fuzz: hypothesis example counts
        "AGORA_FUZZ_PROGRESS",
        "AGORA_CRASH_ROUNDS",  # tests/faults, tests/nodes: SIGKILL rounds
        "AGORA_CRASH_SESSIONS",
        "AGORA_CRASH_SEED",
        "AGORA_NODES_CRASH_ROUNDS",
        "AGORA_NODES_CRASH_SESSIONS",
        "AGORA_FAULT_STALLED",  # tests/faults: stalled clients
    }
)
#: The test suite's switches (AGORA_TEST_BACKEND, AGORA_TEST_PG, ...): never warned about.
TEST_PREFIX = "AGORA_TEST_"
#: Settings that are tables, which only the config file can write.
FILE_ONLY = {
    "principals": "[[principals]] tables",
    "options": "[options.<toolset>] tables",
}
#: How alike a variable must be to a setting's to be offered as what was meant (difflib's
#: ratio over the whole name: AGORA_DB_PAHT finds AGORA_DB, AGORA_APP_ID finds nothing).
NEAR = 0.75

#: The words an AGORA_* variable may use for a boolean setting.
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


def variable(setting: str) -> str:
    """The environment variable of ``setting``: ``AGORA_<NAME>``."""
    return f"{PREFIX}{setting.upper()}"


def from_environment(types: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings the AGORA_* variables set, converted towards ``types`` (setting name to
    its annotation), and the variable each came from; a warning for each AGORA_* variable
    that sets none of them (see the module's docstring)."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name, annotation in types.items():
        raw = os.environ.get(variable(name))
        if raw is None or name in FILE_ONLY:
            continue
        values[name] = _converted(raw, annotation)
        sources[name] = variable(name)
    warn_unknown(types)
    return values, sources


def warn_unknown(settings: Iterable[str]) -> None:
    """Log a warning for each AGORA_* variable of the environment that sets none of
    ``settings`` and is none of `NOT_SETTINGS`."""
    for problem in unknown_variables(settings, os.environ):
        log.warning("%s", problem)


def unknown_variables(settings: Iterable[str], environ: Mapping[str, str]) -> list[str]:
    """What to say of each AGORA_* variable of ``environ`` that agora does not read, in
    name order: ignored, and the setting it may have meant."""
    known = {variable(s): s for s in settings if s not in FILE_ONLY}
    said = []
    for name in sorted(environ):
        if not name.startswith(PREFIX) or name in known or name in NOT_SETTINGS:
            continue
        if name.startswith(TEST_PREFIX):
            continue
        table = FILE_ONLY.get(name.removeprefix(PREFIX).lower())
        if table is not None:
            said.append(f"{name} is ignored: {table} are set in the config file only")
            continue
        near = difflib.get_close_matches(name, list(known), n=1, cutoff=NEAR)
        hint = f"; did you mean {near[0]}?" if near else ""
        said.append(f"{name} is not an agora setting and is ignored{hint}")
    return said


def _converted(raw: str, annotation: Any) -> Any:
    """A variable's text towards its setting's type: a boolean's words, a comma-separated
    list; anything else as it is, for msgspec to convert (or refuse by name)."""
    if annotation is bool:
        word = raw.strip().lower()
        # Any other word is left as it is, for the conversion to refuse by name.
        return True if word in _TRUE else False if word in _FALSE else raw
    if "list" in str(annotation):
        return [item.strip() for item in raw.split(",") if item.strip()]
    return raw
