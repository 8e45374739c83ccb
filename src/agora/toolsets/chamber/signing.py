"""Ed25519 keys for chamber cards: loading the operator's key, signing bytes, checking signatures.

Configuration: ``signing_key = "/path/to/key"`` in the chamber's options table
(``runtime.options("chamber")``: ``[options.chamber]`` in agora.toml). The file holds either
a PEM Ed25519 private key (PKCS#8, as written by ``openssl genpkey -algorithm ed25519``) or
the raw 32-byte private seed as 64 hex digits (whitespace ignored). No key configured: cards
are sealed ``pending_signature`` until an operator runs ``agora cards sign``. Keys are read
from disk only by `load_signer`; nothing here logs or returns private material.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

ALGORITHM = "Ed25519"


class SigningKeyError(ValueError):
    """A configured signing key is missing, unreadable or not an Ed25519 key."""


@dataclass(frozen=True, slots=True)
class Signer:
    """A loaded Ed25519 private key."""

    key: Ed25519PrivateKey

    @property
    def public_key_hex(self) -> str:
        """The raw 32-byte public key, hex."""
        raw = self.key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        return raw.hex()

    @property
    def key_id(self) -> str:
        """A short, stable name of the public key: ``ed25519:`` + 16 hex of its sha256."""
        return key_id(self.public_key_hex)

    def sign(self, data: bytes) -> str:
        """Sign ``data``; the signature as unpadded base64url."""
        return base64.urlsafe_b64encode(self.key.sign(data)).rstrip(b"=").decode()


def key_id(public_key_hex: str) -> str:
    """The key id of a raw public key given as hex."""
    return "ed25519:" + hashlib.sha256(bytes.fromhex(public_key_hex)).hexdigest()[:16]


def signer_from_bytes(data: bytes) -> Signer:
    """Parse a PEM private key or a 64-hex-digit seed.

    Args:
        data: The key file's contents.

    Returns:
        The signer.

    Raises:
        SigningKeyError: if ``data`` is neither.
    """
    text = data.strip()
    if re.fullmatch(rb"[0-9a-fA-F\s]+", text):
        seed = bytes.fromhex(re.sub(rb"\s", b"", text).decode())
        if len(seed) != 32:
            raise SigningKeyError("a hex signing key must be 32 bytes (64 hex digits)")
        return Signer(Ed25519PrivateKey.from_private_bytes(seed))
    try:
        key = serialization.load_pem_private_key(text, password=None)
    except (ValueError, TypeError) as exc:
        raise SigningKeyError(
            "the signing key is neither a PEM Ed25519 private key nor a 32-byte seed as 64 hex"
            " digits"
        ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError("the signing key is not an Ed25519 key")
    return Signer(key)


def load_signer(path: str | Path) -> Signer:
    """Read the signing key file at ``path``.

    Args:
        path: The file named by ``signing_key``.

    Returns:
        The signer.

    Raises:
        SigningKeyError: if the file cannot be read or holds no usable key.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SigningKeyError(f"cannot read the signing key: {exc.strerror}") from exc
    return signer_from_bytes(data)


def verify(public_key_hex: str, signature: str, data: bytes) -> bool:
    """Whether ``signature`` (base64url) is a valid Ed25519 signature of ``data``."""
    try:
        key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key_hex))
        raw = base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))
        key.verify(raw, data)
    except (InvalidSignature, ValueError):
        return False
    return True
