"""Room templates of the ``chamber`` engine (suite ``chambre-chrono-v0``): time and sequence.

Five rooms; each chains three to five of submit_order, submit_sequence, submit_time,
submit_number and submit_bolt, and ends with a bolt. Plain data: theme words, objects, which
object each lock's clues may sit on, and which lock unseals which object. No logic here:
generation lives in `generate` and the lock modules.
"""

from __future__ import annotations

from agora.toolsets.chamber.lock import LockSpec
from agora.toolsets.chamber.template import LockSlot, ObjectSpec, Template

_CITIES = ("oslo", "lima", "cairo", "quito", "perth", "dakar", "hanoi", "riga", "sofia", "tunis")
_TRAINS = ("comet", "falcon", "heron", "mistral", "orion", "zephyr", "meteor", "condor")
_RINGERS = ("agnes", "bertil", "clara", "dmitri", "elsa", "farid", "greta", "hugo", "ines")
_STARS = ("vega", "altair", "deneb", "rigel", "sirius", "spica", "antares", "capella", "mira")
_COURIERS = ("anton", "bea", "cyril", "dora", "emil", "fenna", "gus", "hilde")

CLOCKMAKER = Template(
    id="clockmaker",
    title="The Clockmaker's Vault",
    intro=(
        "Brass gears line the walls of a clockmaker's back room. The vault in the far wall "
        "answers only to the right order, the right time and the right setting of its bolt."
    ),
    objects=(
        ObjectSpec(
            "workbench",
            "the workbench",
            "A cluttered workbench under a green lamp.",
            "Among springs and files lies a page of the clockmaker's notes.",
        ),
        ObjectSpec(
            "wall_clocks",
            "the wall of clocks",
            "City clocks on the east wall, all stopped.",
            "A card is pinned beneath the row of stopped clocks.",
        ),
        ObjectSpec(
            "journal",
            "the journal",
            "A leather journal on a stool.",
            "The journal is open at the last entry, written in a hurried hand.",
        ),
        ObjectSpec(
            "drawer",
            "the drawer",
            "A narrow drawer under the workbench.",
            "Inside the drawer lies a folded slip of paper.",
            opens_with="submit_order",
        ),
        ObjectSpec(
            "calendar",
            "the calendar",
            "A wall calendar with notes in the margins.",
            "The margins of the calendar are crowded with small writing.",
        ),
        ObjectSpec(
            "vault_door",
            "the vault door",
            "The vault door and its bolt dial.",
            "Scratches around the bolt dial record someone's trials.",
            opens_with="submit_time",
        ),
    ),
    locks=(
        LockSlot(
            LockSpec("submit_order", "order", "the chime order", _CITIES, 6),
            ("wall_clocks", "workbench", "journal", "calendar"),
        ),
        LockSlot(
            LockSpec(
                "submit_time",
                "time_chain",
                "the vault opening time",
                noun="hall clock",
                events=("lamplighting", "delivery", "inspection", "closing"),
            ),
            ("journal", "drawer", "calendar", "workbench"),
        ),
        LockSlot(
            LockSpec("submit_number", "number", "the ledger number"),
            ("calendar", "drawer", "workbench"),
            optional=True,
        ),
        LockSlot(
            LockSpec("submit_bolt", "dial", "the bolt dial setting"),
            ("vault_door", "drawer", "calendar", "workbench"),
        ),
    ),
)

