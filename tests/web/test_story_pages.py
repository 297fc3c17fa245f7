"""The explorer tells the agent's story: threads as conversations beside their steps,
any step opened, forks marked, attempts in the overview, comparisons by content; and
what a web user gets for bad input (an HTML page, never a 500)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from react_run import ReactRun

import rewinddb
from rewinddb.web import create_app
from rewinddb.web.urls import branch_url, step_url

HX = {"HX-Request": "true"}
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def text_of(page: str) -> str:
    """A page's text as a person reads it (tags dropped, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def words(page: str) -> str:
    return " ".join(text_of(page).split())


# --- a thread read as a conversation ----------------------------------------------------


def test_a_thread_page_reads_as_a_conversation(react: ReactRun, react_client: TestClient) -> None:
    page = react_client.get(branch_url(react.main_branch))
    assert page.status_code == 200
    shown = words(page.text)
    assert react.question in shown and react.answer in shown
    # The tool call as a card: its name, its arguments, and the result that answered it.
    card = page.text[page.text.index('class="tool-call"') :]
    card = card[: card.index("</div>\n</div>") if "</div>\n</div>" in card else 2000]
    assert react.tool in card and react.tool_call_id in card
    assert json.dumps(react.tool_args, separators=(",", ":")) in text_of(page.text)
    assert react.tool_result in words(page.text)
    # The approval card: the question and the answer it was resumed with.
    approval = words(page.text[page.text.index('class="approval') :])
    assert react.interrupt_question in approval and f"answered {react.resume}" in approval
    # No storage rows: the conversation replaces the event timeline.
    assert 'class="event-row"' not in page.text and "langgraph.write" not in shown
    assert "Thread lisbon-trip" in shown and "finished" in shown
    # Every step is a row that opens its page.
    steps = re.findall(r'class="step-open" href="([^"]+)"', page.text)
    assert (
        len(steps)
        == react_client.get(branch_url(react.main_branch, ".json")).json()["story"]["steps"][
            "total"
        ]
    )
    for url in steps[:3] + steps[-2:]:
        assert react_client.get(url).status_code == 200
    # The stored events stay one link away.
    events = react_client.get(branch_url(react.main_branch) + "?view=events")
    assert 'class="event-row"' in events.text and "the conversation" in events.text


def test_a_tool_message_shows_once_as_its_calls_result(
    react: ReactRun, react_client: TestClient
) -> None:
    page = react_client.get(branch_url(react.main_branch)).text
    chat = page[page.index('id="chat"') : page.index('aria-label="steps"')]
    # The card, then the AI's answer quoting it; not a tool message of its own.
    assert text_of(chat).count(react.tool_result) == 2
    assert 'class="msg role-tool' not in chat  # every tool message was paired with its call


def test_the_fork_marks_its_fork_point_and_its_edited_call(
    react: ReactRun, react_client: TestClient
) -> None:
    page = react_client.get(branch_url(react.fork_branch)).text
    shown = words(page)
    assert "edit of step" in shown and react.thread_id in shown
    assert shown.count("fork point") == 2  # in the conversation and among the steps
    chat = page[page.index('id="chat"') : page.index('aria-label="steps"')]
    before, after = chat.split('class="fork-mark"', 1)
    assert react.question in text_of(before) and "(before the fork)" in text_of(before)
    edited = json.dumps(react.edited_args, separators=(",", ":"))
    assert edited in text_of(after) and react.fork_answer in words(after)
    assert json.dumps(react.tool_args, separators=(",", ":")) not in text_of(after)
    steps = page[page.index('aria-label="steps"') :]
    inherited, own = steps.split('class="fork-mark"', 1)
    assert 'class="step-row inherited"' in inherited and "step-row inherited" not in own
    assert ">update</a>" in own  # the update_state edit is the fork's first step
    # The fork label leads to the parent's step it continues from.
    fork = react_client.get(branch_url(react.fork_branch, ".json")).json()["story"]["summary"]
    target = step_url(react.main_branch, fork["fork"]["step"])
    assert f'href="{target}"' in page and react_client.get(target).status_code == 200


# --- a step opened ----------------------------------------------------------------------


