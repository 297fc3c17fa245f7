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


def hits_in_rows(url: str, secret: str) -> list[str]:
    """The PostgreSQL rows (of every table of the database's schema) holding the secret,
    as text (bytea shows as hex there)."""
    import psycopg

    needles = [needle.decode() for needle in encodings(secret)]
    needles += [needle.hex() for needle in encodings(secret)]
    found = []
    with psycopg.connect(url) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchall()
        for (table,) in tables:
            for (row,) in conn.execute(f"SELECT t::text FROM {table} t"):
                found += [f"{table}: {needle}" for needle in needles if needle in row]
    return found
