"""The ``mixed`` workload: all four toolsets at once over WebSocket, with an acknowledgement log.

``sessions`` lean WebSocket sessions (`wsload.LeanClient`) on ``/mcp`` of one server, each an
actor with one job, in proportions that give about 60% reads and 40% durable writes:

- writers (40%): debate posters (``debate_post_with_recipients`` to a partner role), router
  agents (``plan_work``, then ``get_next_work`` / ``record_work_event`` / ``evaluate_gate``
  through three phases, then a new run), chamber agents (``enter_open_challenge``, twelve
  ``chamber_action`` look/inspect/hint, ``seal_attempt``, then a new attempt);
- readers (50%): ``debate_read``, ``get_router_status``, chess ``get_board``, chamber ``look``;
- parked (10%): ``debate_signal_wait`` long-polls (5 s) on the posters' topics, advancing
  past what they get.

With `Mix.topic_messages` set, a topic that has that many messages is replaced by a fresh one
(the poster that reaches the count opens it; readers and parked sessions follow on their next
call), so the live topics' transcripts stay bounded, as when debates end.

Every acknowledged write is appended to `Acks` (and, with a path, to a JSON-lines file
flushed per line) before the next call: the crash test compares it with the database after
a SIGKILL. Actors keep their entities between `run` calls, so after a restart they resume
where their last acknowledged write left them. A connection that breaks ends that actor's
round quietly (the server may have been killed on purpose), and so does a call refused
because the server is shutting down (-32011: retrying would only spin); a refusal is counted
by code (its latency goes under ``refused``; `mix_stats.Stats` counts them apart), and one
that says ``retry_after_seconds`` (the chamber's entries per principal and minute) is waited
out as it asks. `mix_stats.Stats.lost` says when a run's figures describe no working server.

Imported by ``python -m bench`` (workload ``mixed``), ``bench/soak.py`` and the crash test
(``tests/faults``); never by agora.
"""

from __future__ import annotations

import json
import random
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio
from mix_stats import Stats
from serve import principal_config
from wsload import RpcError, lean_connect

from agora.mcp.jsonrpc import SHUTTING_DOWN
from agora.toolsets.router.progress import evidence_digest

if TYPE_CHECKING:
    from pathlib import Path

    from wsload import LeanClient

TOKEN = "mixed-bench-token"
PRINCIPAL = "mixed"
LANE = '{"priority_lane": "P3", "priority_reason": "mixed load"}'
OBJECTIVE = "1. design the cache\n2. implement it\n3. test it"
CHECKS = {"plan": "plan-ready", "implement": "implementation-done", "verify": "verification-passed"}
ENTRY = {
    "product": "mixed-agent",
    "host": "bench",
    "provider_claim": "agora-bench",
    "model_claim": "scripted",
}
BROKEN = (ConnectionError, OSError, trio.BrokenResourceError, trio.ClosedResourceError)
CONNECT_AT_ONCE = 64


def write_config(directory: Path) -> Path:
    """An agora.toml with the one principal every actor uses."""
    return principal_config(directory, TOKEN, PRINCIPAL)


class Refused(Exception):
    """A tool answered ``isError``."""

    def __init__(self, tool: str, body: Any) -> None:
        code = (body.get("code") or body.get("error")) if isinstance(body, dict) else None
        super().__init__(f"{tool}: {code}")
        self.code = f"{tool}:{code}"
        self.body = body


@dataclass
class Acks:
    """Acknowledged writes, in order; each also a line of ``path`` when given."""

    path: Path | None = None
    records: list[dict[str, Any]] = field(default_factory=list)
    _watchers: list[tuple[int, trio.Event]] = field(default_factory=list)

    def reached(self, count: int) -> trio.Event:
        """An event set once ``count`` writes have been acknowledged."""
        event = trio.Event()
        self._watchers.append((count, event))
        self._wake()
        return event

    def _wake(self) -> None:
        for count, event in self._watchers:
            if len(self.records) >= count:
                event.set()
        self._watchers = [(c, e) for c, e in self._watchers if not e.is_set()]

    def add(self, kind: str, **values: Any) -> None:
        record = {"kind": kind, **values}
        self.records.append(record)
        self._wake()
        if self.path is not None:
            with self.path.open("a") as out:
                out.write(json.dumps(record, sort_keys=True) + "\n")