def test_a_thread_page_names_it_by_its_thread_and_counts_steps_and_messages(
    react: ReactRun, react_client: TestClient
) -> None:
    page = react_client.get(branch_url(react.main_branch))
    head = text_of(page.text.split("<h1", 1)[1].split('class="split', 1)[0])
    assert react.thread_id in head and "step" in head and "message" in head
    assert "commits" not in head
    overview = react_client.get("/").text
    assert f">{react.thread_id}</a>" in overview


def test_a_step_page_shows_state_diff_hidden_rows_and_raw_values(
    react: ReactRun, react_client: TestClient
) -> None:
    listed = react_client.get(branch_url(react.main_branch, ".json")).json()["story"]["steps"]
    last = listed["steps"][-1]
    url = step_url(react.main_branch, last["version"])
    data = react_client.get(url.replace(f"/{last['version']}", f"/{last['version']}.json")).json()
    assert data["step"]["id"] == last["id"] and data["previous"]["version"] < last["version"]
    assert data["hidden_count"] > 0 and data["visible_count"] > 0
    assert data["hidden_count"] == sum(row["hidden"] for row in data["rows"])
    # The page lists the step's events on their own, hidden or not.
    state_rows = [row for row in data["rows"] if row["change"]["primitive"] != "events"]
    hidden_state = sum(row["hidden"] for row in state_rows)
    hidden = [row["change"]["key"] for row in data["rows"] if row["hidden"]]
    assert "checkpoint" in hidden
    assert "messages" in data["state"]
    page = react_client.get(url)
    assert page.status_code == 200 and "<html" in page.text
    shown = words(page.text)
    assert f"show {hidden_state} hidden" in shown
    assert react.answer in shown  # what the step said
    # The message the step added reads as a line in its diff row, its JSON folded.
    diff = text_of(page.text.split('id="step-diff"', 1)[1].split('class="hidden-rows"', 1)[0])
    assert f"ai: {react.answer}" in diff
    assert "raw stored JSON" in shown and "State as of this step" in shown
    visible, rest = page.text.split('class="hidden-rows"', 1)
    assert "channel_versions" not in text_of(visible.split('id="step-diff"', 1)[1])
    assert "channel_versions" in text_of(rest.split("State as of this step", 1)[0])
    fragment = react_client.get(url, headers=HX)
    assert "<html" not in fragment.text and 'class="step-detail"' in fragment.text


def test_every_step_of_a_plain_branch_opens_too(client: TestClient) -> None:
    steps = client.get("/branches/research/steps.json").json()
    assert steps["total"] == 34 and len(steps["steps"]) == 34
    for step in steps["steps"]:
        page = client.get(step_url("research", step["version"]))
        assert page.status_code == 200, step
    note = next(s for s in steps["steps"] if s["label"] == "note, tool.call")
    detail = client.get(step_url("research", note["version"], ".json")).json()
    paths = {row["change"]["path"] for row in detail["rows"]}
    assert "$.sources[2]" in paths or any(p.startswith("$.findings") for p in paths)
    events = [
        row["change"]["key"] for row in detail["rows"] if row["change"]["primitive"] == "events"
    ]
    assert events == [str(n) for n in note["events"]]
    page = client.get(step_url("research", note["version"])).text
    assert "Events it appended" in page and 'href="/branches/research/events/' in page


def test_steps_page_by_page(tmp_path: Path) -> None:
    with rewinddb.open(tmp_path / "db") as db:
        db.branches.fork("default", "long")
        for n in range(120):
            db.at("long").kv.put("n", n)
    with TestClient(create_app(tmp_path / "db"), base_url="http://localhost") as client:
        page = client.get("/branches/long").text
        assert page.count('class="step-open"') == 50
        older = re.search(r'hx-get="(/branches/long/steps\?before=\d+)"', page)
        assert older is not None
        rows = client.get(older.group(1), headers=HX).text
        assert "<html" not in rows and rows.count('class="step-open"') == 50
        versions: list[int] = []
        before = None
        while True:
            query = "" if before is None else f"?before={before}"
            chunk = client.get(f"/branches/long/steps.json{query}").json()
            versions = [step["version"] for step in chunk["steps"]] + versions
            before = chunk["older"]
            if before is None:
                break
        assert versions == sorted(versions) and len(versions) == 120
        # Before the first step: nothing there, and the steps begin after version 0.
        assert client.get("/branches/long/steps.json?before=1").json()["newer"] == 0
        # Without htmx the link is a whole page that starts at those steps.
        whole = client.get(older.group(1))
        assert "<html" in whole.text and whole.text.count('class="step-open"') == 50


