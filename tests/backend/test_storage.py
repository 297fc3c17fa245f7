"""Storage shares what consecutive versions have in common (growing lists)."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

import rewinddb
from rewinddb import _arrays


def _item(i: int) -> dict[str, object]:
    return {"role": "user" if i % 2 else "assistant", "n": i, "text": f"{i:04d}" + "x" * 480}


def _record_calls(monkeypatch: pytest.MonkeyPatch, name: str) -> list[Any]:
    """The argument of every call of ``_arrays.<name>`` (dumps or loads) from now on."""
    calls: list[Any] = []
    real = getattr(_arrays, name)

    def recording(value: Any) -> Any:
        calls.append(value)
        return real(value)

    monkeypatch.setattr(_arrays, name, recording)
    return calls


def _stored_bytes(db: rewinddb.Database) -> int:
    """Bytes of stored values (entries and array items), through the db's own connection
    so it works on both backends."""
    conn = db._engine.conn
    entries = conn.fetchone(
        "SELECT coalesce(sum(length(body) + coalesce(length(refs), 0)), 0) FROM rewind_entries"
    )[0]
    items = conn.fetchone("SELECT coalesce(sum(length(item)), 0) FROM rewind_seq_items")[0]
    return int(entries + items)


def test_a_growing_list_stores_only_what_was_appended(db: rewinddb.Database) -> None:
    items: list[object] = []
    versions = []
    for i in range(100):
        items.append(_item(i))
        versions.append(db.json.set("chat", "$", items))
    stored = _stored_bytes(db)
    assert stored < 2 * 100 * 520, stored  # about one copy of the list, not 100 copies
    for n in (0, 1, 2, 50, 99):
        assert db.json.get("chat", as_of=versions[n]) == items[: n + 1]


def test_growing_list_under_an_object_key_and_in_kv(db: rewinddb.Database) -> None:
    state: dict[str, object] = {"step": 0, "messages": []}
    for i in range(60):
        state = {"step": i, "messages": [*state["messages"], _item(i)]}  # type: ignore[misc]
        db.kv.put("state", state)
    assert _stored_bytes(db) < 3 * 60 * 520
    history = db.kv.history("state")
    assert [len(h.value["messages"]) for h in history] == list(range(1, 61))
    assert history[10].value == {"step": 10, "messages": [_item(i) for i in range(11)]}


def test_branches_that_grow_one_list_differently(db: rewinddb.Database) -> None:
    base = [_item(i) for i in range(10)]
    db.json.set("chat", "$", base)
    db.branches.fork("default", "a")
    db.branches.fork("default", "b")
    db.at("a").json.set("chat", "$", [*base, _item(100)])
    db.at("b").json.set("chat", "$", [*base, _item(200), _item(201)])
    db.json.set("chat", "$", base[:5])  # shrink on default
    assert db.at("a").json.get("chat") == [*base, _item(100)]
    assert db.at("b").json.get("chat") == [*base, _item(200), _item(201)]
    assert db.json.get("chat") == base[:5]
    db.json.set("chat", "$", [*base[:5], _item(300)])  # regrow differently
    assert db.json.get("chat") == [*base[:5], _item(300)]
    assert db.at("a").json.get("chat")[-1] == _item(100)
    db.at("a").json.set("chat", "$", [_item(7), *base])  # prepended: stored anew
    assert db.at("a").json.get("chat") == [_item(7), *base]


def test_a_list_item_changed_in_the_middle(db: rewinddb.Database) -> None:
    items = [_item(i) for i in range(10)]
    v1 = db.json.set("chat", "$", items)
    changed = [*items[:3], {"edited": True}, *items[4:]]
    v2 = db.json.set("chat", "$", changed)
    assert db.json.get("chat", as_of=v1) == items
    assert db.json.get("chat", as_of=v2) == changed


def test_a_merged_list_reuses_the_source_items(db: rewinddb.Database) -> None:
    chat = [_item(i) for i in range(10)]
    db.json.set("chat", "$", chat)
    db.branches.fork("default", "run")
    db.at("run").json.set("chat", "$", [*chat, _item(10), _item(11)])
    before = _stored_bytes(db)
    db.branches.merge("run", "default")
    assert db.json.get("chat") == [*chat, _item(10), _item(11)]
    assert _stored_bytes(db) - before < 200  # no copy of the items, only the entry


def test_a_list_mutated_in_place_between_writes(db: rewinddb.Database) -> None:
    items = [_item(i) for i in range(10)]
    v1 = db.json.set("chat", "$", items)
    items.append(_item(10))
    v2 = db.json.set("chat", "$", items)
    items[3]["text"] = "edited in place"  # the same list and the same dict, changed
    items.append(_item(11))
    v3 = db.json.set("chat", "$", items)
    del items[-4:]
    items.append(_item(12))
    v4 = db.json.set("chat", "$", items)
    assert db.json.get("chat", as_of=v1) == [_item(i) for i in range(10)]
    assert db.json.get("chat", as_of=v2) == [_item(i) for i in range(11)]
    edited = [_item(i) for i in range(12)]
    edited[3]["text"] = "edited in place"
    assert db.json.get("chat", as_of=v3) == edited
    assert db.json.get("chat", as_of=v4) == [*edited[:8], _item(12)]


def _on_postgresql(db: rewinddb.Database) -> bool:
    return db._engine.conn.dialect == "postgresql"


def test_a_grown_list_encodes_only_the_appended_items(
    db: rewinddb.Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite the connection remembers what it wrote while no other connection
    commits; on PostgreSQL only inside one write transaction (which holds the lock)."""
    items = [_item(i) for i in range(50)]
    together = db.atomic() if _on_postgresql(db) else contextlib.nullcontext()
    with together:
        db.kv.put("state", {"messages": items})
        encoded = _record_calls(monkeypatch, "dumps")
        for i in range(50, 60):
            items.append(_item(i))
            encoded.clear()
            db.kv.put("state", {"messages": items})
            # Besides the array whole, the skeleton and its refs, only the new item.
            assert sum(1 for value in encoded if value in items[:-1]) == 0, len(encoded)
    monkeypatch.undo()
    assert db.kv.get("state") == {"messages": items}
    assert [len(h.value["messages"]) for h in db.kv.history("state")] == list(range(50, 61))