@dataclass
class Actor:
    """One session's job and what it has built so far (kept across rounds)."""

    n: int
    role: str
    state: dict[str, Any] = field(default_factory=dict)


@dataclass
class Mix:
    """Everything one mixed load shares: actors, acks, stats, the shared topic pairs."""

    url: str
    actors: list[Actor]
    acks: Acks
    stats: Stats = field(default_factory=Stats)
    topics: list[dict[str, Any]] = field(default_factory=list)
    #: Several servers (a multi-node set-up): actor n connects to ``urls[n % len(urls)]``.
    urls: list[str] = field(default_factory=list)
    #: Messages after which a topic is replaced by a fresh one (0: never). Real debates
    #: end; a topic that lives for the whole run holds its whole transcript's index in the
    #: server's memory (see `bench/soak.py`), which is growth with data, not a leak.
    topic_messages: int = 0

    def url_of(self, actor: Actor) -> str:
        return self.urls[actor.n % len(self.urls)] if self.urls else self.url

    async def call(self, client: LeanClient, kind: str, tool: str, /, **args: Any) -> Any:
        start = time.perf_counter()
        result = await client.call_tool(tool, args)
        refused = bool(result.get("isError"))
        self.stats.sample("refused" if refused else kind, time.perf_counter() - start, tool)
        body = result.get("structuredContent")
        if refused:
            if body is None:  # a text refusal (a store failure, a busy entity): its words
                text = " ".join(c.get("text", "") for c in result.get("content", []))
                body = {"error": refusal_words(text)}
            raise Refused(tool, body)
        return body


#: An entity's id in a refusal's words (a topic's UUID, a run's or a handle's hex).
_ENTITY_ID = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b[0-9a-f]{16,}\b"
)


def refusal_words(text: str, most: int = 100) -> str:
    """A text refusal as a report's key: without its correlation id or the entity it named
    (so the refusals of one kind count together), cut at a word, not inside one."""
    words = _ENTITY_ID.sub("<id>", text.split(" (correlation id")[0])
    if len(words) <= most:
        return words
    return words[:most].rsplit(" ", 1)[0] + " ..."


def plan_actors(sessions: int, seed: int = 1) -> list[Actor]:
    """Roles for ``sessions`` actors: 40% writers, 50% readers, 10% parked."""
    writers = ["poster", "router", "chamber", "poster"]
    readers = ["read_debate", "read_router", "read_chess", "read_chamber", "read_debate"]
    roles = writers + readers + ["parked"]
    rng = random.Random(seed)
    out = [Actor(i, roles[i % len(roles)]) for i in range(sessions)]
    rng.shuffle(out)
    return out


async def setup_topics(mix: Mix, count: int) -> None:
    """``count`` active topics of two roles each (A posts to B; B parks on its inbox)."""
    async with lean_connect(mix.url, TOKEN) as client:
        for _ in range(count):
            mix.topics.append(await new_topic(mix, client))


async def new_topic(mix: Mix, client: LeanClient) -> dict[str, Any]:
    """A fresh ACTIVE topic of two roles, each held by a session of its own."""
    a = (await mix.call(client, "setup", "debate_session_open"))["session_id"]
    b = (await mix.call(client, "setup", "debate_session_open"))["session_id"]
    roster = [{"role": "ROLE_A", "session_id": a}, {"role": "ROLE_B", "session_id": b}]
    topic = await mix.call(
        client, "setup", "debate_init", title="mixed", created_by_role="ROLE_A",
        roles_json=json.dumps(roster), metadata_json=LANE,
    )  # fmt: skip
    tid = topic["topic_id"]
    await mix.call(client, "setup", "debate_state", topic_id=tid, role="ROLE_A", new_state="ACTIVE")
    return {"topic_id": tid, "a": a, "b": b, "posted": 0}


