"""A misbehaving adapter for the memory-limit test: it tries to hold 2 GiB."""

import sys

sys.stdin.read()
hog = bytearray(2 << 30)
print('{"items": []}')
