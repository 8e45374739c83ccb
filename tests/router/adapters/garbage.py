"""A misbehaving adapter: it answers something that is not the protocol."""

import sys

sys.stdin.read()
print("this is not JSON")