def test_a_long_conversation_pages_back_to_its_first_message(
    tmp_path: Path, record_chat: Callable[..., str]
) -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    turns = [
        [HumanMessage(f"question {n}", id=f"h{n}"), AIMessage(f"answer {n}", id=f"a{n}")]
        for n in range(40)
    ]
    branch = record_chat(tmp_path / "db", turns)
    with TestClient(create_app(tmp_path / "db"), base_url="http://localhost") as client:
        page = client.get(branch_url(branch)).text
        assert "answer 39" in page and "question 0" not in page
        earlier = re.search(r'hx-get="([^"]*/transcript\?before=\d+)"', page)
        assert earlier is not None and "earlier messages" in page
        fragment = client.get(html.unescape(earlier.group(1)), headers=HX).text
        assert "<html" not in fragment and "question 0" in fragment
        assert "answer 39" not in fragment
        data = client.get(branch_url(branch, "/transcript.json")).json()["transcript"]
        assert data["total"] == 80 and data["start"] == 30 and len(data["messages"]) == 50
        assert (
            client.get(branch_url(branch, "/transcript.json?before=30")).json()["transcript"][
                "start"
            ]
            == 0
        )


def test_checkpoint_ids_lead_to_their_steps(react: ReactRun, react_client: TestClient) -> None:
    url = branch_url(react.fork_branch, f"/checkpoints/{react.edited_checkpoint_id}")
    moved = react_client.get(url, follow_redirects=False)
    assert moved.status_code == 303 and "/steps/" in moved.headers["location"]
    page = react_client.get(url)
    assert page.status_code == 200 and react.edited_checkpoint_id in page.text
    assert "source update" in words(page.text)
    twin = react_client.get(url + ".json")
    assert twin.json()["step"]["id"] == react.edited_checkpoint_id
    old = branch_url(react.main_branch, f"/checkpoints/{react.forked_from_checkpoint_id}")
    assert react.forked_from_checkpoint_id in react_client.get(old).text


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/steps/abc", 400),
        ("/steps/-1", 400),
        ("/steps/1e3", 400),
        ("/steps/%C2%B2", 400),  # a superscript two is a digit to str.isdigit
        ("/steps/99999999999999999999", 400),
        ("/steps/999999", 404),
        ("/checkpoints/nope", 404),
        ("/transcript?before=-1", 422),
        ("/steps?before=x", 422),
    ],
)
def test_bad_step_input_is_a_page_not_a_500(
    react: ReactRun, react_client: TestClient, path: str, status: int
) -> None:
    page = react_client.get(branch_url(react.main_branch, path))
    assert page.status_code == status, page.text
    assert "<html" in page.text and "error code" in page.text
    route, _, query = path.partition("?")
    twin = react_client.get(
        branch_url(react.main_branch, route + ".json") + (f"?{query}" if query else "")
    )
    assert twin.status_code == status and twin.json()["error"]["code"]


