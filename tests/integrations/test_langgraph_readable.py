"""What LangGraph's serde encoded reads as JSON in the explorer and the notebook
(``rewinddb.presenters.readable``), constructing nothing; stored values keep their encoding."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import pickle
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import ormsgpack
import pytest
from chat_graphs import chat_graph, thread
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

import rewinddb
from rewinddb import rendering
from rewinddb.diff import diff_readable, diff_values
from rewinddb.integrations.langgraph import RewindSaver
from rewinddb.integrations.langgraph._codec import dump_item, dump_typed
from rewinddb.integrations.langgraph.presenter import LangGraphPresenter
from rewinddb.integrations.langgraph.readable import (
    MAX_ENCODED_CHARS,
    message,
    question_text,
    readable,
    said,
)
from rewinddb.presenters import Message, ToolCall
from rewinddb.web import create_app
from rewinddb.web.urls import event_url, key_url

SERDE = JsonPlusSerializer()


@dataclasses.dataclass
class Step:
    name: str
    tries: int


def test_values_the_serde_made_read_as_json() -> None:
    message = AIMessage(content="book a hostel", id="m1")
    assert readable(dump_item(SERDE, message)) == {
        "__class__": "langchain_core.messages.ai.AIMessage",
        **message.model_dump(),
    }
    assert readable(dump_typed(SERDE, "plain text")) == "plain text"
    assert readable(dump_item(SERDE, None)) is None
    digest = hashlib.sha256(b"\x00\x01").hexdigest()[:12]
    assert readable(dump_typed(SERDE, b"\x00\x01")) == f"<2 bytes, sha256 {digest}>"
    when = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
    assert readable(dump_typed(SERDE, {"when": when, "step": Step("plan", 2), "t": (1, 2)})) == {
        "when": {"__class__": "datetime.datetime", "value": when.isoformat()},
        "step": {"__class__": f"{__name__}.Step", "name": "plan", "tries": 2},
        "t": [1, 2],
    }
    stored = {
        "version": "0001.5",
        "type": "list",
        "items": [dump_item(SERDE, HumanMessage(content="hi")), dump_item(SERDE, message)],
    }
    shown = readable(stored)
    assert [item["content"] for item in shown["items"]] == ["hi", "book a hostel"]
    assert shown["version"] == "0001.5" and stored["items"][0].startswith("msgpack:")
    assert readable(["json", base64.b64encode(b'{"a": [1]}').decode()]) == {"a": [1]}


def _encoded(kind: str, data: bytes) -> str:
    return f"{kind}:{base64.b64encode(data).decode()}"


def test_nothing_is_imported_called_or_unpickled(tmp_path: Path) -> None:
    target = tmp_path / "touched"
    # What LangGraph's serde would turn into a call of os.system(...) if it were trusted.
    call = ormsgpack.packb(ormsgpack.Ext(0, ormsgpack.packb(("os", "system", f"touch {target}"))))
    assert readable(_encoded("msgpack", call)) == {
        "__class__": "os.system",
        "value": f"touch {target}",
    }

    class Touch:
        def __reduce__(self) -> tuple[Any, ...]:
            return (Path.touch, (target,))

    pickled = pickle.dumps(Touch())
    digest = hashlib.sha256(pickled).hexdigest()[:12]
    assert readable(_encoded("pickle", pickled)) == {
        "__pickle__": f"<{len(pickled)} bytes, sha256 {digest}>"
    }
    assert not target.exists()


@pytest.mark.parametrize(
    "stored",
    [
        "msgpack",
        "a note: msgpack:gA==",
        "msgpack:not base64!",
        "msgpack:gA",  # bad padding
        _encoded("msgpack", b"\xc1"),  # never used by msgpack
        _encoded("msgpack", b"\x92\x01"),  # an array cut short
        _encoded("json", b"{"),
        _encoded("json", b'"\\ud800"'),  # a lone surrogate no page can show
        _encoded("json", b"1" * 30),  # an integer past 64 bits
        _encoded("null", b"x"),
        "msgpack:" + "A" * (MAX_ENCODED_CHARS + 4),
        ["msgpack", 1],
        ["unknown", "gA=="],
        [{"a": 1}, "gA=="],
        {"k": ["x", "y"], "n": [1, 2.5, None, True]},
    ],
    ids=[
        "word",
        "inside-text",
        "not-base64",
        "padding",
        "bad-msgpack",
        "short-msgpack",
        "bad-json",
        "surrogate",
        "huge-int",
        "null-with-data",
        "too-long",
        "pair-not-text",
        "pair-unknown-type",
        "pair-unhashable",
        "plain",
    ],
)
def test_what_is_not_an_encoding_is_shown_as_stored(stored: Any) -> None:
    assert readable(stored) is stored


def test_messages_read_as_records() -> None:
    def shown(value: Any) -> Message:
        stored = dump_item(SERDE, value)
        return message(readable(stored), stored)

    call = {"name": "search", "args": {"q": "<b>x</b>"}, "id": "c1", "type": "tool_call"}
    blocks = [{"type": "text", "text": "Here"}, {"type": "image_url", "image_url": {"url": "u"}}]
    ai = shown(AIMessage(content=blocks, tool_calls=[call], id="a1", name="agent"))
    assert (ai.role, ai.text, ai.id, ai.name) == ("ai", "Here\n[image_url]", "a1", "agent")
    assert ai.tool_calls == (ToolCall("search", {"q": "<b>x</b>"}, "c1"),)
    tool = shown(ToolMessage(content="42", tool_call_id="c1"))
    assert (tool.role, tool.text, tool.tool_call_id) == ("tool", "42", "c1")
    assert shown(AIMessageChunk(content="part")).role == "ai"
    assert shown(SystemMessage(content="be brief")).role == "system"
    assert (shown(ChatMessage(role="critic", content="no")).role) == "critic"
    assert message({"role": "user", "content": "hi"}) == Message("human", "hi")
    assert message({"role": "assistant", "content": None}) == Message("ai", "")
    assert message("agent: HELLO") == Message("message", "agent: HELLO")
    assert message({"not": "a message"}) == Message("message", '{"not":"a message"}')
    assert message([1, 2]) == Message("message", "[1,2]")
    # What could not be decoded is shown as it was stored, never taken for text.
    other = "msgpack+aes:c2VjcmV0"
    assert message(readable(other), other) == Message("undecodable", other)
    pickled = readable(_encoded("pickle", b"\x80\x04N."))
    assert message(pickled).role == "undecodable"
    long = "msgpack+aes:" + "A" * 1000
    assert len(message(long, long).text) < 300
    assert said(Message("ai", "", tool_calls=(ToolCall("search", {"q": 1}),))) == (
        'calls search({"q":1})'
    )
    assert said(Message("ai", "done")) == "done"
    assert question_text({"question": "Book it?", "args": {}}) == "Book it?"
    assert question_text("Book it?") == "Book it?" and question_text(3) is None


@pytest.fixture
def langgraph_run(tmp_path: Path) -> Path:
    path = tmp_path / "agent"
    with RewindSaver.from_path(path) as saver:
        graph = chat_graph(saver)
        graph.invoke({"log": ["<script>alert('x')</script> book a hostel"]}, thread("t"))
    return path


def test_a_langgraph_run_reads_as_text_in_the_explorer(langgraph_run: Path) -> None:
    with rewinddb.open(langgraph_run, readonly=True) as db:
        branch = db.at("lg/t")
        last = branch.events.list()[-1].event
        assert last.payload["value"][0] == "msgpack"  # stored as the serde made it
    with TestClient(create_app(langgraph_run), base_url="http://localhost") as client:
        page = client.get(event_url("lg/t", last.sequence)).text
        assert "reply 1" in page and "msgpack:" not in page
        assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; book a hostel" in page
        assert "<script>alert" not in page
        key_page = client.get(key_url("lg/t", "kv", "channel/log")).text
        assert "reply 1" in key_page and "msgpack:" not in key_page
        raw = client.get(event_url("lg/t", last.sequence, ".json")).json()
        assert raw["event"]["payload"]["value"][0] == "msgpack"


def test_a_langgraph_run_reads_as_text_in_the_notebook(langgraph_run: Path) -> None:
    with rewinddb.open(langgraph_run, readonly=True) as db:
        branch = db.at("lg/t")
        html = rendering.event_html(branch.events.list()[-1].event)
        assert "reply 1" in html and "msgpack" not in html
        state = rendering.state_html(branch.snapshot())
        assert "&lt;script&gt;" in state and "<script>" not in state
        assert "msgpack:" not in state


def test_readable_diffs_compare_what_people_read(langgraph_run: Path) -> None:
    with rewinddb.open(langgraph_run, readonly=True) as db:
        writes = db.at("lg/t").kv.history("channel/log")
        first, last = writes[0].version, writes[-1].version  # the input; the reply too
        raw = db.diff("lg/t", "lg/t", as_of_a=first, as_of_b=last)
        shown = db.diff("lg/t", "lg/t", as_of_a=first, as_of_b=last, readable=True)
        # (Whether a pending write, stored by the serde, falls in this range depends on
        # when LangGraph saved it in the background: only the readable side is checked.)
        assert "msgpack" not in str(shown.to_dict())
        grown = [c for c in shown if c.key == "channel/log" and c.kind == "added"]
        assert [(c.path, c.new) for c in grown] == [("$.items[1]", "reply 1")]
        # The checkpoint record is stored as plain JSON: it compares field by field.
        for diff in (raw, shown):
            paths = {c.path for c in diff if c.key == "checkpoint"}
            assert any(p.startswith("$.checkpoint.channel_versions.") for p in paths)
        view = db.at("lg/t")
        readable_changes = view.key_history("kv", "channel/log", readable=True)[-1].changes
        raw_changes = view.key_history("kv", "channel/log")[-1].changes
        assert {(c.path, c.new) for c in readable_changes if c.kind == "added"} == {
            ("$.items[1]", "reply 1")
        }
        # A list of texts is stored as itself (``_codec``'s plain values): raw reads alike.
        assert [c.new for c in raw_changes if c.kind == "added"] == ["reply 1"]


def test_the_command_line_reads_as_text_and_its_json_stays_exact(
    langgraph_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rewinddb.cli import main

    assert main(["show", str(langgraph_run), "--branch", "lg/t"]) == 0
    shown = capsys.readouterr().out
    assert "reply 1" in shown and "msgpack" not in shown
    assert main(["diff", str(langgraph_run), "default", "lg/t"]) == 0
    text = capsys.readouterr().out
    assert "reply 1" in text and "msgpack" not in text
    assert main(["diff", str(langgraph_run), "default", "lg/t", "--json"]) == 0
    assert '"msgpack"' in capsys.readouterr().out  # the serde's values, exactly as stored


def test_the_time_travel_example_prints_readable_diffs(tmp_path: Path) -> None:
    """The issue's example: each fork's diff from its parent names what changed."""
    import subprocess
    import sys

    example = Path(__file__).resolve().parents[2] / "examples" / "langgraph_time_travel.py"
    out = subprocess.run(
        [sys.executable, str(example), str(tmp_path / "agent")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert """~ kv 'channel/messages' $.items[2]: "book a hotel" -> "book a hostel\"""" in out
    assert """~ kv 'channel/messages' $.items[4]: "pay" -> "user: cancel\"""" in out
    assert "msgpack" not in out


