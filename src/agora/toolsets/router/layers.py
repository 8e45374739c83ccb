"""Gathering a plan's Profile layers: authorized roots, then the files, off the Trio thread.

Authorized roots are the operator's ``[options.router] workspace_roots`` plus, when the MCP
client declared the ``roots`` capability, the ``file://`` roots it lists (asked with
``roots/list`` and a short timeout; a client that fails to answer authorizes nothing). Client
roots count only as ``[options.router] client_roots`` allows: by default (``local``) from a
client that started the server or runs inside it (stdio, in-process), whose files are the
server's; a WebSocket or HTTP client may be anyone who reaches the port, and its roots name
files on its own machine, not a grant to read the server's (``any`` trusts them too, for a
single-user server; ``none`` never asks). ``agora stdio --connect`` is a WebSocket client. A
workspace root refused while no client root was asked gets a ``client-roots-unused`` warning
saying why and what to do. The
personal Profile is the operator's ``[options.router] personal_profile`` file. Reading and
validation never fail a plan: problems become profile warnings.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

import trio

from agora.errors import AgoraError
from agora.logsafe import loggable
from agora.toolsets.router import profiles, workspace
from agora.toolsets.router.memory import MEMORY
from agora.toolsets.router.memory_commands import Managed
from agora.toolsets.router.ownership import memory_key

if TYPE_CHECKING:
    from agora.toolsets.base import ToolCall

log = logging.getLogger(__name__)

#: Seconds a client gets to answer roots/list.
ROOTS_TIMEOUT: Final = 2.0
#: ``[options.router] client_roots``: whose MCP roots authorize a workspace, by policy.
CLIENT_ROOTS: Final = ("local", "any", "none")


async def client_roots(call: ToolCall) -> list[str]:
    """The local paths of the roots the MCP client declares (empty if it declares none, or
    if the ``client_roots`` policy does not trust this client's)."""
    return (await roots_and_why(call))[0]


async def roots_and_why(call: ToolCall) -> tuple[list[str], str | None]:
    """`client_roots`, and when none were asked, why not, with what the user can do.

    At 2026-07-28 ``roots/list`` is asked in the call's answer (``input_required``) and the
    client's answer comes with the call sent again (`agora.server.channel.ClientChannel`):
    this raises `agora.errors.InputRequired` on the first round, before anything is written.
    """
    policy = call.runtime.options("router").get("client_roots", "local")
    if policy == "none":
        return [], 'client_roots = "none"; ' + _ADD
    if policy == "local" and not call.local_client:
        return [], _REMOTE
    client = call.client
    if client is None or "roots" not in (client.capabilities or {}):
        return [], "the MCP client declared no roots capability; " + _ADD
    try:
        with trio.fail_after(ROOTS_TIMEOUT):
            answer: Any = await client.request("roots/list", {})
    except (trio.TooSlowError, AgoraError) as exc:
        log.info("roots/list failed: %s", loggable(exc))  # the client's own text
        return [], "the MCP client did not answer roots/list; " + _ADD
    roots = answer.get("roots") if isinstance(answer, dict) else None
    if not isinstance(roots, list):  # (a 2026-07-28 answer was checked: -32602, not here)
        roots = []
    uris = [r["uri"] for r in roots if isinstance(r, dict) and isinstance(r.get("uri"), str)]
    return workspace.file_roots(uris), None


_ADD = "add the workspace to [options.router] workspace_roots"
#: Why a network client's roots are not asked under the default policy: its roots name files
#: on its own machine. ``agora stdio --connect`` is such a client: it reaches the server over
#: WebSocket, whoever started it.
_REMOTE = (
    "the client reaches the server over the network (HTTP, WebSocket, agora stdio --connect) and"
    ' client_roots = "local" asks only stdio and in-process clients; '
    + _ADD
    + ', or set client_roots = "any" on a single-user server'
)
#: The warning that says why no client root authorized a refused workspace root.
CLIENT_ROOTS_UNUSED = "client-roots-unused"


def read_layers(workspace_root: str | None, authorized: list[str], personal: str | None
                ) -> tuple[list[profiles.Profile], list[str]]:  # fmt: skip
    """The valid manual Profiles (workspace file, personal), highest first, and warnings."""
    found: list[profiles.Profile] = []
    warnings: list[str] = []
    sources: list[tuple[profiles.Layer, tuple[str | None, list[str]]]] = []
    if workspace_root is not None:
        sources.append(("workspace", workspace.workspace_profile(workspace_root, authorized)))
    sources.append(("personal", workspace.personal_profile(personal)))
    for layer, (text, problems) in sources:
        warnings.extend(problems)
        if text is not None:
            profile, more = profiles.parse_profile(layer, text)
            warnings.extend(more)
            if profile is not None:
                found.append(profile)
                warnings.extend(profiles.advisories(profile))
    return found, warnings


async def plan_layers(call: ToolCall) -> tuple[list[profiles.Profile], list[str], str | None]:
    """The valid Profiles for this ``plan_work`` call, highest layer first, warnings, and,
    when its authorized workspace root holds no Profile file, the nearest directory above it
    (under the authorized root) that holds one, if any (`workspace.enclosing_profile`)."""
    if call.args.get("explicit_skill_ids"):
        return [], [], None  # an Explicit Skill Lock wins: no Profile is read
    options = call.runtime.options("router")
    workspace_root = (call.args.get("routing_context") or {}).get("workspace_root")
    authorized = [str(r) for r in options.get("workspace_roots", [])]
    why = None
    if workspace_root is not None:
        asked, why = await roots_and_why(call)
        authorized += asked
    personal = options.get("personal_profile")
    found: list[profiles.Profile] = []
    warnings: list[str] = []
    if workspace_root is not None or personal:  # else nothing to read: no worker thread
        found, warnings = await trio.to_thread.run_sync(
            read_layers, workspace_root, authorized, personal
        )
    _log_broken(workspace_root, personal, warnings)
    if why is not None and "workspace-root-not-authorized" in warnings:
        warnings.append(f"{CLIENT_ROOTS_UNUSED}: {why}")
    enclosing = None
    read = any(p.layer == "workspace" for p in found) or any(
        w.startswith("workspace-") for w in warnings
    )
    if workspace_root is not None and not read:  # no file there: is one above it?
        enclosing = await trio.to_thread.run_sync(
            workspace.enclosing_profile, workspace_root, authorized
        )
    if options.get("memory_policy"):  # Memory may have written managed Profiles
        found, more = await _with_managed(call, found, workspace_root, authorized)
        warnings += more
    return found, warnings, enclosing


#: The Profile-file problems last logged, by file (the personal path, or the workspace root):
#: a plan logs a file's problem once, not every time, and again once it changes or returns
#: after the file read cleanly. Bounded: the oldest entry goes first.
_LOGGED: dict[str, tuple[str, ...]] = {}
_LOGGED_MAX: Final = 256


def _log_broken(workspace_root: str | None, personal: str | None, warnings: list[str]) -> None:
    """Log what is wrong with a Profile file (the same words the plan's warnings give the
    model), for whoever reads the server's log: the operator's personal Profile at WARNING
    (a file the operator configured), a workspace's at INFO (its author's model is told)."""
    files: list[tuple[str, str, str, int]] = []  # (key, what is said, prefix, level)
    if personal:
        where = f"personal Profile {workspace.tried(personal)}"
        files.append((f"personal {personal}", where, "personal-profile-", logging.WARNING))
    if workspace_root is not None:
        where = f"workspace Profile under {workspace_root}"
        files.append((f"workspace {workspace_root}", where, "workspace-profile-", logging.INFO))
    for key, where, prefix, level in files:
        problems = tuple(w for w in warnings if w.startswith(prefix))
        if not problems:
            _LOGGED.pop(key, None)
            continue
        if _LOGGED.get(key) == problems:
            continue
        _LOGGED.pop(key, None)
        if len(_LOGGED) >= _LOGGED_MAX:
            del _LOGGED[next(iter(_LOGGED))]
        _LOGGED[key] = problems
        log.log(level, "router: the %s: %s", loggable(where), loggable("; ".join(problems), 2000))


async def _with_managed(
    call: ToolCall, found: list[profiles.Profile], root: str | None, authorized: list[str]
) -> tuple[list[profiles.Profile], list[str]]:
    # Precedence: workspace file > managed workspace > personal file > managed personal.
    identity = "personal"
    if root is not None:
        identity = await trio.to_thread.run_sync(workspace.identity_of, root, authorized)
    wanted: list[tuple[profiles.Layer, tuple[str, str]]] = []
    if identity not in ("personal", "unverified"):
        wanted.append(("managed-workspace", ("managed-workspace-local", identity)))
    wanted.append(("managed-personal", ("managed-personal", "personal")))
    latest, _rejections = await call.runtime.call(
        MEMORY, memory_key(call.principal), Managed(tuple(key for _, key in wanted))
    )
    warnings: list[str] = []
    by_layer: dict[str, profiles.Profile] = {p.layer: p for p in found}
    for layer, key in wanted:
        if key in latest:
            profile, problems = profiles.parse_profile(layer, latest[key][3])
            warnings += problems
            if profile is not None:
                by_layer[layer] = profile
    order = ("workspace", "managed-workspace", "personal", "managed-personal")
    return [by_layer[name] for name in order if name in by_layer], warnings


#: The warnings that refuse a workspace root (`workspace.authorized_root`).
ROOT_REFUSALS: Final = (
    "workspace-root-not-absolute",
    "workspace-root-not-authorized",
    "workspace-root-missing",
)


async def memory_root_refused(call: ToolCall, warnings: list[str]) -> str | None:
    """Why a ``plan_work`` call's workspace root is refused, so that Memory could never
    remember its run (None if there is no root, it is authorized, or Memory is not
    configured): the refusal `plan_layers` warned of, or, under an Explicit Skill Lock
    (which reads no Profile, so warned of nothing), the same check made now."""
    options = call.runtime.options("router")
    root = (call.args.get("routing_context") or {}).get("workspace_root")
    if root is None or not options.get("memory_policy"):
        return None
    if not call.args.get("explicit_skill_ids"):
        return next((w for w in warnings if w in ROOT_REFUSALS), None)
    authorized = [str(r) for r in options.get("workspace_roots", [])] + await client_roots(call)
    refused: str | None = (
        await trio.to_thread.run_sync(workspace.authorized_root, root, authorized)
    )[2]
    return refused
