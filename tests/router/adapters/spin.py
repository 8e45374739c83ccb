"""A misbehaving adapter for the timeout test: it never answers."""

while True:
    pass
