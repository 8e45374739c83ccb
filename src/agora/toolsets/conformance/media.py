"""The fixtures' payloads: a tiny PNG, a tiny WAV, and MCP content blocks that carry them.

The image and the sound are built here from first principles (a 1x1 red pixel, 50 ms of
silence) so no binary file ships with agora. This module only builds JSON-able values: it
must not talk to a client or know about sessions.
"""

from __future__ import annotations

import base64
import io
import struct
import wave
import zlib
from functools import cache
from typing import Any

PNG_MIME = "image/png"
WAV_MIME = "audio/wav"


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


@cache
def red_pixel_png() -> str:
    """A 1x1 red PNG, base64-encoded."""
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte 0, then one red pixel
    png = (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", pixels)
        + _png_chunk(b"IEND", b"")
    )
    return base64.b64encode(png).decode()


@cache
def silence_wav() -> str:
    """50 ms of 8 kHz 16-bit mono silence as a WAV file, base64-encoded."""
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(8000)
        wav.writeframes(b"\x00\x00" * 400)
    return base64.b64encode(out.getvalue()).decode()


def text(value: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": value}


def image() -> dict[str, Any]:
    """An image content block holding the red pixel."""
    return {"type": "image", "data": red_pixel_png(), "mimeType": PNG_MIME}


def audio() -> dict[str, Any]:
    """An audio content block holding the silence."""
    return {"type": "audio", "data": silence_wav(), "mimeType": WAV_MIME}


def embedded(uri: str, mime_type: str, body: str) -> dict[str, Any]:
    """An embedded text resource content block."""
    return {"type": "resource", "resource": {"uri": uri, "mimeType": mime_type, "text": body}}


def user(content: dict[str, Any]) -> dict[str, Any]:
    """A prompt message from the user role."""
    return {"role": "user", "content": content}
