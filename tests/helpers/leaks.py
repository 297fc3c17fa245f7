"""Search a database's files and exports for a secret, as an attacker with the disk would."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import rewinddb


def encodings(secret: str) -> list[bytes]:
    """The secret's bytes, and its base64 at each of the three alignments (what is left
    of it when the text around it was encoded with it, cut to whole base64 groups)."""
    raw = secret.encode()
    found = [raw]
    for shift in range(3):
        encoded = base64.b64encode(b"\x00" * shift + raw)
        skip = 4 * ((shift + 2) // 3)  # the groups that hold the padding bytes
        found.append(encoded[skip : len(encoded) - 4])
    return [needle for needle in found if len(needle) >= 8]


def hits_in_files(directory: Path, secret: str) -> list[str]:
    """``file: encoding`` for each file of ``directory`` (WAL included) holding it."""
    found = []
    for path in sorted(directory.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        found += [f"{path.name}: {needle!r}" for needle in encodings(secret) if needle in data]
    return found


def hits_in_export(db: rewinddb.Database, secret: str) -> list[str]:
    out = io.BytesIO()
    db.export_jsonl(out)
    data = out.getvalue()
    return [repr(needle) for needle in encodings(secret) if needle in data]