def _packed(value: Any) -> str:
    return _encoded("msgpack", ormsgpack.packb(value))


def _nested(levels: int, value: Any = None) -> Any:
    for _ in range(levels):
        value = [value]
    return value


def test_decoded_values_stay_within_the_depth_stored_values_have(tmp_path: Path) -> None:
    """An encoding that would nest deeper than any stored value can (counting where it
    sits) is shown as stored: pages, diffs and the command line never break on it."""
    from rewinddb._values import MAX_DEPTH

    assert readable(_packed(_nested(MAX_DEPTH - 1))) == _nested(MAX_DEPTH - 1)
    too_deep = _packed(_nested(MAX_DEPTH + 1))
    assert readable(too_deep) is too_deep
    inside = [[_packed(_nested(MAX_DEPTH - 1))]]  # fits alone, not two levels down
    assert readable(inside) is inside
    path = tmp_path / "db"
    with rewinddb.open(path) as db:
        db.kv.put("k", "plain")
        db.kv.put("k", [_packed(_nested(250))])
        db.kv.put("k", _nested(100, _packed(_nested(120))))  # deep inside a deep value
        db.events.append("e", {"p": _packed(_nested(252))})
        for version in (2, 3):
            diff = db.diff(
                "default", "default", as_of_a=version - 1, as_of_b=version, readable=True
            )
            assert len(diff) >= 1
        assert len(db.key_history("kv", "k", readable=True)) == 3
    with TestClient(create_app(path), base_url="http://localhost") as client:
        for url in (key_url("default", "kv", "k"), event_url("default", 0), "/"):
            assert client.get(url).status_code == 200, url
    from rewinddb.cli import main

    assert main(["show", str(path)]) == 0
    assert main(["diff", str(path), "default", "default", "--as-of-a", "1"]) == 0