SIGNAL_BOX = Template(
    id="signal_box",
    title="The Night Signal Box",
    intro=(
        "A signal box above a dark junction. Levers stand in a row; the door below is "
        "bolted, and the signalman's records are all that is left to go on."
    ),
    objects=(
        ObjectSpec(
            "logbook",
            "the logbook",
            "The signalman's logbook on the desk.",
            "The last page of the logbook is half filled.",
        ),
        ObjectSpec(
            "lamp_rack",
            "the lamp rack",
            "A rack of signal lamps by the window.",
            "A tag tied to the lamp rack carries a few lines.",
        ),
        ObjectSpec(
            "telegraph",
            "the telegraph",
            "A telegraph set with a strip of tape.",
            "The tape spooling from the telegraph reads, in plain words:",
        ),
        ObjectSpec(
            "timetable",
            "the timetable",
            "A timetable framed on the wall.",
            "Pencil notes cover the timetable's glass.",
        ),
        ObjectSpec(
            "wall_map",
            "the wall map",
            "A map of the line, pinned up crooked.",
            "Someone has written along the edge of the map.",
        ),
        ObjectSpec(
            "lever_frame",
            "the lever frame",
            "The row of levers and the lever lock.",
            "A brass plate on the lever frame is engraved with notes.",
            opens_with="submit_time",
        ),
    ),
    locks=(
        LockSlot(
            LockSpec(
                "submit_sequence",
                "sequence",
                "the lamp sequence",
                size=5,
                slots=("red", "green", "amber", "white"),
            ),
            ("lamp_rack", "logbook", "telegraph", "wall_map"),
        ),
        LockSlot(
            LockSpec("submit_time", "time_window", "the departure time"),
            ("timetable", "logbook", "telegraph", "wall_map"),
        ),
        LockSlot(
            LockSpec("submit_order", "order", "the train order", _TRAINS, 5),
            ("timetable", "wall_map", "lever_frame", "logbook"),
            optional=True,
        ),
        LockSlot(
            LockSpec("submit_bolt", "dial", "the lever lock setting"),
            ("lever_frame", "logbook", "telegraph", "timetable"),
        ),
    ),
)

BELL_TOWER = Template(
    id="bell_tower",
    title="The Bell Tower",
    intro=(
        "The ringing chamber of an old tower. Ropes hang through the ceiling; a trapdoor "
        "above is bolted, and the ringers kept careful notes."
    ),
    objects=(
        ObjectSpec(
            "ropes",
            "the bell ropes",
            "Bell ropes with worn woollen grips.",
            "Labels are stitched onto the grips of the ropes.",
        ),
        ObjectSpec(
            "peal_board",
            "the peal board",
            "A painted peal board on the wall.",
            "The peal board records more than past peals.",
        ),
        ObjectSpec(
            "chest",
            "the ringers' chest",
            "A wooden chest under the window.",
            "Inside the chest is a bundle of notes.",
            opens_with="submit_sequence",
        ),
        ObjectSpec(
            "tower_clock",
            "the tower clock works",
            "The tower clock's works behind glass.",
            "A card is wedged behind the glass of the clock works.",
        ),
        ObjectSpec(
            "register",
            "the register",
            "The tower register on a lectern.",
            "The register's latest page is filled in.",
        ),
        ObjectSpec(
            "trapdoor",
            "the trapdoor",
            "A trapdoor in the ceiling, bolted.",
            "Around the bolt someone has scratched their attempts.",
            opens_with="submit_order",
        ),
    ),
    locks=(
        LockSlot(
            LockSpec(
                "submit_sequence",
                "sequence",
                "the peal sequence",
                size=5,
                slots=("treble", "tenor", "bass", "alto"),
            ),
            ("ropes", "peal_board", "register"),
        ),
        LockSlot(
            LockSpec("submit_order", "order", "the ringers' order", _RINGERS, 6),
            ("chest", "register", "ropes", "peal_board"),
        ),
        LockSlot(
            LockSpec(
                "submit_time",
                "time_chain",
                "the belfry lock opening time",
                noun="tower clock",
                events=("matins", "market", "procession", "curfew"),
            ),
            ("tower_clock", "chest", "register"),
            optional=True,
        ),
        LockSlot(
            LockSpec("submit_number", "number", "the chest number"),
            ("register", "peal_board", "trapdoor", "chest"),
            optional=True,
        ),
        LockSlot(
            LockSpec("submit_bolt", "dial", "the trapdoor bolt setting"),
            ("trapdoor", "chest", "tower_clock", "register"),
        ),
    ),
)

