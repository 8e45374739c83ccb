"""The open-loop phase of `router_runs`: mutations sent on a fixed schedule (bench-only).

``rate`` mutations/s are offered in total, spread evenly over the agents: agent ``n``
starts at ``n / rate`` s, then sends one mutation every ``runs / rate`` s, working
``rounds`` fresh workflow runs. Each mutation's latency is measured from its *scheduled*
send time, so a late reply that delays the agent's next send counts against that send too
(no coordinated omission); the service time (from the actual send) is kept beside it, and
so is the client's own send lag (how late an agent woke for a send it was ready for: when
that grows, the load generator, not the server, is the bottleneck). With the server under
``probed_serve`` (``--stalls``), `open_loop` matches the slowest mutations with the
server's stalls (`stalls.attribute`).

The agents' schedules are in step: every agent sends the k-th mutation of its rounds within
the same interval, so all the plans of a round arrive within one interval (``runs`` plans
in ``runs / rate`` s: the whole offered rate is plans then), then all its first events, and
so on. The plans' windows are the heaviest (a plan writes more than an event or a gate).
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio
from measure import percentile
from router_flow import Agent, Phase, plan, timed, work
from stalls import ClientCollections, attribute

if TYPE_CHECKING:
    from pathlib import Path


@dataclass
class OpenLoop:
    """The open-loop phase: a fixed schedule of sends, and what each kind of call took."""

    rate: float
    interval: float
    rounds: int
    plans: list[float] = field(default_factory=list)
    steps: list[float] = field(default_factory=list)
    service: list[float] = field(default_factory=list)
    plan_service: list[float] = field(default_factory=list)
    reads: list[float] = field(default_factory=list)
    #: How late the client woke for each send it was ready for (its own scheduling lag).
    lags: list[float] = field(default_factory=list)
    #: Each mutation's (scheduled send, reply) on ``time.perf_counter`` and its tool, with
    #: ``--stalls``: to match the slowest with the server's stalls.
    spans: list[tuple[float, float, str]] = field(default_factory=list)
    stalls: bool = False

    def report(self, phase: Phase) -> str:
        every = self.plans + self.steps
        ms = {
            name: " / ".join(f"{percentile(xs, q) * 1000:.1f}" for q in (0.5, 0.99, 1.0))
            for name, xs in (
                ("all", every),
                ("plans", self.plans),
                ("steps", self.steps),
                ("service", self.service),
                ("plan service", self.plan_service),
                ("reads", self.reads),
                ("lags", self.lags),
            )
        }
        return (
            f"open loop: {self.rate:,.0f} mutations/s offered ({self.interval * 1000:.0f} ms "
            f"between one run's mutations, {self.rounds} workflow runs per agent); "
            f"{phase.calls} mutations in {phase.seconds:.2f} s = "
            f"{phase.calls / phase.seconds:,.0f}/s achieved; latency from the scheduled send "
            f"p50 / p99 / max ms: all {ms['all']}, plans {ms['plans']}, events + gates "
            f"{ms['steps']}; service time (from the actual send) plans {ms['plan service']}, "
            f"events + gates {ms['service']}; "
            f"get_next_work reads {ms['reads']}; client send lag {ms['lags']}\n"
            f"open loop: {phase.cpu.per(phase.calls, 'mutation, reads included')}"
        )


async def paced(agent: Agent, phase: Phase, loop: OpenLoop, start: float) -> None:
    """Work ``loop.rounds`` workflow runs, each mutation sent at its scheduled time."""
    schedule = (start + k * loop.interval for k in range(1 << 30))

    async def send(tool: str, args: dict[str, Any], samples: list[float]) -> dict[str, Any]:
        due = next(schedule)
        ready = trio.current_time()
        await trio.sleep_until(due)
        # The client's own lag: how late this task woke for a send it was ready for in time
        # (a late reply that delays the send is counted in the latency, not here).
        loop.lags.append(max(0.0, trio.current_time() - max(due, ready)))
        service = loop.plan_service if tool == "plan_work" else loop.service
        body = await agent.call(tool, args, samples, due, service)
        if loop.stalls:
            end = time.perf_counter()
            loop.spans.append((end - samples[-1], end, tool))
        phase.calls += 1
        return body

    for r in range(loop.rounds):
        await plan(agent, send, loop.plans, f"open-plan-{r}", "op")
        await work(agent, send, loop.steps, loop.reads, "o")


async def open_loop(
    server: Any,
    agents: list[Agent],
    phase: Phase,
    loop: OpenLoop,
    mine: ClientCollections,
    probe: Path | None,
) -> str:
    """Run the open-loop phase; with ``probe`` (``--stalls``), return the report of the
    stalls its slowest mutations went through (`stalls.attribute`), else ''."""
    if probe is not None:
        await server.probe()  # only the open loop's stalls from here
        gc.callbacks.append(mine)
    t0 = trio.current_time() + 0.1
    await timed(phase, server, agents,
                lambda a: paced(a, phase, loop, t0 + a.n / loop.rate))  # fmt: skip
    if probe is None:
        return ""
    gc.callbacks.remove(mine)
    return attribute(loop.spans, (await server.probe())[0], mine)