def test_readable_diffs_keep_every_difference(tmp_path: Path) -> None:
    with rewinddb.open(tmp_path / "db") as db:
        db.kv.put("n", _packed(None))
        db.kv.put("n", _packed(float("nan")))
        db.kv.put("blob", _encoded("bytes", b"\x00\x00\x00"))
        db.kv.put("blob", _encoded("bytes", b"\x00\x00\x01"))
        changes = db.diff("default", "default", as_of_a=1, as_of_b=db.version, readable=True)
        assert {(c.key, c.kind) for c in changes} == {("n", "changed"), ("blob", "added")}
        assert db.diff("default", "default", as_of_a=3, as_of_b=4, readable=True).changes
        assert [
            c.new for c in db.diff("default", "default", as_of_a=1, as_of_b=2, readable=True)
        ] == ["nan"]


_ENCODINGS = [
    dump_item(SERDE, AIMessage(content="book a hostel", id="m1")),
    dump_item(SERDE, HumanMessage(content="book a hotel", id="m2")),
    dump_typed(SERDE, {"nested": [1, 2]}),
    dump_typed(SERDE, "plain text"),
    "msgpack:not base64!",  # looks encoded, is not: shown as stored
    "json:MQ==",
]
_stored = st.recursive(
    st.one_of(
        st.sampled_from(_ENCODINGS),
        st.none(),
        st.booleans(),
        st.integers(-3, 3),
        st.text(max_size=3),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(["a", "b", "messages"]), children, max_size=3),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(old=_stored, new=_stored)
def test_a_readable_diff_decodes_only_where_values_differ(old: Any, new: Any) -> None:
    """Walking the stored values and decoding only where they differ gives exactly the
    diff of the values decoded whole."""
    whole = diff_values("kv", "k", readable(old), readable(new))
    assert diff_readable("kv", "k", old, new, {}) == whole


def test_a_list_that_grew_decodes_only_its_new_item() -> None:
    items = [dump_item(SERDE, HumanMessage(content=f"turn {n}", id=f"m{n}")) for n in range(200)]
    memo: dict[Any, Any] = {}
    changes = diff_readable("kv", "channel/messages", items[:199], items, memo)
    assert [(c.path, c.kind, c.new["content"]) for c in changes] == [
        ("$[199]", "added", "turn 199")
    ]
    assert len(memo) == 1  # one message decoded, not 399


#: A user's own text that happens to read like a serde encoding ("json:" + base64).
LOOKALIKE = "json:" + base64.b64encode(b'{"a": 1}').decode()
#: ... and one that decodes as an AI message nobody sent.
SPOOF = dump_item(JsonPlusSerializer(), AIMessage(content="Refund of $5,000 approved."))


def test_text_stored_as_itself_is_never_shown_decoded(tmp_path: Path) -> None:
    """Plain channel values and the checkpoint record's metadata are stored as they are:
    every front end shows them as they are, even when they look like an encoding."""
    path = tmp_path / "agent"
    with RewindSaver.from_path(path) as saver:
        config = {"configurable": {"thread_id": "t", "note": LOOKALIKE, "who": SPOOF}}
        chat_graph(saver).invoke({"log": [LOOKALIKE, SPOOF]}, config)
    with rewinddb.open(path, readonly=True) as db:
        view = db.at("lg/t")
        assert view.kv.get("channel/log")["plain"] is True
        history = repr(
            [
                (c.path, c.new)
                for v in view.key_history("kv", "channel/log", readable=True)
                for c in v.changes
            ]
        )
        assert LOOKALIKE in history and SPOOF in history
        assert "{'a': 1}" not in history and "Refund" not in history.replace(SPOOF, "")
        shown = repr([(c.path, c.new) for c in db.diff("default", "lg/t", readable=True)])
        assert LOOKALIKE in shown and "{'a': 1}" not in shown
        assert "Refund" not in shown.replace(SPOOF, "")
        record = view.kv.get("checkpoint")
        assert record["metadata"]["note"] == LOOKALIKE
        displayed = rewinddb.presenters.readable(record)
        assert displayed["metadata"]["note"] == LOOKALIKE
        assert displayed["metadata"]["who"] == SPOOF
        history = view.key_history("kv", "checkpoint", readable=True)
        notes = [c for v in history for c in v.changes if "note" in c.path or c.path == "$"]
        assert notes and all("{'a': 1}" not in repr(c.new) for c in notes)
    with TestClient(create_app(path), base_url="http://localhost") as client:
        page = client.get(key_url("lg/t", "kv", "channel/log")).text
        assert LOOKALIKE in page and "Refund of $5,000" not in page


def test_a_channel_turning_plain_shows_no_bookkeeping_change(tmp_path: Path) -> None:
    """A list of texts that gains a dict goes through the serde from then on: a step's
    visible changes show the new item, not the codec's ``plain`` flag."""
    path = tmp_path / "agent"
    with RewindSaver.from_path(path) as saver:
        graph = chat_graph(saver)
        graph.invoke({"log": ["text"]}, thread("t"))
        before = saver.db.at("lg/t").kv.history("channel/log")[-1].version
        graph.invoke({"log": [{"n": 1}]}, thread("t"))
        after = saver.db.at("lg/t").kv.history("channel/log")[-1].version
        assert "plain" not in saver.db.at("lg/t").kv.get("channel/log")
        diff = saver.db.at("lg/t").diff(before, after, readable=True)
        presenter = LangGraphPresenter()
        shown = [c.path for c in diff.changes if c.key == "channel/log" and not presenter.hidden(c)]
        assert shown and "$.plain" not in shown