@pytest.mark.parametrize(
    "url",
    [
        "/branches/nope/steps/1",
        "/branches/nope/steps/1.json",
        "/branches/nope/checkpoints/x",
        "/branches/nope/transcript",
        "/branches/nope/steps",
        "/branches/research/checkpoints/x",  # plain steps have no ids
    ],
)
def test_unknown_threads_and_checkpoints_are_404(client: TestClient, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 404
    if url.endswith(".json"):
        assert response.json()["error"]["code"].startswith("not_found")
    else:
        assert "404 not found" in response.text


#: Agent text no serde wrote, in a damaged copy of the ReAct run.
HOSTILE = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>"


@pytest.fixture(scope="module")
def damaged(
    react: ReactRun, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[TestClient, int]]:
    """The ReAct run with its thread's ``messages`` channel and checkpoint record
    overwritten (in one commit) by encodings no serde of LangGraph's wrote (another
    serde's, a damaged row), hostile text among them; the client and that version."""
    copy = tmp_path_factory.mktemp("damaged") / "agent"
    shutil.copytree(react.directory, copy)
    with rewinddb.open(copy) as db:
        thread = db.at(react.main_branch)
        items = ["pickle:AAAA", ["custom", "AAAA"], 12, HOSTILE]
        with thread.transaction():
            thread.kv.put("channel/messages", {"type": "list", "items": items, "version": 1})
            thread.kv.put("checkpoint", ["custom", HOSTILE])
        version = db.version
    with TestClient(create_app(copy), base_url="http://localhost") as client:
        yield client, version


def assert_escaped(page: str) -> None:
    assert "<script>alert" not in page and "<img src=x" not in page


def test_undecodable_channels_are_shown_as_such(
    react: ReactRun, damaged: tuple[TestClient, int]
) -> None:
    client, version = damaged
    pages = {}
    for name, url in [
        ("thread", branch_url(react.main_branch)),
        ("step", step_url(react.main_branch, version)),
        ("events", branch_url(react.main_branch) + "?view=events"),
        ("compare", f"/compare?a={react.main_branch}&b={react.fork_branch}"),
        ("overview", "/"),
    ]:
        response = client.get(url)
        assert response.status_code == 200, (url, response.text[:500])
        assert_escaped(response.text)
        pages[name] = response.text
    # The conversation: each item no serde can read is an "undecodable" message, its
    # stored text shown as text.
    chat = pages["thread"][pages["thread"].index("Conversation") :]
    assert words(chat).count("undecodable") >= 3, words(chat)[:800]
    assert HOSTILE in text_of(chat) and "&lt;script&gt;" in chat
    # The damaged checkpoint is the step "undecodable", in the steps beside the stored
    # events and on its own page.
    assert "Step -1: undecodable" in words(pages["step"])
    assert "-1 undecodable" in words(pages["events"]) and 'class="event-row"' in pages["events"]
    # Compared with the step before it, it is the first step that differs.
    previous = re.findall(r'href="(/compare\?a=[^"]+)"', pages["step"])
    assert previous, "the step page links its compare with the previous step"
    compare = client.get(html.unescape(previous[0]))
    assert compare.status_code == 200 and "<html" in compare.text
    assert_escaped(compare.text)
    assert "first differing step step -1: undecodable" in words(compare.text)
    # The JSON twins answer too, the stored text as data.
    steps = client.get(branch_url(react.main_branch, "/steps.json")).json()["steps"]
    assert steps[-1]["label"] == "undecodable" and steps[-1]["version"] == version
    detail = client.get(step_url(react.main_branch, version) + ".json")
    assert detail.status_code == 200
    # The overview's graph names the step too.
    hovers = overview_figure(client)["data"][-1]["hovertext"]
    assert any(h.endswith("<br>step -1: undecodable") for h in hovers)
    assert not any("<script" in h for h in hovers)


# --- the overview -----------------------------------------------------------------------


def test_the_overview_lists_attempts_and_hides_internal_branches(
    react: ReactRun, react_client: TestClient
) -> None:
    data = react_client.get("/.json").json()
    names = [row["name"] for row in data["branches"]]
    assert names == [react.main_branch, react.fork_branch]
    assert set(data["hidden"]) == {"default", "lg-index"}
    assert {b["name"] for b in data["graph"]["branches"]} == set(names)
    assert {p["branch"] for p in data["graph"]["points"]} == set(names)
    rows = {row["name"]: row for row in data["branches"]}
    assert rows[react.main_branch]["outcome"] == react.answer
    assert rows[react.main_branch]["status_text"] == "finished"
    assert rows[react.fork_branch]["fork"]["label"].startswith("edit of step")
    assert rows[react.fork_branch]["own_events"] < rows[react.fork_branch]["events"]
    page = react_client.get("/").text
    shown = words(page)
    assert "lg-index" not in page.split('class="branches attempts"')[1]
    assert "2 internal branches hidden (default, lg-index)" in shown
    assert react.answer in shown and "edit of step" in shown
    assert "● event" in shown and "■ commit" in shown  # the legend
    assert 'id="graph" class="graph" data-figure=' in page and 'tabindex="0"' in page
    everything = react_client.get("/?all=1").text
    assert 'href="/branches/lg-index"' in everything
    assert [r["name"] for r in react_client.get("/.json?all=1").json()["branches"]][:2] == [
        "default",
        "lg-index",
    ]
    assert "all=1" in re.search(r'hx-get="(/fragments/overview[^"]*)"', everything).group(1)


def overview_figure(client: TestClient) -> dict:
    """The overview's figure labelled as the story tells it (``figure_data`` given the
    database and the table's rows, as the overview draws it)."""
    from rewinddb.web import queries
    from rewinddb.web.figure import figure_data

    db: rewinddb.Database = client.app.state.db  # type: ignore[attr-defined]
    data = queries.overview(db)
    return figure_data(data["graph"], data["version"], db=db, rows=data["branches"])


def test_the_overview_graph_names_lanes_and_dots_as_the_story_does(
    react: ReactRun, react_client: TestClient
) -> None:
    figure = overview_figure(react_client)
    thread = react.main_branch.removeprefix("lg/")
    fork = react.fork_branch.removeprefix("lg/")
    ticks = figure["layout"]["yaxis"]["ticktext"]
    assert ticks[0] == thread and ticks[1].startswith(f"{fork}<br>edit of step ")
    assert not any("lg/" in tick for tick in ticks)
    dots = figure["data"][-1]
    hovers = dots["hovertext"]
    assert len(hovers) == len(dots["x"])
    # Storage words are gone: no stored type, no payload JSON, no raw branch name.
    for hover in hovers:
        assert "langgraph." not in hover and "{" not in hover and "lg/" not in hover, hover
    squares = [h for h, s in zip(hovers, dots["marker"]["symbol"], strict=True) if s == "square"]
    circles = [h for h, s in zip(hovers, dots["marker"]["symbol"], strict=True) if s == "circle"]
    assert squares and circles
    assert all(re.search(r"<br>step -?\d+: \S", h) for h in squares), squares[:3]
    assert all(re.search(r"<br>event (of|after) step -?\d+: \S", h) for h in circles)
    assert any(re.search(r"<br>step \d+: agent \(loop\)<br>ai: ", h) for h in squares)
    assert any(re.search(r"<br>step \d+: tools \(loop\)<br>tool: ", h) for h in squares)
    edited = [h for h in squares if h.startswith(f"{fork} v") and "<br>step " in h]
    assert re.search(r"<br>step \d+: update<br>ai: calls ", edited[0]), edited[:2]
    # Each dot's hover names the branch (by title) and version its customdata opens.
    for hover, (_, point) in zip(hovers, dots["customdata"], strict=True):
        branch, _, version = point.rpartition("@")
        assert hover.startswith(f"{branch.removeprefix('lg/')} v{version}"), (hover, point)


def test_plain_branches_keep_their_stored_labels_in_the_graph(client: TestClient) -> None:
    figure = overview_figure(client)
    names = [row["name"] for row in client.get("/.json").json()["branches"]]
    assert figure["layout"]["yaxis"]["ticktext"] == names
    hovers = figure["data"][-1]["hovertext"]
    run = [h for h in hovers if h.startswith("run-1 v") and " #0 " in h]
    assert run and '"tool"' in run[0] and "&quot;" not in run[0], run


def test_hostile_titles_and_messages_are_escaped_in_the_graph(
    tmp_path: Path, record_chat: Callable[..., str]
) -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    turns = [[HumanMessage(SCRIPT, id="h0"), AIMessage(f"done {IMG}", id="a0")]]
    record_chat(tmp_path / "db", turns, thread_id=f"t{SCRIPT}")
    with TestClient(create_app(tmp_path / "db"), base_url="http://localhost") as client:
        figure = overview_figure(client)
    texts = [*figure["layout"]["yaxis"]["ticktext"], *figure["data"][-1]["hovertext"]]
    assert any("&lt;script&gt;" in text for text in texts)
    assert any("ai: done &quot;&gt;&lt;img" in t or 'ai: done "&gt;&lt;img' in t for t in texts)
    for text in texts:
        assert "<script" not in text and "<img" not in text, text


def test_graph_points_open_their_steps_and_events(
    react: ReactRun, react_client: TestClient
) -> None:
    page = react_client.get("/").text
    figure = json.loads(html.unescape(re.search(r'data-figure="([^"]*)"', page).group(1)))
    targets = [url for url, _ in figure["data"][-1]["customdata"]]
    steps = [url for url in targets if "/steps/" in url]
    events = [url for url in targets if "/events/" in url]
    assert steps and events and len(steps) + len(events) == len(targets)
    for url in steps[:5] + steps[-5:] + events[:2]:
        assert react_client.get(url).status_code == 200, url


def test_an_empty_default_is_hidden_but_a_used_one_is_not(
    client: TestClient, tmp_path: Path
) -> None:
    assert "default" in [row["name"] for row in client.get("/.json").json()["branches"]]
    with rewinddb.open(tmp_path / "db") as db:
        db.branches.fork("default", "only")
        db.at("only").events.append("run.end", {"answer": "42"})
    with TestClient(create_app(tmp_path / "db"), base_url="http://localhost") as fresh:
        data = fresh.get("/.json").json()
        assert [row["name"] for row in data["branches"]] == ["only"] and data["hidden"] == [
            "default"
        ]
        assert data["branches"][0]["outcome"] == "42"
        assert data["branches"][0]["status"] == "finished"


# --- compare by content -----------------------------------------------------------------


def test_compare_a_fork_with_its_thread_leads_with_the_first_differing_step(
    react: ReactRun, react_client: TestClient
) -> None:
    query = {"a": react.main_branch, "b": react.fork_branch}
    data = react_client.get("/compare.json", params=query).json()
    assert data == react_client.get("/api/compare", params=query).json()
    told = data["comparison"]
    assert told["a"]["outcome"] == react.answer and told["b"]["outcome"] == react.fork_answer
    assert told["first_b"]["source"] == "update"
    assert told["first_a"]["version"] > told["shared"]["version"]
    assert all(change["primitive"] != "events" for change in data["diff"]["changes"])
    assert data["diff_events_left_out"] > 0
    page = react_client.get("/compare", params=query).text
    lead = words(page.split('class="event-logs"')[0])
    assert "the first step that differs" in lead and "first differing step" in lead
    assert react.answer in lead and react.fork_answer in lead
    assert json.dumps(react.edited_args, separators=(",", ":")) in lead
    # Bookkeeping rows are behind a toggle; the logs of LangGraph writes start closed.
    assert "hidden" in words(page.split("state diff a → b")[1])
    assert '<details class="event-logs">' in page
    assert len(page) < 200_000


def test_the_seed_attempts_compare_by_content(tutorial_client: TestClient) -> None:
    data = tutorial_client.get("/compare.json?a=run-1&b=run-3").json()
    assert data["common_prefix"] == 1  # both began by reading the same thing
    told = data["comparison"]
    assert told["first_a"] is not None and told["first_b"] is not None
    assert told["a"]["outcome"] and told["a"]["outcome"] != told["b"]["outcome"]
    page = tutorial_client.get("/compare?a=run-1&b=run-3").text
    assert "first differing step" in page and '<details class="event-logs" open>' in page


def test_a_bad_compare_input_keeps_the_form(client: TestClient) -> None:
    page = client.get("/compare", params={"a": "nope@3", "b": "run-2"})
    assert page.status_code == 404
    assert 'name="a" value="nope@3"' in page.text and 'name="b" value="run-2"' in page.text
    assert "not found" in page.text and "nope" in words(page.text)
    bad = client.get("/compare", params={"a": "run-1@99999", "b": "run-2"})
    assert bad.status_code == 404 and 'value="run-1@99999"' in bad.text
    word = client.get("/compare", params={"a": "run-1@abc", "b": "run-2"})
    assert word.status_code in (400, 422) and 'value="run-1@abc"' in word.text
    assert "must be a number" in words(word.text)


def test_a_long_compare_is_capped(tmp_path: Path) -> None:
    with rewinddb.open(tmp_path / "db") as db:
        for name in ("a", "b"):
            db.branches.fork("default", name)
            view = db.at(name)
            for n in range(300):
                with view.transaction():
                    view.events.append("step", {"n": n, "by": name})
                    view.kv.put(f"{name}-{n}", "x" * 500)
    with TestClient(create_app(tmp_path / "db"), base_url="http://localhost") as client:
        page = client.get("/compare?a=a&b=b").text
        assert page.count('<li class="only') <= 80  # 40 events a side
        assert "more events" in page and "more change" in page
        assert len(page) < 400_000


# --- plain runs keep working ------------------------------------------------------------


@pytest.fixture(scope="module")
def tutorial_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """The database "Build an agent with rewindable state" leaves behind."""
    where = tmp_path_factory.mktemp("tutorial")
    subprocess.run(
        [sys.executable, str(EXAMPLES / "agent_attempts.py")],
        cwd=where,
        check=True,
        capture_output=True,
        timeout=120,
    )
    with TestClient(create_app(where / "agent"), base_url="http://localhost") as client:
        yield client


def test_the_seed_attempts_show_outcome_steps_and_diffs(tutorial_client: TestClient) -> None:
    data = tutorial_client.get("/.json").json()
    rows = {row["name"]: row for row in data["branches"]}
    for name in ("run-1", "run-2", "run-3"):
        assert rows[name]["outcome"], name
        page = tutorial_client.get(f"/branches/{name}")
        assert page.status_code == 200
        assert 'class="event-row"' in page.text and 'class="step-open"' in page.text
        steps = tutorial_client.get(f"/branches/{name}/steps.json").json()["steps"]
        own = [step for step in steps if not step["inherited"]]
        assert own and tutorial_client.get(step_url(name, own[-1]["version"])).status_code == 200
        assert "fork point" in page.text


def test_the_demo_research_run_reads_better(client: TestClient) -> None:
    page = client.get("/branches/research").text
    shown = words(page)
    assert "outcome FUND-02" in shown and "finished" in shown
    assert "fork of default at version" in shown
    assert "Steps (34 steps)" in shown and "hash chain verified (37 events)" in shown


def test_the_react_example_answers_help_without_recording(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "langgraph_react.py"), "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: langgraph_react.py") and "directory" in done.stdout
    assert list(tmp_path.iterdir()) == []  # no database named --help


