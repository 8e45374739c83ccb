"""Room templates of the ``atelier`` engine (suite ``chambre-atelier-v0``): workshops.

Five workshops; each chains three to five of submit_placement, submit_bins, submit_master,
submit_order and submit_bolt, and ends with a bolt. Plain data: theme words, objects, which
object each lock's clues may sit on, and which lock unseals which object. No logic here:
generation lives in `generate` and the lock modules.
"""

from __future__ import annotations

from agora.toolsets.chamber.lock import LockSpec
from agora.toolsets.chamber.template import LockSlot, ObjectSpec, Template

_TOOLS = ("awl", "file", "chisel", "mallet", "pliers", "rasp", "saw", "tongs", "gauge")
_DOORS = ("cellar", "attic", "gate", "office", "shed", "stable", "pantry", "vestry")
_STEPS = ("filing", "polishing", "oiling", "stamping", "tempering", "cutting", "fitting")
_POTS = ("jug", "bowl", "vase", "urn", "pitcher", "platter", "mug", "ewer", "tureen")
_GLAZES = ("celadon", "tenmoku", "shino", "raku", "oribe", "majolica", "salt", "slip")
_WARES = ("cup", "plate", "dish", "lid", "saucer", "tile", "bead", "spoon")
_INSTRUMENTS = ("lute", "viol", "harp", "cittern", "fiddle", "mandolin", "zither", "oud")
_WOODS = ("spruce", "maple", "ebony", "cedar", "walnut", "rosewood", "pear", "boxwood", "alder")
_PARTS = ("neck", "bridge", "soundboard", "ribs", "scroll", "nut", "saddle", "pegbox")
_YARNS = ("flax", "wool", "silk", "hemp", "jute", "cotton", "mohair", "alpaca", "ramie")
_MOTIFS = ("star", "rose", "wave", "knot", "leaf", "bird", "sun", "moon")
_WARPING = ("winding", "beaming", "threading", "sleying", "tying", "tensioning", "sizing")
_ROOMS = ("dyehouse", "loomroom", "storeroom", "counting", "drying", "spinning", "office")
_FORGING = ("heating", "drawing", "upsetting", "punching", "bending", "quenching", "grinding")
_IRONS = ("hook", "hinge", "latch", "nail", "chain", "bracket", "ring", "spike", "staple")
_SHEDS = ("coalhouse", "forge", "yard", "loft", "cart", "smokehouse", "tackroom")

LOCKSMITH = Template(
    id="locksmith",
    title="The Locksmith's Bench",
    intro=(
        "A locksmith's shop with the shutters down. Every door in the building was keyed to "
        "one master, and the strongbox on the bench opens only for someone who works it out."
    ),
    objects=(
        ObjectSpec(
            "tool_board",
            "the tool board",
            "A pegboard of outlines, its tools heaped below.",
            "A card hangs on the empty pegboard.",
        ),
        ObjectSpec(
            "order_book",
            "the order book",
            "The shop's order book.",
            "The order book lies open at a page of notes.",
        ),
        ObjectSpec(
            "key_rack",
            "the key rack",
            "A rack of labelled door keys.",
            "Tags hang from the keys on the rack.",
            opens_with="submit_placement",
        ),
        ObjectSpec(
            "pin_charts",
            "the pin charts",
            "A binder of cylinder pin charts.",
            "The binder holds the shop's charts for several doors.",
        ),
        ObjectSpec(
            "apron",
            "the apron",
            "A leather apron on a hook.",
            "In the apron pocket is a folded note.",
        ),
        ObjectSpec(
            "strongbox",
            "the strongbox",
            "A strongbox bolted to the bench.",
            "Scratches beside the strongbox bolt record earlier tries.",
            opens_with="submit_master",
        ),
    ),
    locks=(
        LockSlot(
            LockSpec("submit_placement", "placement", "the tool board layout", _TOOLS),
            ("tool_board", "order_book", "apron"),
        ),
        LockSlot(
            LockSpec(
                "submit_master", "master", "the master key depths", _DOORS, 3, noun="cylinder"
            ),
            ("pin_charts", "key_rack", "order_book", "apron"),
        ),
        LockSlot(
            LockSpec("submit_order", "order", "the finishing order", _STEPS, 5),
            ("order_book", "apron", "strongbox", "key_rack"),
            optional=True,
        ),
        LockSlot(
            LockSpec("submit_bolt", "dial", "the strongbox bolt setting"),
            ("strongbox", "key_rack", "pin_charts", "order_book"),
        ),
    ),
)

