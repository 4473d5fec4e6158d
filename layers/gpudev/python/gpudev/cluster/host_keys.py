"""A reservation's sshd host key: made once by the lifecycle at provision, kept in the
reservation's keys Secret (objects.keys_secret), installed by the pod's startup script at
every container start (so an OOM restart keeps it), and its public half recorded on the row
so the CLI pins it under the alias `gpu-dev-<id8>` (docs/decisions.md 2026-11-27 "Jupyter
through SSH; host keys made once").

Ed25519 in plain Python (RFC 8032 §5.1.5, key generation only: a scalar multiplication of
the base point), written in OpenSSH's own formats: the layer has no `cryptography`, and
this is the one thing it would be used for. Only the public key is computed from the
secret; nothing here signs, so timing does not matter."""

from __future__ import annotations

import base64
import hashlib
import secrets
import struct
from dataclasses import dataclass

KEY_TYPE = "ssh-ed25519"
# The keys Secret's entries, installed by startup.sh as /etc/ssh/<entry>.
PRIVATE_ENTRY = "ssh_host_ed25519_key"
PUBLIC_ENTRY = "ssh_host_ed25519_key.pub"

_P = 2**255 - 19
_D = -121665 * pow(121666, _P - 2, _P) % _P
_Y = 4 * pow(5, _P - 2, _P) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)


def _recover_x(y: int) -> int:
    x2 = (y * y - 1) * pow(_D * y * y + 1, _P - 2, _P)
    x = pow(x2, (_P + 3) // 8, _P)
    if (x * x - x2) % _P:
        x = x * _SQRT_M1 % _P
    return _P - x if x & 1 else x


Point = tuple[int, int, int, int]  # extended coordinates (X, Y, Z, T)
_BASE: Point = (_recover_x(_Y), _Y, 1, _recover_x(_Y) * _Y % _P)


def _add(a: Point, b: Point) -> Point:
    x1, y1, z1, t1 = a
    x2, y2, z2, t2 = b
    aa = (y1 - x1) * (y2 - x2) % _P
    bb = (y1 + x1) * (y2 + x2) % _P
    cc = 2 * t1 * t2 * _D % _P
    dd = 2 * z1 * z2 % _P
    e, f, g, h = bb - aa, dd - cc, dd + cc, bb + aa
    return e * f % _P, g * h % _P, f * g % _P, e * h % _P


def _public_from_seed(seed: bytes) -> bytes:
    digest = hashlib.sha512(seed).digest()
    scalar = int.from_bytes(digest[:32], "little")
    scalar &= (1 << 254) - 8
    scalar |= 1 << 254
    point: Point = (0, 1, 1, 0)
    addend = _BASE
    while scalar:
        if scalar & 1:
            point = _add(point, addend)
        addend = _add(addend, addend)
        scalar >>= 1
    x, y, z, _ = point
    inverse = pow(z, _P - 2, _P)
    x, y = x * inverse % _P, y * inverse % _P
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


@dataclass(frozen=True)
class HostKey:
    private: str  # OpenSSH's private key file (openssh-key-v1, unencrypted)
    public: str  # one line: `ssh-ed25519 <base64>`

    def entries(self) -> dict[str, str]:
        """The keys Secret's entries."""
        return {PRIVATE_ENTRY: self.private, PUBLIC_ENTRY: self.public + "\n"}


def host_key_of(seed: bytes, comment: str = "gpu-dev") -> HostKey:
    """The host key of a 32-byte Ed25519 seed, in OpenSSH's file formats."""
    if len(seed) != 32:
        raise ValueError("an Ed25519 seed has 32 bytes")
    public = _public_from_seed(seed)
    public_blob = _string(KEY_TYPE.encode()) + _string(public)
    check = secrets.token_bytes(4)
    body = check + check + public_blob + _string(seed + public) + _string(comment.encode())
    body += bytes(range(1, 1 + (-len(body) % 8)))  # padding to the cipher block (8: none)
    blob = (
        b"openssh-key-v1\0"
        + _string(b"none")
        + _string(b"none")
        + _string(b"")
        + struct.pack(">I", 1)
        + _string(public_blob)
        + _string(body)
    )
    encoded = base64.b64encode(blob).decode()
    lines = [encoded[i : i + 70] for i in range(0, len(encoded), 70)]
    private = "\n".join(
        ["-----BEGIN OPENSSH PRIVATE KEY-----", *lines, "-----END OPENSSH PRIVATE KEY-----", ""]
    )
    return HostKey(private, f"{KEY_TYPE} {base64.b64encode(public_blob).decode()}")


def carried_host_key(installed: dict[str, str]) -> dict[str, str]:
    """The host key's entries of a Secret's current entries, to carry into its replacement
    (none in a Secret made before host keys were kept)."""
    return {
        entry: installed[entry] for entry in (PRIVATE_ENTRY, PUBLIC_ENTRY) if entry in installed
    }


def new_host_key() -> HostKey:
    return host_key_of(secrets.token_bytes(32))