OBSERVATORY = Template(
    id="observatory",
    title="The Astronomer's Study",
    intro=(
        "A round study under a closed dome. Star charts cover every surface, and the dome's "
        "bolt will not turn until the astronomer's puzzles are answered."
    ),
    objects=(
        ObjectSpec(
            "star_chart",
            "the star chart",
            "A large star chart spread on the table.",
            "Notes run along the border of the star chart.",
        ),
        ObjectSpec(
            "catalogue",
            "the catalogue",
            "A star catalogue with a cracked spine.",
            "A slip marks a page of the catalogue.",
        ),
        ObjectSpec(
            "telescope",
            "the telescope",
            "A brass telescope aimed at the shutter.",
            "A label is glued to the barrel of the telescope.",
        ),
        ObjectSpec(
            "almanac",
            "the almanac",
            "An almanac on the windowsill.",
            "The almanac has a page of handwritten notes.",
            opens_with="submit_number",
        ),
        ObjectSpec(
            "orrery",
            "the orrery",
            "A clockwork orrery, wound down.",
            "The orrery's base is engraved.",
        ),
        ObjectSpec(
            "dome_wheel",
            "the dome wheel",
            "The wheel that turns the dome, bolted fast.",
            "Chalk marks on the dome wheel record someone's trials.",
            opens_with="submit_order",
        ),
    ),
    locks=(
        LockSlot(
            LockSpec("submit_number", "number", "the catalogue number"),
            ("catalogue", "star_chart", "telescope"),
        ),
        LockSlot(
            LockSpec("submit_order", "order", "the transit order", _STARS, 6),
            ("almanac", "star_chart", "orrery", "telescope"),
        ),
        LockSlot(
            LockSpec("submit_time", "time_window", "the eclipse time"),
            ("almanac", "orrery", "catalogue", "dome_wheel"),
        ),
        LockSlot(
            LockSpec(
                "submit_sequence",
                "sequence",
                "the phase sequence",
                size=5,
                slots=("new", "crescent", "half", "full"),
            ),
            ("orrery", "telescope", "dome_wheel"),
            optional=True,
        ),
        LockSlot(
            LockSpec("submit_bolt", "dial", "the dome bolt setting"),
            ("dome_wheel", "almanac", "orrery", "star_chart"),
        ),
    ),
)

POST_OFFICE = Template(
    id="post_office",
    title="The Night Post Office",
    intro=(
        "A sorting room after closing time. The strongroom behind the counter holds the "
        "night's registered mail, and its locks follow the clerks' own rules."
    ),
    objects=(
        ObjectSpec(
            "counter",
            "the counter",
            "The long counter with a brass bell.",
            "A note is tucked under the counter bell.",
        ),
        ObjectSpec(
            "sorting_case",
            "the sorting case",
            "A sorting case of pigeonholes.",
            "A card is stuck in one of the pigeonholes.",
        ),
        ObjectSpec(
            "day_book",
            "the day book",
            "The clerk's day book.",
            "The day book's final entries are in two inks.",
        ),
        ObjectSpec(
            "franking",
            "the franking machine",
            "A franking machine, still warm.",
            "The franking machine's tape has words on it.",
        ),
        ObjectSpec(
            "postbag",
            "the postbag",
            "A postbag sealed with wax.",
            "The postbag holds a single letter.",
            opens_with="submit_time",
        ),
        ObjectSpec(
            "strongroom",
            "the strongroom door",
            "The strongroom door and its dial.",
            "Pencil marks beside the dial record earlier tries.",
            opens_with="submit_order",
        ),
    ),
    locks=(
        LockSlot(
            LockSpec(
                "submit_time",
                "time_chain",
                "the postbag opening time",
                noun="wall clock",
                events=("arrival", "delivery", "sorting", "collection"),
            ),
            ("counter", "day_book", "franking"),
        ),
        LockSlot(
            LockSpec("submit_order", "order", "the courier order", _COURIERS, 5),
            ("postbag", "sorting_case", "day_book", "counter"),
        ),
        LockSlot(
            LockSpec(
                "submit_sequence",
                "sequence",
                "the stamp sequence",
                size=5,
                slots=("penny", "twopence", "florin", "crown"),
            ),
            ("franking", "sorting_case", "postbag"),
            optional=True,
        ),
        LockSlot(
            LockSpec("submit_number", "number", "the registry number"),
            ("strongroom", "franking", "postbag", "counter"),
            optional=True,
        ),
        LockSlot(
            LockSpec("submit_bolt", "dial", "the strongroom dial setting"),
            ("strongroom", "postbag", "day_book", "sorting_case"),
        ),
    ),
)

CHRONO: tuple[Template, ...] = (CLOCKMAKER, SIGNAL_BOX, BELL_TOWER, OBSERVATORY, POST_OFFICE)