POTTERY = Template(
    id="pottery",
    title="The Potter's Yard",
    intro=(
        "A pottery yard at dusk, three kilns cooling in a row. The glaze shed is bolted, and "
        "the potter left the firing plans scattered about."
    ),
    objects=(
        ObjectSpec(
            "firing_book",
            "the firing book",
            "The firing book on a barrel.",
            "The firing book is open at tonight's plan.",
        ),
        ObjectSpec(
            "kiln_door",
            "the kiln door",
            "The iron door of the east kiln.",
            "Chalk writing covers the kiln door.",
        ),
        ObjectSpec(
            "wheel",
            "the potter's wheel",
            "A potter's wheel, still damp.",
            "Notes are scratched into the rim of the wheel.",
        ),
        ObjectSpec(
            "glaze_shelf",
            "the glaze shelf",
            "Jars of glaze on a high shelf.",
            "Labels on the glaze jars carry notes.",
            opens_with="submit_bins",
        ),
        ObjectSpec(
            "drying_rack",
            "the drying rack",
            "A drying rack of two shelves.",
            "A slate leans against the drying rack.",
        ),
        ObjectSpec(
            "shed_door",
            "the shed door",
            "The glaze shed door and its bolt.",
            "Pencil marks around the bolt record earlier tries.",
            opens_with="submit_order",
        ),
    ),
    locks=(
        LockSlot(
            LockSpec(
                "submit_bins",
                "bins",
                "the kiln sorting",
                _POTS,
                7,
                slots=("east", "west", "north"),
                noun="kiln",
            ),
            ("firing_book", "kiln_door", "wheel"),
        ),
        LockSlot(
            LockSpec("submit_order", "order", "the glazing order", _GLAZES, 6),
            ("glaze_shelf", "wheel", "firing_book", "drying_rack"),
        ),
        LockSlot(
            LockSpec("submit_placement", "placement", "the drying rack layout", _WARES),
            ("drying_rack", "shed_door", "kiln_door"),
            optional=True,
        ),
        LockSlot(
            LockSpec("submit_bolt", "dial", "the shed bolt setting"),
            ("shed_door", "glaze_shelf", "drying_rack", "firing_book"),
        ),
    ),
)

LUTHIER = Template(
    id="luthier",
    title="The Luthier's Loft",
    intro=(
        "A luthier's loft that smells of varnish. Instruments wait to be hung, wood waits to "
        "be stacked, and the loft hatch is bolted from this side."
    ),
    objects=(
        ObjectSpec(
            "wall",
            "the instrument wall",
            "Hooks on the wall, two rows of three.",
            "A paper is tacked beside the hooks.",
        ),
        ObjectSpec(
            "workbook",
            "the workbook",
            "The luthier's workbook.",
            "The workbook is open at a page of reminders.",
        ),
        ObjectSpec(
            "varnish",
            "the varnish pots",
            "Pots of varnish on a tray.",
            "The tray under the varnish pots is lined with a note.",
        ),
        ObjectSpec(
            "wood_store",
            "the wood store",
            "Billets of tonewood by the stair.",
            "Each billet in the wood store is chalked.",
            opens_with="submit_placement",
        ),
        ObjectSpec(
            "clamps", "the clamps", "A row of gluing clamps.", "A tag hangs from the clamps."
        ),
        ObjectSpec(
            "hatch",
            "the loft hatch",
            "The loft hatch and its bolt.",
            "Marks beside the hatch bolt record earlier tries.",
            opens_with="submit_bins",
        ),
    ),
    locks=(
        LockSlot(
            LockSpec("submit_placement", "placement", "the instrument wall layout", _INSTRUMENTS),
            ("wall", "workbook", "varnish"),
        ),
        LockSlot(
            LockSpec(
                "submit_bins",
                "bins",
                "the wood stack sorting",
                _WOODS,
                7,
                slots=("dry", "damp", "seasoned"),
                noun="stack",
            ),
            ("wood_store", "workbook", "clamps", "varnish"),
        ),
        LockSlot(
            LockSpec("submit_order", "order", "the gluing order", _PARTS, 6),
            ("clamps", "hatch", "workbook", "wood_store"),
            optional=True,
        ),
        LockSlot(
            LockSpec("submit_bolt", "dial", "the hatch bolt setting"),
            ("hatch", "wood_store", "clamps", "varnish"),
        ),
    ),
)