# --- words for web users ----------------------------------------------------------------


@pytest.mark.parametrize("url", ["/nothing/here", "/branches/research/nothing", "/static/nope.css"])
def test_an_unknown_route_is_the_explorers_404_page(client: TestClient, url: str) -> None:
    page = client.get(url)
    assert page.status_code == 404
    assert page.headers["content-type"].startswith("text/html")
    assert "404 not found" in page.text and 'href="/"' in page.text
    assert "Content-Security-Policy" in page.headers


@pytest.mark.parametrize("url", ["/nothing/here.json", "/api/nothing", "/api/branches/x/y/z"])
def test_an_unknown_json_route_answers_json(client: TestClient, url: str) -> None:
    page = client.get(url)
    assert page.status_code == 404 and page.json()["error"]["code"] == "not_found.page"


def test_a_wrong_method_is_a_page_too(client: TestClient) -> None:
    page = client.post("/", data={"name": "x"})
    assert page.status_code == 405 and "error code" in page.text
    assert page.headers["allow"] == "GET"


def test_the_branch_404_speaks_to_a_web_user(client: TestClient) -> None:
    page = client.get("/branches/nope")
    assert page.status_code == 404
    shown = words(page.text)
    assert shown.count("not_found.engine.branch") == 1
    assert "db.branches" not in shown and "the overview lists the branches" in shown
    twin = client.get("/branches/nope.json").json()["error"]
    assert twin["code"] == "not_found.engine.branch" and "[" not in twin["message"]


