"""The explorer's pages of a LangGraph thread in the agent's words: a step's diff and a
comparison name channels and paths in the value's own shape (``notes["k1"]``, not
``$.pairs[1]``), a first write shows the value, not the stored wrapper, what the nodes
wrote reads "node n wrote channel notes" (the raw events behind a toggle), and a
channel's link opens "channel notes of thread p", its values by step. The ``.json``
twins keep the stored change of each row beside what it shows. Everything is escaped."""

from __future__ import annotations

import operator
import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Annotated, Any

import pytest
from fastapi.testclient import TestClient
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

import rewinddb
from rewinddb import story
from rewinddb.integrations.langgraph import RewindSaver
from rewinddb.web import create_app
from rewinddb.web.urls import compare_url, key_url, point_text, step_url

EVIL = "<script>window.__pwned=1</script>"


def _merge(old: dict | None, new: dict) -> dict:
    return {**(old or {}), **new}


class Notes(TypedDict, total=False):
    notes: Annotated[dict, _merge]
    count: Annotated[int, operator.add]
    tags: Annotated[list, operator.add]


def _note(state: Notes) -> dict:
    index = len(state.get("notes") or {})
    key = f"k{index}" if index < 2 else EVIL  # an agent's text, as a key and a value
    return {"notes": {key: f"v{index} {EVIL}"}, "count": 1, "tags": [f"t{index}"]}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("channels") / "agent"
    with rewinddb.open(path) as db:
        graph = StateGraph(Notes).add_node("n", _note).add_edge(START, "n")
        compiled = graph.compile(checkpointer=RewindSaver(db))
        for _ in range(3):
            compiled.invoke({}, {"configurable": {"thread_id": "p"}})
    return path


@pytest.fixture(scope="module")
def client(recorded: Path) -> Iterator[TestClient]:
    with TestClient(create_app(recorded), base_url="http://localhost") as test_client:
        yield test_client


@pytest.fixture(scope="module")
def steps(recorded: Path) -> list[Any]:
    with rewinddb.open(recorded, create=False, readonly=True) as db:
        return [s for s in story.branch_story(db, "lg/p").steps.steps if s.label == "n"]


def _text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def table_html(html: str) -> str:
    return _between(html, "<table", "</table>")


def _between(html: str, start: str, end: str) -> str:
    return html.split(start, 1)[1].split(end, 1)[0]


def test_a_steps_diff_names_channels_in_the_values_shape(
    client: TestClient, steps: list[Any]
) -> None:
    first, second, _ = steps
    page = client.get(step_url("lg/p", second.version))
    assert page.status_code == 200
    diff = _between(page.text, 'id="step-diff"', 'class="hidden-rows"')
    shown = _text(diff)
    assert '+ notes notes["k1"] "v1 ' in shown and '+ tags tags[1] "t1"' in shown
    assert "~ count count 1 2" in shown
    assert "$.pairs" not in shown and "$.items" not in shown and "$.value" not in shown
    # The stored path stays at hand, in the row's title.
    assert 'title="stored as channel/notes $.pairs[1]"' in diff
    first_page = client.get(step_url("lg/p", first.version)).text
    first_diff = _text(_between(first_page, 'id="step-diff"', 'class="hidden-rows"'))
    assert '+ notes notes["k0"] "v0 ' in first_diff
    assert '"pairs"' not in first_diff and '"plain"' not in first_diff
    assert '"version"' not in first_diff


def test_what_the_nodes_wrote_and_the_raw_events_behind_a_toggle(
    client: TestClient, steps: list[Any]
) -> None:
    page = client.get(step_url("lg/p", steps[1].version)).text
    wrote = _between(page, "What the nodes wrote", "</ul>")
    assert "node n wrote channel notes" in _text(wrote)
    assert '"k1":"v1 ' in _text(wrote) and '"t1"' in _text(wrote)
    assert "langgraph.write" not in _text(wrote) and "task_id" not in wrote
    raw = _between(page, 'class="raw-events"', "</details>")
    assert "langgraph.write" in raw and "checkpoint_id" in raw
    assert "Events it appended" not in page and "Event it appended" not in page
    # Each write links its raw event.
    event = re.search(r'<a class="write-who" href="(/branches/[^"]+/events/\d+)"', wrote)
    assert event is not None and client.get(event.group(1)).status_code == 200


def test_a_channel_link_opens_its_values_by_step(client: TestClient, steps: list[Any]) -> None:
    page = client.get(step_url("lg/p", steps[1].version)).text
    link = key_url("lg/p", "kv", "channel/notes")
    assert f'href="{link.replace("&", "&amp;")}">notes</a>' in page
    channel = client.get(link)
    assert channel.status_code == 200
    heading = _text(_between(channel.text, "<h1", "</h1>"))
    assert heading.endswith("channel notes of thread p") and "kv key" not in heading
    assert "<title>channel notes of thread p" in channel.text
    shown = _text(channel.text)
    for step in steps:
        assert f"step {step.number}: n" in shown
        assert f'href="{step_url("lg/p", step.version)}"' in channel.text
    assert '+ notes["k1"] "v1 ' in shown and '+ notes {"k0":"v0 ' in shown
    assert "$.pairs" not in _text(channel.text.split('class="hidden-rows"', 1)[0])