WEAVERY = Template(
    id="weavery",
    title="The Weaver's Hall",
    intro=(
        "A weaving hall of silent looms. The counting house door is bolted; to reach it you "
        "must master the hall's keys, its dye vats and its pattern board."
    ),
    objects=(
        ObjectSpec(
            "loom",
            "the great loom",
            "The great loom, half warped.",
            "A card is woven into the unfinished cloth on the loom.",
        ),
        ObjectSpec(
            "key_chart",
            "the key chart",
            "A chart of the hall's locks by the door.",
            "The chart lists several of the hall's locks.",
        ),
        ObjectSpec(
            "pattern_book",
            "the pattern book",
            "A pattern book on a stand.",
            "Notes are pencilled in the pattern book.",
        ),
        ObjectSpec(
            "vats",
            "the dye vats",
            "Three dye vats, blue, red and yellow.",
            "A board above the vats carries instructions.",
            opens_with="submit_master",
        ),
        ObjectSpec(
            "pattern_board",
            "the pattern board",
            "A board of six motif blocks.",
            "A slip is pinned to the pattern board.",
            opens_with="submit_bins",
        ),
        ObjectSpec(
            "counting_door",
            "the counting house door",
            "The counting house door, bolted.",
            "Marks around the bolt record earlier tries.",
        ),
    ),
    locks=(
        LockSlot(
            LockSpec("submit_master", "master", "the master key depths", _ROOMS, 3, noun="lock"),
            ("key_chart", "loom", "pattern_book"),
        ),
        LockSlot(
            LockSpec(
                "submit_bins",
                "bins",
                "the dye vat sorting",
                _YARNS,
                7,
                slots=("indigo", "madder", "weld"),
                noun="vat",
            ),
            ("vats", "pattern_book", "loom"),
        ),
        LockSlot(
            LockSpec("submit_placement", "placement", "the pattern board layout", _MOTIFS),
            ("pattern_board", "loom", "key_chart", "vats"),
        ),
        LockSlot(
            LockSpec("submit_order", "order", "the warping order", _WARPING, 5),
            ("loom", "pattern_board", "counting_door", "pattern_book"),
            optional=True,
        ),
        LockSlot(
            LockSpec("submit_bolt", "dial", "the counting house bolt setting"),
            ("counting_door", "pattern_board", "vats", "key_chart"),
        ),
    ),
)

SMITHY = Template(
    id="smithy",
    title="The Smithy",
    intro=(
        "A village smithy with the fire banked. The smith kept his ironwork sorted, his steps "
        "in order and every shed on one master key; the anvil chest is bolted."
    ),
    objects=(
        ObjectSpec(
            "anvil", "the anvil", "The anvil on its stump.", "Chalk notes cover the anvil's face."
        ),
        ObjectSpec(
            "bellows",
            "the bellows",
            "A pair of leather bellows.",
            "A tag is tied to the bellows handle.",
        ),
        ObjectSpec(
            "tally",
            "the tally board",
            "A tally board by the door.",
            "The tally board carries the smith's reminders.",
        ),
        ObjectSpec(
            "key_hooks",
            "the key hooks",
            "Hooks where the shed keys hang.",
            "Each hook has a little label.",
            opens_with="submit_order",
        ),
        ObjectSpec(
            "racks",
            "the iron racks",
            "Three racks for finished ironwork.",
            "A slate hangs between the racks.",
        ),
        ObjectSpec(
            "anvil_chest",
            "the anvil chest",
            "A chest under the anvil, bolted.",
            "Scratches around the bolt record earlier tries.",
            opens_with="submit_master",
        ),
    ),
    locks=(
        LockSlot(
            LockSpec("submit_order", "order", "the forging order", _FORGING, 6),
            ("anvil", "bellows", "tally"),
        ),
        LockSlot(
            LockSpec("submit_master", "master", "the master key depths", _SHEDS, 3, noun="lock"),
            ("key_hooks", "tally", "anvil", "bellows"),
        ),
        LockSlot(
            LockSpec(
                "submit_bins",
                "bins",
                "the iron rack sorting",
                _IRONS,
                7,
                slots=("upper", "middle", "lower"),
                noun="rack",
            ),
            ("racks", "anvil_chest", "key_hooks", "tally"),
            optional=True,
        ),
        LockSlot(
            LockSpec("submit_bolt", "dial", "the anvil chest bolt setting"),
            ("anvil_chest", "key_hooks", "racks", "bellows"),
        ),
    ),
)

ATELIER: tuple[Template, ...] = (LOCKSMITH, POTTERY, LUTHIER, WEAVERY, SMITHY)