def test_counts_agree_with_their_nouns(tmp_path: Path) -> None:
    with rewinddb.open(tmp_path / "db") as db:
        db.branches.fork("default", "one")
        view = db.at("one")
        with view.transaction():
            view.events.append("run.end", {"answer": "only"})
            view.kv.put("k", {"a": [1]})
    with TestClient(create_app(tmp_path / "db"), base_url="http://localhost") as client:
        pages = [
            client.get("/").text,
            client.get("/branches/one").text,
            client.get("/branches/one/events/0").text,
            client.get("/branches/one/keys/k?space=kv").text,
            client.get("/compare?a=one&b=default").text,
            client.get(step_url("one", 1)).text,
        ]
        for page in pages:
            shown = words(page)
            for wrong in re.findall(
                r"\b1 (?:keys|items|events|commits|versions|steps|branches|attempts|messages)\b",
                shown,
            ):
                pytest.fail(f"{wrong!r} in {shown[:200]}")
        shown = words(pages[2])
        assert "(1 key)" in shown and "{1 key}" in shown and "[1 item]" in shown
        assert "1 event" in words(pages[1]) and "1 attempt" in words(pages[0])


def test_the_merge_receipt_counts_agree_with_its_nouns(tmp_path: Path) -> None:
    with rewinddb.open(tmp_path / "db") as db:
        db.kv.put("plan", "a")
        db.branches.fork("default", "one")
        db.branches.fork("default", "two")
        one = db.at("one")
        with one.transaction():
            one.kv.put("plan", "b")
            one.events.append("run.end", {"answer": "b"})
        db.kv.put("plan", "c")
        two = db.at("two")
        for key in ("x", "y"):
            two.kv.put(key, 1)
        two.events.append("step", {})
        two.events.append("run.end", {"answer": "two"})
    app = create_app(tmp_path / "db", allow_writes=True)
    with TestClient(app, base_url="http://localhost") as client:
        token = app.state.csrf_token

        def merge(source: str, **form: str) -> str:
            data = {"source": source, "target": "default", "csrf_token": token, **form}
            response = client.post("/merge", data=data)
            assert response.status_code == 200, response.text
            return words(response.text.split('class="receipt', 1)[1].split("</p>", 1)[0])

        one_each = merge("one", strategy="source")
        assert "1 change applied to 1 key; 1 conflict (1 took the source, 0 kept" in one_each
        assert "1 event carried" in one_each
        several = merge("two")
        assert "2 changes applied to 2 keys; 0 conflicts; 2 events carried" in several
        assert "nothing new to merge" in merge("two")


