"""A random agent: only allowed ops and well-formed values, no reasoning at all.

It reads the lock formats from ``look`` (as any agent could) and then spends its actions on
random looks, inspections, hints and submissions of random values of the right format for
the current lock. The chamber is worth an agent's time only if this agent almost never wins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from solver import Act, Format, parse_format, parse_look

if TYPE_CHECKING:
    import random


def random_value(fmt: Format, rng: random.Random) -> str | list[str]:
    """A uniformly random well-formed value of ``fmt``."""
    match fmt.kind:
        case "order":
            return rng.sample(fmt.names, len(fmt.names))
        case "placement":
            names = rng.sample(fmt.names, len(fmt.names))
            return [f"{slot}={name}" for slot, name in zip(fmt.slots, names, strict=True)]
        case "sequence":
            return [rng.choice(fmt.names) for _ in range(fmt.length)]
        case "bins":
            return [f"{name}={rng.choice(fmt.slots)}" for name in fmt.names]
        case "time":
            return f"{rng.randrange(24):02d}:{rng.randrange(60):02d}"
        case "number":
            return str(rng.randint(fmt.low, fmt.high))
        case "digits":
            return "".join(str(rng.randint(fmt.low, fmt.high)) for _ in range(fmt.length))
    raise ValueError(fmt.kind)


def play(act: Act, rng: random.Random) -> dict[str, Any]:
    """Play until the attempt is terminal; return the last reply."""
    reply = act("look")
    objects, locks = parse_look(reply["observation"])
    formats = [parse_format(lock.fmt) for lock in locks]
    current = 0
    while not reply["terminal"]:
        roll = rng.random()
        if roll < 0.05:
            reply = act("look")
        elif roll < 0.10:
            reply = act("inspect", object=rng.choice(objects))
        elif roll < 0.12:
            reply = act("hint")
        else:
            reply = act(locks[current].op, value=random_value(formats[current], rng))
            if reply.get("accepted"):
                current += 1
    return reply