# -- the actors' steps -----------------------------------------------------------------------


async def poster(mix: Mix, client: LeanClient, actor: Actor) -> None:
    slot = actor.n % len(mix.topics)
    topic = mix.topics[slot]
    actor.state["posted"] = sent = actor.state.get("posted", 0) + 1
    body = f"mixed {actor.n} #{sent}"
    out = await mix.call(
        client, "write", "debate_post_with_recipients", topic_id=topic["topic_id"],
        role="ROLE_A", priority="M", kind="STATUS", body=body, addressed_to_csv="ROLE_B",
    )  # fmt: skip
    mix.acks.add("debate_message", msg_id=out["msg_id"], topic_id=topic["topic_id"], body=body)
    topic["posted"] += 1
    if mix.topic_messages and topic["posted"] >= mix.topic_messages and "next" not in topic:
        topic["next"] = True  # one poster replaces it; the others post on meanwhile
        mix.topics[slot] = await new_topic(mix, client)


def _context(actor: Actor) -> dict[str, str]:
    return {"session_id": f"mixed-{actor.n}", "actor": "bench", "runtime_policy_snapshot_id": "p"}


async def router(mix: Mix, client: LeanClient, actor: Actor) -> None:
    ctx = _context(actor)
    if not actor.state.get("run_id"):
        runs = actor.state["runs"] = actor.state.get("runs", 0) + 1
        out = await mix.call(
            client, "write", "plan_work", context=ctx, expected_state_version=0,
            idempotency_key=f"plan-{runs}", correlation_id=f"p{actor.n}", objective=OBJECTIVE,
            goal_binding_id=None, requested_work_mode=None, explicit_skill_ids=[],
            explicit_semantics=None,
        )  # fmt: skip
        actor.state.update(run_id=out["workflow_run_id"], version=1)
        mix.acks.add("router_run", run_id=out["workflow_run_id"], version=1)
        return
    run = {"workflow_run_id": actor.state["run_id"]}
    nxt = await mix.call(client, "read", "get_next_work", context=ctx, **run)
    if not nxt["work_item"]:
        actor.state["run_id"] = ""
        return
    phase = nxt["work_item"]["phase_id"]
    event = await mix.call(
        client, "write", "record_work_event", context=ctx, **run, phase_id=phase,
        observation={"check_id": CHECKS[phase], "outcome": "passed"},
        activation_receipt_ref=None, expected_state_version=actor.state["version"],
        idempotency_key=f"event-{phase}", correlation_id=f"e{actor.n}",
    )  # fmt: skip
    refs = event["event_ids"]
    gate = await mix.call(
        client, "write", "evaluate_gate", context=ctx, **run, phase_id=phase,
        evidence_refs=refs, expected_evidence_digest=evidence_digest(refs),
        expected_plan_revision=1, expected_state_version=event["resulting_state_version"],
        idempotency_key=f"gate-{phase}", correlation_id=f"g{actor.n}",
    )  # fmt: skip
    actor.state["version"] = gate["resulting_state_version"]
    mix.acks.add("router_gate", run_id=run["workflow_run_id"], phase=phase,
                 version=actor.state["version"])  # fmt: skip