# --- agent state stays text -------------------------------------------------------------

SCRIPT = "<script>alert('chat')</script>"
IMG = '"><img src=x onerror=alert(1)>'


def test_hostile_messages_and_tool_arguments_render_as_text(
    tmp_path: Path, record_chat: Callable[..., str]
) -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    call = {"name": f"tool{IMG}", "args": {SCRIPT: IMG}, "id": "c1", "type": "tool_call"}
    turns = [
        [HumanMessage(SCRIPT, id="h0"), AIMessage(IMG, id="a0", tool_calls=[call])],
        [ToolMessage(SCRIPT, tool_call_id="c1", id="t0"), AIMessage(f"done {SCRIPT}", id="a1")],
    ]
    branch = record_chat(tmp_path / "db", turns, thread_id=f"t{IMG}")
    with TestClient(create_app(tmp_path / "db"), base_url="http://localhost") as client:
        pages = [client.get(branch_url(branch)).text, client.get("/").text]
        steps = client.get(branch_url(branch, "/steps.json")).json()["steps"]
        pages += [client.get(step_url(branch, step["version"])).text for step in steps]
        for page in pages:
            assert "<script>alert" not in page and "<img src=x" not in page
        chat = pages[0]
        assert html.escape(SCRIPT, quote=False) in chat or "&lt;script&gt;" in chat
        assert SCRIPT in text_of(chat) and f"tool{IMG}" in text_of(chat)
        assert f"done {SCRIPT}" in text_of(chat)