def test_the_json_twins_keep_the_stored_change_beside_the_row(
    client: TestClient, steps: list[Any]
) -> None:
    data = client.get(step_url("lg/p", steps[1].version, ".json")).json()
    (notes,) = [r for r in data["rows"] if r["label"] == "notes" and not r["hidden"]]
    assert (notes["path"], notes["kind"], notes["new"]) == ('notes["k1"]', "added", f"v1 {EVIL}")
    assert notes["change"]["key"] == "channel/notes" and notes["change"]["path"] == "$.pairs[1]"
    assert notes["change"]["new"] == ["k1", f"v1 {EVIL}"]
    assert data["wrote"][0]["text"] == "node n wrote channel notes"
    key = client.get(key_url("lg/p", "kv", "channel/notes", ".json")).json()
    assert key["title"] == "channel notes of thread p"
    newest = key["versions"][-1]
    assert newest["step"]["version"] == steps[2].version
    assert [c["path"] for c in newest["changes"]] == ["$.pairs[2]", "$.version"]
    assert [(r["path"], r["hidden"]) for r in newest["rows"]] == [
        (f'notes["{EVIL.replace(chr(34), chr(92) + chr(34))}"]', False),
        ("$.version", True),
    ]


def test_a_comparison_reads_the_channels_too(client: TestClient, steps: list[Any]) -> None:
    a = point_text("lg/p", steps[0].version)
    b = point_text("lg/p", steps[2].version)
    page = client.get(compare_url(a, b))
    assert page.status_code == 200
    diff = _text(page.text.split("state diff a → b", 1)[1].split('class="hidden-rows"', 1)[0])
    assert '+ notes notes["k1"]' in diff and "~ count count 1 3" in diff and "tags[2]" in diff
    assert "$.pairs" not in diff and "$.items" not in diff
    data = client.get(compare_url(a, b, ".json")).json()["diff"]
    # The store's own diff as before, values as stored, and the rows beside it.
    assert "$.pairs[1]" in {c["path"] for c in data["changes"]}
    assert data["counts"] == {
        "added": sum(c["kind"] == "added" for c in data["changes"]),
        "removed": sum(c["kind"] == "removed" for c in data["changes"]),
        "changed": sum(c["kind"] == "changed" for c in data["changes"]),
    }
    rows = {r["path"]: r for r in data["rows"] if not r["hidden"]}
    assert rows['notes["k1"]']["change"]["path"] == "$.pairs[1]"
    assert rows["count"]["old"] == 1 and rows["count"]["new"] == 3


def test_agent_text_is_escaped_on_every_channel_page(client: TestClient, steps: list[Any]) -> None:
    urls = [step_url("lg/p", s.version) for s in steps]
    urls += [
        key_url("lg/p", "kv", "channel/notes"),
        compare_url(point_text("lg/p", steps[0].version), point_text("lg/p", steps[2].version)),
    ]
    for url in urls:
        html = client.get(url).text
        assert "<script>window" not in html, url
        assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html, url
        for script in re.findall(r"<script[^>]*>", html):
            assert 'src="/static' in script or 'type="application/json"' in script, url


# -- a copied thread, once its source is deleted -----------------------------------------


def test_a_deleted_threads_branches_are_not_listed_and_the_copys_forks_are_copies(
    tmp_path: Path,
) -> None:
    """After copy_thread("t", "t2") and delete_thread("t"), LangGraph has no thread t:
    the overview lists t2 and its forks only (t's branches, kept for the copy, are
    internal: named among the hidden ones), and the copy's forks say they are copies."""
    from langchain_core.messages import AIMessage
    from langgraph.graph import MessagesState

    def bot(state: MessagesState) -> dict:
        return {"messages": [AIMessage("echo " + state["messages"][-1].content)]}

    path = tmp_path / "agent"
    with rewinddb.open(path) as db:
        saver = RewindSaver(db)
        builder = StateGraph(MessagesState).add_node("bot", bot).add_edge(START, "bot")
        graph = builder.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "t"}}
        for text in ("one", "two", "three"):
            graph.invoke({"messages": [("user", text)]}, config)
        history = list(graph.get_state_history(config))
        graph.invoke({"messages": [("user", "fork")]}, history[4].config)
        saver.copy_thread("t", "t2")
        saver.delete_thread("t")
        assert list(graph.get_state_history(config)) == []
        (fork,) = [b for b in db.branches.names() if b.startswith("lg/t~")]
    suffix = fork.split("~")[1]
    with TestClient(create_app(path), base_url="http://localhost") as web:
        rows = {row["name"]: row for row in web.get("/.json").json()["branches"]}
        assert set(rows) == {"lg/t2", f"lg/t2~{suffix}"}
        assert rows[f"lg/t2~{suffix}"]["fork"]["label"].startswith(f"copy of t~{suffix} at step")
        overview = web.get("/")
        table = _text(table_html(overview.text))
        assert "replay from" not in table and f"copy of t~{suffix} at step" in table
        assert 'href="/branches/lg~2Ft"' not in table_html(overview.text)
        assert 'href="/branches/lg~2Ft2"' in table_html(overview.text)
        every = web.get("/.json?all=1").json()["branches"]
        held = {row["name"]: row for row in every if row["name"] in ("lg/t", fork)}
        assert len(held) == 2 and all(row["internal"] for row in held.values())
        page = _text(web.get(f"/branches/lg~2Ft2~7E{suffix}").text)
        assert f"copy of t~{suffix} at step" in page and "replay from" not in page
