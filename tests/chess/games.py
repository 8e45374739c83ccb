"""Move sequences shared by the chess tests: known games that end in mate or stalemate."""

SCHOLARS_MATE = ["e2e4", "e7e5", "f1c4", "b8c6", "d1h5", "g8f6", "h5f7"]
LOYD_STALEMATE = [
    "e2e3",
    "a7a5",
    "d1h5",
    "a8a6",
    "h5a5",
    "h7h5",
    "h2h4",
    "a6h6",
    "a5c7",
    "f7f6",
    "c7d7",
    "e8f7",
    "d7b7",
    "d8d3",
    "b7b8",
    "d3h7",
    "b8c8",
    "f7g6",
    "c8e6",
]