async def chamber(mix: Mix, client: LeanClient, actor: Actor) -> None:
    handle = actor.state.get("handle")
    if not handle:
        attempts = actor.state["attempts"] = actor.state.get("attempts", 0) + 1
        out = await mix.call(
            client, "write", "enter_open_challenge", **ENTRY, suite="chambre-chrono-v0",
            seed=f"mixed-{actor.n}-{attempts}",
        )  # fmt: skip
        actor.state.update(handle=out["attempt_handle"], objects=out["objects"], index=0)
        return
    index = actor.state["index"]
    if index >= 12:
        out = await mix.call(
            client, "write", "seal_attempt", challenge_handle=handle, expected_action_index=index
        )
        actor.state["handle"] = ""
        mix.acks.add("chamber_card", card_id=out["card_id"], handle=handle)
        return
    objects = actor.state["objects"]
    op: dict[str, Any] = (
        {"op": "look"}
        if index % 4 == 0
        else {"op": "inspect", "object": objects[index % len(objects)]}
    )
    out = await mix.call(
        client, "write", "chamber_action", challenge_handle=handle, expected_action_index=index,
        **op,
    )  # fmt: skip
    actor.state["index"] = out["action_index"]
    mix.acks.add("chamber_action", handle=handle, action_index=out["action_index"])


async def reader(mix: Mix, client: LeanClient, actor: Actor) -> None:
    topic = mix.topics[actor.n % len(mix.topics)]
    match actor.role:
        case "read_debate":
            await mix.call(client, "read", "debate_read", topic_id=topic["topic_id"],
                           role="ROLE_A", limit=20)  # fmt: skip
        case "read_router":
            await mix.call(client, "read", "get_router_status", context=_context(actor),
                           goal_binding_id=None, workflow_run_id=None)  # fmt: skip
        case "read_chess":
            await mix.call(client, "read", "get_board")
        case _:
            await mix.call(client, "read", "debate_work_queue", limit=10)


async def parked(mix: Mix, client: LeanClient, actor: Actor) -> None:
    topic = mix.topics[actor.n % len(mix.topics)]
    got = await mix.call(
        client, "long-poll", "debate_signal_wait", topic_id=topic["topic_id"], role="ROLE_B",
        session_id=topic["b"], timeout_ms=5000, limit=100,
    )  # fmt: skip
    if got["pending"]:
        await mix.call(
            client, "write", "debate_signal_advance", topic_id=topic["topic_id"], role="ROLE_B",
            session_id=topic["b"], last_processed_msg_id=got["pending"][-1]["msg_id"],
        )  # fmt: skip


STEPS = {"poster": poster, "router": router, "chamber": chamber, "parked": parked}


async def act(mix: Mix, actor: Actor, until: float, limiter: trio.CapacityLimiter) -> None:
    """Run ``actor`` until ``until`` (perf_counter) or until its connection breaks."""
    step = STEPS.get(actor.role, reader)
    try:
        async with limiter:
            opened = lean_connect(mix.url_of(actor), TOKEN)
            client = await opened.__aenter__()
        try:
            while time.perf_counter() < until:
                try:
                    await step(mix, client, actor)
                except Refused as refused:
                    wait = (refused.body or {}).get("retry_after_seconds")
                    code = f"rate-limited {refused.code}" if wait else refused.code
                    mix.stats.refusals[code] += 1
                    mix.stats.last_refusal[code] = refused.body
                    if wait:  # a rate limit (chamber entries per principal): as told
                        await trio.sleep(min(float(wait), 5.0))
                    else:
                        actor.state["handle"] = actor.state["run_id"] = ""  # a fresh entity
                except RuntimeError as exc:  # a JSON-RPC error
                    mix.stats.refusals[f"rpc:{str(exc)[:60]}"] += 1
                    mix.stats.errors += 1
                    if isinstance(exc, RpcError) and exc.code == SHUTTING_DOWN:
                        mix.stats.shutting_down += 1
                        break  # the server is going away: every further call would be too
        finally:
            with trio.CancelScope(shield=True):
                await opened.__aexit__(None, None, None)
    except BROKEN:
        mix.stats.broken += 1


async def run(mix: Mix, seconds: float) -> None:
    """Every actor at once for ``seconds`` (each finishes the call it is in)."""
    until = time.perf_counter() + seconds
    limiter = trio.CapacityLimiter(CONNECT_AT_ONCE)
    async with trio.open_nursery() as nursery:
        for actor in mix.actors:
            nursery.start_soon(act, mix, actor, until, limiter)
