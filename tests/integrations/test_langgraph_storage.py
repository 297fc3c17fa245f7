"""What RewindSaver stores for state that grows: a dict channel rewritten whole each turn
(a growing dict of notes) and its pending writes keep only what each turn added, and read
back exactly as LangGraph's own InMemorySaver gives them, member order included."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

import rewinddb
from rewinddb.integrations.langgraph import RewindSaver

TEXT = "lorem ipsum dolor sit amet " * 18


class Notes(TypedDict):
    turn: int
    notes: dict[str, str]
    log: Annotated[list[str], operator.add]


def notes_graph(checkpointer: Any) -> Any:
    def write(state: Notes) -> dict[str, Any]:
        notes = dict(state.get("notes") or {})
        # Keys that do not sort in the order they came (note-10 before note-2).
        notes[f"note-{state['turn']}"] = f"{state['turn']}: {TEXT}"
        if state["turn"] == 20:
            notes["note-3"] = "edited in the middle"
        return {"notes": notes, "log": [f"turn {state['turn']}"]}

    builder = StateGraph(Notes)
    builder.add_node("write", write)
    builder.add_edge(START, "write")
    return builder.compile(checkpointer=checkpointer)


def run(checkpointer: Any, turns: int) -> list[Any]:
    graph = notes_graph(checkpointer)
    config = {"configurable": {"thread_id": "notes"}}
    for turn in range(turns):
        graph.invoke({"turn": turn}, config)
    return list(graph.get_state_history(config))


def stored_bytes(db: rewinddb.Database) -> int:
    conn = db._engine.conn
    row = conn.fetchone(
        "SELECT (SELECT coalesce(sum(length(body)) + sum(coalesce(length(refs), 0)), 0) "
        "FROM rewind_entries) + (SELECT coalesce(sum(length(item)), 0) FROM rewind_seq_items) "
        "+ (SELECT coalesce(sum(length(payload)), 0) FROM rewind_events)"
    )
    return int(row[0])


def test_a_growing_dict_reads_back_as_langgraphs_own_saver_gives_it(
    saver: RewindSaver,
) -> None:
    turns = 40
    ours, theirs = run(saver, turns), run(InMemorySaver(), turns)
    assert len(ours) == len(theirs) == 3 * turns
    for mine, reference in zip(ours, theirs, strict=True):
        assert mine.values == reference.values
        assert list(mine.values.get("notes", {})) == list(reference.values.get("notes", {}))
        assert [t.name for t in mine.tasks] == [t.name for t in reference.tasks]
        assert [t.result for t in mine.tasks] == [t.result for t in reference.tasks]
    for snapshot in ours:  # pending writes, through the checkpointer's own API
        loaded = saver.get_tuple(snapshot.config)
        assert loaded is not None
        for _, channel, value in loaded.pending_writes:
            if channel == "notes":
                assert isinstance(value, dict) and value["note-0"].startswith("0: ")


def test_a_growing_dict_and_its_writes_store_what_each_turn_added(
    saver: RewindSaver, db: rewinddb.Database
) -> None:
    """Rewritten whole, 60 turns of one ~500-byte note each would store 60 * 61 / 2
    notes twice (checkpoint and pending write); shared, a few times 60."""
    turns = 60
    run(saver, turns)
    note = len(f"10: {TEXT}")
    whole = 2 * note * turns * (turns + 1) // 2
    assert stored_bytes(db) < 0.35 * whole  # the checkpoints' own records are most of it


def test_texts_and_numbers_stored_again_store_as_the_serde_stores_them(
    saver: RewindSaver,
) -> None:
    """The encoder remembers how it stored a text or an integer; values equal but not
    alike (-0.0 and 0.0, 1 and True) each keep their own stored form."""
    from rewinddb.integrations.langgraph._codec import Decoder, Encoder

    encoder, decoder = Encoder(saver.serde), Decoder(saver.serde)
    values = ["a", "a", 1, True, 1.0, 0.0, -0.0, None, b"x", "é" * 300]
    for _ in range(2):
        for value in values:
            back = decoder.item(encoder.item(value))
            assert back == value and type(back) is type(value)
            if isinstance(value, float):
                assert str(back) == str(value)