def test_grown_lists_after_a_rollback_and_with_little_memory(
    db: rewinddb.Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = [_item(i) for i in range(10)]
    db.json.set("chat", "$", items)
    with pytest.raises(RuntimeError), db.transaction():
        db.json.set("chat", "$", [*items, _item(10)])
        db.json.set("other", "$", [_item(i) for i in range(20)])
        raise RuntimeError("rolled back")
    # The arrays the rolled-back writes created are gone; their ids are reused.
    db.json.set("other", "$", [_item(i) for i in range(30, 40)])
    db.json.set("chat", "$", [*items, _item(11)])
    assert db.json.get("chat") == [*items, _item(11)]
    assert db.json.get("other") == [_item(i) for i in range(30, 40)]
    monkeypatch.setattr(_arrays, "KNOWN_BYTES", 4000)  # remembers less than one list
    for i in range(12, 20):
        items.append(_item(i))
        db.json.set("chat", "$", items)
        db.json.set("other", "$", [*items[:3], _item(i)])
    assert db.json.get("chat") == items
    assert db.json.get("other") == [*items[:3], _item(19)]
    assert len(db.json.history("chat")) == 10


def test_a_list_regrown_differently_on_another_branch_while_remembered(
    db: rewinddb.Database,
) -> None:
    base = [_item(i) for i in range(10)]
    db.json.set("chat", "$", base)
    db.branches.fork("default", "other")
    db.at("other").json.set("chat", "$", [*base, _item(100)])
    db.json.set("chat", "$", [*base, _item(200)])  # remembered prefix, array grown elsewhere
    db.at("other").json.set("chat", "$", [*base, _item(100), _item(101)])
    db.json.set("chat", "$", [*base, _item(200), _item(201)])
    assert db.json.get("chat") == [*base, _item(200), _item(201)]
    assert db.at("other").json.get("chat") == [*base, _item(100), _item(101)]


def test_reads_agree_with_another_connection(db: rewinddb.Database) -> None:
    items = [_item(i) for i in range(20)]
    versions = []
    for i in range(20, 25):
        items.append(_item(i))
        versions.append(db.kv.put("state", {"messages": items, "n": i}))
    with rewinddb.open(db.path) as other:  # reads the stored rows, remembers nothing
        for version in versions:
            assert db.kv.get("state", as_of=version) == other.kv.get("state", as_of=version)
        assert other.kv.get("state") == db.kv.get("state") == {"messages": items, "n": 24}
        other.kv.put("state", {"messages": [*items, _item(99)], "n": 25})
        assert db.kv.get("state") == {"messages": [*items, _item(99)], "n": 25}
    items.append(_item(25))
    db.kv.put("state", {"messages": items, "n": 26})  # grown differently than `other` did
    assert db.kv.get("state") == {"messages": items, "n": 26}


def test_a_list_of_text_read_back_is_its_own_and_equal_to_what_was_stored(
    db: rewinddb.Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A list of immutable scalars this process wrote last is read back without parsing
    (a copy of the list written); a list of objects is parsed as before. Both agree with
    another connection, which remembers nothing."""
    texts: list[object] = [f"{i:04d} " + "x" * 300 for i in range(20)]
    texts += [7, 2.5, True, None, 'é \u2028 \\ "']
    objects = [_item(i) for i in range(20)]
    db.kv.put("state", {"texts": texts, "objects": objects})
    parsed = _record_calls(monkeypatch, "loads")
    first = db.kv.get("state")
    assert first == {"texts": texts, "objects": objects}
    if not _on_postgresql(db):  # remembered only inside a write transaction there
        assert not [data for data in parsed if data.startswith(b'["0000')]  # not parsed
    assert [data for data in parsed if b'"assistant"' in data]  # objects: parsed
    monkeypatch.undo()
    assert first["texts"] is not texts and [type(t) for t in first["texts"]] == [
        type(t) for t in texts
    ]
    first["texts"].append("changed by the reader")
    first["texts"][0] = "replaced by the reader"
    assert db.kv.get("state")["texts"] == texts  # the reader's changes are its own
    with rewinddb.open(db.path) as other:
        assert other.kv.get("state") == db.kv.get("state")


def test_a_list_grown_on_another_branch_by_another_connection(db: rewinddb.Database) -> None:
    """This connection knows how far it wrote an array; another connection extending the
    same array (from another branch that shares it) must not go unnoticed."""
    base = [_item(i) for i in range(10)]
    db.json.set("chat", "$", base)
    db.branches.fork("default", "other")
    with rewinddb.open(db.path) as other:
        other.at("other").json.set("chat", "$", [*base, _item(100)])
    db.json.set("chat", "$", [*base, _item(200)])
    assert db.json.get("chat") == [*base, _item(200)]
    assert db.at("other").json.get("chat") == [*base, _item(100)]
    with rewinddb.open(db.path) as other:
        assert other.json.get("chat") == [*base, _item(200)]


def _note(i: int) -> str:
    return f"note {i}: " + "y" * 200


def _bytes_of(db: rewinddb.Database) -> int:
    conn = db._engine.conn
    entries = conn.fetchone(
        "SELECT sum(length(body)) + sum(coalesce(length(refs), 0)) FROM rewind_entries"
    )
    items = conn.fetchone("SELECT coalesce(sum(length(item)), 0) FROM rewind_seq_items")
    return int(entries[0]) + int(items[0])


def test_an_object_of_many_members_rewritten_whole_stores_only_what_it_added(
    db: rewinddb.Database,
) -> None:
    """A dict of notes rewritten whole each time with one more note is stored as its
    members' pairs, shared: the store grows by about one note a version, and every
    version reads back whole."""
    notes: dict[str, str] = {}
    versions = []
    for i in range(60):
        notes = {**notes, f"n{i}": _note(i)}
        versions.append(db.kv.put("state", {"notes": notes, "turn": i}))
    # Whole, the 60 versions would hold 60 * 61 / 2 notes; the first 15 are small.
    assert _bytes_of(db) < 60 * len(_note(0)) * 5
    for i, version in enumerate(versions):
        read = db.kv.get("state", as_of=version)
        assert read == {"notes": {f"n{j}": _note(j) for j in range(i + 1)}, "turn": i}
    changed = {**notes, "n3": "edited"}  # a member changed in the middle
    del changed["n10"]
    db.kv.put("state", {"notes": changed, "turn": 99})
    assert db.kv.get("state") == {"notes": changed, "turn": 99}
    assert db.kv.get("state", as_of=versions[-1])["notes"] == notes
    with rewinddb.open(db.path) if not _on_postgresql(db) else contextlib.nullcontext(db) as other:
        assert other.kv.get("state", as_of=versions[30]) == db.kv.get("state", as_of=versions[30])


def test_an_object_shared_or_not_by_its_shape(db: rewinddb.Database) -> None:
    """Objects with few members stay whole (their lists are shared instead); an object
    whose members hold lists is walked into; an empty object and a list of pairs are
    told apart from a shared object."""
    record = {"messages": [_item(i) for i in range(30)], "n": 1}
    many_with_lists = {f"k{i}": [i, i + 1] for i in range(20)} | {
        "big": [_note(i) for i in range(20)]
    }
    pairs = [[f"n{i}", _note(i)] for i in range(20)]
    value = {
        "record": record,
        "lists": many_with_lists,
        "pairs": pairs,
        "notes": {f"n{i}": _note(i) for i in range(20)},
        "empty": {},
    }
    db.kv.put("v", value)
    assert db.kv.get("v") == value
    db.kv.put("v", {**value, "notes": {**value["notes"], "more": "x"}})
    assert db.kv.get("v")["notes"]["more"] == "x"
    assert db.kv.get("v")["pairs"] == pairs and db.kv.get("v")["empty"] == {}