def test_an_event_of_a_thread_sets_its_bookkeeping_apart(
    react: ReactRun, react_client: TestClient
) -> None:
    length = react_client.get(branch_url(react.fork_branch, ".json")).json()["branch"]["events"]
    detail = react_client.get(branch_url(react.fork_branch, f"/events/{length - 1}.json")).json()
    rows = detail["diff"]["changes"]
    assert any(row["hidden"] for row in rows) and not all(row["hidden"] for row in rows)
    assert {row["label"] for row in rows if row["key"] == "channel/messages"} == {"messages"}
    # The page compares values decoded (the JSON as stored): its rows are its own.
    page = react_client.get(branch_url(react.fork_branch, f"/events/{length - 1}")).text
    assert re.search(r"show \d+ hidden", words(page))


def test_a_blank_thread_id_is_a_visible_link(tmp_path: Path) -> None:
    """A thread id of spaces (LangGraph accepts any text) is shown as visible spaces, not
    as a link nobody can see or click."""
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    from rewinddb.integrations.langgraph import RewindSaver

    class State(TypedDict):
        n: int

    builder = StateGraph(State)
    builder.add_node("step", lambda state: {"n": state["n"] + 1})
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    with RewindSaver.from_path(tmp_path / "agent") as saver:
        builder.compile(checkpointer=saver).invoke({"n": 0}, {"configurable": {"thread_id": " "}})
    with TestClient(create_app(tmp_path / "agent"), base_url="http://localhost") as client:
        page = client.get("/").text
    cell = page.split('class="branches attempts"')[1].split('<td class="attempt">')[1]
    link = re.search(r"<a [^>]*>([^<]*)</a>", cell)
    assert link is not None and link.group(1) == "␣", cell[:300]
