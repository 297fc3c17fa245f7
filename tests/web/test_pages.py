"""Every route: the full page, the htmx fragment, and the JSON twin."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import rewinddb
from rewinddb.web import create_app
from rewinddb.web.urls import tilde_decode, tilde_encode

HX = {"HX-Request": "true"}


def test_overview_draws_the_graph_and_the_branch_table(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert 'data-figure="' in page.text
    for name in ("run-1", "research-retry-2"):
        assert f'href="/branches/{name}"' in page.text
    data = client.get("/.json").json()
    assert data == client.get("/api/overview").json()
    rows = {row["name"]: row for row in data["branches"]}
    assert rows["research-retry-2"]["parent"] == "research-retry"
    assert rows["research"]["events"] == 37
    kinds = {edge["kind"] for edge in data["graph"]["edges"]}
    assert kinds == {"fork", "merge"}


def test_overview_fragment_is_empty_until_the_version_moves(client: TestClient) -> None:
    stamp = client.get("/api/version").json()["stamp"]
    assert client.get(f"/fragments/overview?since={stamp}").status_code == 204
    fresh = client.get("/fragments/overview?since=0.0.0")
    assert fresh.status_code == 200 and 'id="overview"' in fresh.text


def test_branch_page_lists_the_first_events_and_filters(client: TestClient) -> None:
    page = client.get("/branches/research")
    assert page.status_code == 200
    assert len(re.findall(r'class="event-row"', page.text)) == 37
    notes = client.get("/branches/research.json?type=note").json()
    events = notes["timeline"]["events"]
    assert events and {e["event_type"] for e in events} == {"note"}
    found = client.get("/branches/research.json?q=FUND-08").json()["timeline"]["events"]
    assert [e["payload"]["text"] for e in found] == ["fund FUND-08 charges 4 bps"]


def test_timeline_pages_and_live_polling(client: TestClient) -> None:
    page = client.get("/api/branches/research/events?limit=10").json()
    assert [e["sequence"] for e in page["events"]] == list(range(10)) and page["more"]
    rest = client.get("/branches/research/timeline.json?after=30").json()
    assert [e["sequence"] for e in rest["events"]] == list(range(31, 37))
    assert not rest["more"]
    fragment = client.get("/branches/research/timeline?after=30")
    assert 'id="event-31"' in fragment.text and 'hx-trigger="every 1s"' in fragment.text
    assert client.get("/branches/research/timeline?after=36&poll=1").status_code == 204


def test_event_fragment_shows_state_diff_and_blame(client: TestClient) -> None:
    fragment = client.get("/branches/research/events/5", headers=HX)
    assert fragment.status_code == 200
    assert "<html" not in fragment.text  # only the fragment
    assert 'data-sequence="5"' in fragment.text
    assert "$.sources[1]" in fragment.text  # the diff from event #4
    assert "last changed" in fragment.text
    full = client.get("/branches/research/events/5")
    assert "<html" in full.text and 'data-sequence="5"' in full.text  # the permalink
    detail = client.get("/branches/research/events/5.json").json()
    assert detail == client.get("/api/branches/research/events/5").json()
    assert detail["previous"] == {
        "branch": "research",
        "version": detail["point"]["version"] - 1,
        "label": "event #4",
    }
    paths = {c["path"] for c in detail["diff"]["changes"]}
    assert "$.sources[1]" in paths
    notebook = next(row for row in detail["state"]["json"] if row["key"] == "notebook")
    assert notebook["last_write"]["event"]["sequence"] == 5


def test_events_of_one_version_each_show_their_own_change(client: TestClient) -> None:
    """#6 (a search) and #7 (a note) were committed in one version: #7, the one blame
    names, shows the version's state change and itself; #6 shows itself, never #7."""
    six = client.get("/branches/research/events/6.json").json()
    seven = client.get("/branches/research/events/7.json").json()
    assert six["event"]["version"] == seven["event"]["version"]
    assert six["together"] == seven["together"] == [6, 7]
    assert (six["state_with"], seven["state_with"]) == (7, None)
    assert (
        six["previous"]
        == seven["previous"]
        == {
            "branch": "research",
            "version": six["event"]["version"] - 1,
            "label": "event #5",
        }
    )

    def rows(detail: dict) -> set[tuple[str, str, str]]:
        return {(c["primitive"], c["key"], c["path"]) for c in detail["diff"]["changes"]}

    assert rows(six) == {("events", "6", "$")}
    assert ("events", "6", "$") not in rows(seven) and ("events", "7", "$") in rows(seven)
    assert ("json", "notebook", "$.sources[2]") in rows(seven)
    notebook = next(row for row in seven["state"]["json"] if row["key"] == "notebook")
    assert notebook["last_write"]["event"]["sequence"] == 7  # blame agrees
    page = client.get("/branches/research/events/7", headers=HX).text
    assert "$.sources[2]" in page and "no changes" not in page
    page = client.get("/branches/research/events/6", headers=HX).text
    assert "$.sources[2]" not in page and "event #7" not in page
    assert 'shown with <a href="/branches/research/events/7"' in page


def test_inherited_events_are_read_where_they_happened(client: TestClient) -> None:
    detail = client.get("/branches/research-retry/events/3.json").json()
    assert detail["event"]["branch"] == "research"  # inherited from the parent
    assert detail["point"]["branch"] == "research"
    first = client.get("/branches/research/events/0.json").json()
    assert first["previous"]["branch"] == "default"  # inherited from default


def test_key_history_page(client: TestClient) -> None:
    page = client.get("/branches/research/keys/notebook?space=json")
    assert page.status_code == 200 and "$.findings.f2" in page.text
    data = client.get("/branches/research/keys/notebook.json?space=json").json()
    assert data == client.get("/api/branches/research/keys/notebook?space=json").json()
    assert len(data["versions"]) == 25
    assert data["versions"][0]["changes"][0]["kind"] == "added"


def test_key_history_pages_go_back_to_the_first_version(client: TestClient) -> None:
    """``limit`` versions a page, ``older`` is the next page's ``before``; following it
    gives every version once, each with the diff from the one before it."""
    whole = client.get("/branches/research/keys/notebook.json?space=json").json()
    assert whole["older"] is None
    seen: list[dict] = []
    url = "/branches/research/keys/notebook.json?space=json&limit=10"
    while url:
        page = client.get(url).json()
        api = url.replace("/branches/", "/api/branches/").replace(".json", "")
        assert page == client.get(api).json()
        seen = page["versions"] + seen
        older = page["older"]
        url = (
            f"/branches/research/keys/notebook.json?space=json&limit=10&before={older}"
            if older
            else ""
        )
    assert seen == whole["versions"]
    html = client.get("/branches/research/keys/notebook?space=json&limit=10").text
    assert "the newest 10 versions" in html
    older = client.get("/branches/research/keys/notebook.json?space=json&limit=10").json()["older"]
    assert f"&amp;before={older}&amp;limit=10" in html  # the link keeps the page size
    for bad in ("limit=0", "limit=1001", "before=0", "before=x", f"before={2**63}"):
        response = client.get(f"/branches/research/keys/notebook?space=json&{bad}")
        assert response.status_code == 422, bad


def test_older_key_versions_page_through_inherited_history(tmp_path: Path) -> None:
    """Pages read on the branch itself, through its lineage: an ancestor deleted, or its
    name reused by another branch, changes nothing."""
    with rewinddb.open(tmp_path / "db") as db:
        db.kv.put("k", 0)
        db.branches.fork("default", "a")
        db.at("a").kv.put("k", 1)
        db.at("a").kv.put("k", 2)
        db.branches.fork("a", "b")
        db.at("b").kv.put("k", 3)
        db.branches.delete("a")
        db.branches.fork("default", "a", at=1)  # an unrelated branch with the old name
        db.at("a").kv.put("k", "other")
    with TestClient(create_app(tmp_path / "db"), base_url="http://localhost") as client:
        values, before = [], None
        while True:
            query = "" if before is None else f"&before={before}"
            page = client.get(f"/branches/b/keys/k.json?limit=1{query}").json()
            values = [v["value"] for v in page["versions"]] + values
            before = page["older"]
            if before is None:
                break
        assert values == [0, 1, 2, 3]
        html = client.get("/branches/b/keys/k?limit=1&before=4").text
        assert "older versions" in html and "before version 4" in html
        assert client.get("/branches/b/keys/k?before=1").status_code == 404


def test_compare_aligns_logs_and_marks_the_first_divergence(client: TestClient) -> None:
    data = client.get("/compare.json?a=run-1&b=run-2").json()
    assert data == client.get("/api/compare?a=run-1&b=run-2").json()
    # Both attempts began by reading the same portfolio: shared by content.
    assert data["common_prefix"] == 1
    assert data["first_divergent"] == {"a": 1, "b": 1}
    retry = client.get("/compare.json?a=research&b=research-retry").json()
    assert retry["first_divergent"]["a"] == retry["common_prefix"]
    assert retry["common_prefix"] > 10
    page = client.get("/compare?a=research&b=research-retry")
    assert "first divergent" in page.text and "state diff" in page.text
    at = client.get("/compare.json?a=research@30&b=research@40").json()
    assert (at["a"]["version"], at["b"]["version"]) == (30, 40)
    assert client.get("/compare").status_code == 200  # the empty form


def test_compare_points_of_branches_named_like_points(tmp_path: Path) -> None:
    with rewinddb.open(tmp_path / "db") as db:
        db.branches.fork("default", "run")
        for n in range(6):
            db.at("run").kv.put("n", n)
        db.branches.fork("run", "run@5", at=2)
        db.at("run@5").kv.put("n", "own")
    with TestClient(create_app(tmp_path / "db"), base_url="http://localhost") as client:
        point = client.get("/compare.json?a=run@5&b=run@5@7").json()  # run at 5; run@5 at 7
        assert (point["a"]["branch"], point["a"]["version"]) == ("run", 5)
        assert (point["b"]["branch"], point["b"]["version"]) == ("run@5", 7)
        whole = client.get("/compare.json?a=run@5@2&b=run").json()
        assert (whole["a"]["branch"], whole["a"]["version"]) == ("run@5", 2)
        page = client.get("/compare?a=run@5@7&b=run@5").text
        for link in re.findall(r'href="(/compare[^"]*)"', page):  # its own links resolve
            assert client.get(link.replace("&amp;", "&")).status_code == 200


def test_whole_values_load_on_demand(client: TestClient) -> None:
    full = client.get("/branches/research/value?space=json&key=notebook")
    assert full.status_code == 200 and "FUND-02" in full.text


@pytest.mark.parametrize(
    "url",
    [
        "/branches/nope",
        "/branches/nope.json",
        "/branches/research/events/999",
        "/branches/research/events/999.json",
        "/api/branches/research/events/999",
        "/branches/research/keys/never?space=kv",
        "/compare?a=run-1@99999&b=run-2",
        "/compare?a=nope&b=run-2",
        "/branches/~ZZ",
        "/branches/research/value?space=kv&key=never",
    ],
)
def test_unknown_things_are_404_never_500(client: TestClient, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 404, response.text
    if url.startswith("/api/") or ".json" in url:
        assert response.json()["error"]["code"]
    else:
        assert "not found" in response.text


@pytest.mark.parametrize(
    "url",
    [
        "/branches/research/events/x",
        "/branches/research/events/-1",
        "/api/branches/research/events/x",
        "/api/branches/research/events?limit=0",
        "/branches/research/timeline?after=abc",
        "/branches/research/keys/notebook?space=nope",
        "/api/branches/research/keys/notebook?space=nope",
        "/compare.json",
    ],
)
def test_malformed_parameters_are_404_or_422(client: TestClient, url: str) -> None:
    response = client.get(url)
    assert response.status_code in (404, 422), (response.status_code, response.text)


def test_names_with_slashes_dots_and_tildes_round_trip() -> None:
    for name in ["lg/thread~1", "a.json", "é x", "run-1", "~7E"]:
        assert tilde_decode(tilde_encode(name)) == name
        assert "." not in tilde_encode(name) and "/" not in tilde_encode(name)


def test_static_assets_are_served_from_the_package(client: TestClient) -> None:
    htmx = client.get("/static/htmx-2.0.11.min.js")
    assert htmx.status_code == 200 and "htmx" in htmx.text[:2000]
    plotly = client.get("/static-plotly/plotly.min.js", headers={"Accept-Encoding": "gzip"})
    assert plotly.status_code == 200 and plotly.headers["content-encoding"] == "gzip"
    assert "max-age" in plotly.headers["cache-control"]
    page = client.get("/")
    assert "https://" not in re.sub(r'href="https://[^"]*"', "", page.text.split("<main>")[0])


def test_openapi_describes_the_json_api(client: TestClient) -> None:
    schema = client.get("/api/openapi.json").json()
    paths = set(schema["paths"])
    assert "/api/branches/{branch}/events/{sequence}" in paths
    assert "/api/compare" in paths
    assert all(path.startswith("/api/") for path in paths)


def test_the_explorer_serves_a_postgresql_database(postgres_url: str) -> None:
    from rewinddb.demo import build_demo
    from rewinddb.web import create_app

    build_demo(postgres_url).close()
    with TestClient(create_app(postgres_url), base_url="http://localhost") as client:
        assert client.app.state.db.readonly  # type: ignore[attr-defined]
        assert "research-retry-2" in client.get("/").text
        detail = client.get("/branches/research/events/7.json").json()
        assert "$.sources[2]" in {c["path"] for c in detail["diff"]["changes"]}
        assert client.get("/branches/research", params={"q": "fund-08"}).status_code == 200


def test_the_branch_page_verifies_the_hash_chain(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import sqlite3

    import rewinddb
    from rewinddb.web import create_app

    with rewinddb.open(tmp_path / "db") as db:
        for n in range(5):
            db.events.append("step", {"n": n})
    with TestClient(create_app(tmp_path / "db"), base_url="http://localhost") as client:
        assert "hash chain verified (5 events)" in client.get("/branches/default").text
        assert client.get("/branches/default.json").json()["verification"]["ok"]
    with sqlite3.connect(tmp_path / "db" / "rewind.sqlite3") as raw:  # tamper with event 2
        raw.execute("UPDATE rewind_events SET payload = ? WHERE sequence = 2", (b'{"n":99}',))
    with TestClient(create_app(tmp_path / "db"), base_url="http://localhost") as client:
        page = client.get("/branches/default").text
        assert "hash chain BROKEN at event #2" in page


def test_api_docs_page_lists_the_routes_without_a_cdn(client: TestClient) -> None:
    page = client.get("/api/docs")
    assert page.status_code == 200
    assert "/api/branches/{branch}/events/{sequence}" in page.text
    assert "cdn" not in page.text.lower() and '<script src="http' not in page.text


def test_a_branch_whose_parent_was_deleted_still_shows_its_events(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import rewinddb
    from rewinddb.web import create_app

    with rewinddb.open(tmp_path / "db") as db:
        db.events.append("root", {})
        db.branches.fork("default", "par")
        db.at("par").events.append("on.parent", {})
        db.at("par").kv.put("pk", 1)
        db.branches.fork("par", "child")
        db.at("child").events.append("own", {})
        db.branches.delete("par")
    with TestClient(create_app(tmp_path / "db"), base_url="http://localhost") as client:
        inherited = client.get("/branches/child/events/1.json").json()
        assert inherited["state"] is None and "deleted" in inherited["unavailable"]
        own = client.get("/branches/child/events/2.json").json()
        assert own["point"] == {"branch": "child", "version": own["event"]["version"]}
        assert own["previous"]["label"].startswith("the fork point")
        assert {row["key"] for row in own["state"]["kv"]} == {"pk"}
        for n in range(3):
            assert client.get(f"/branches/child/events/{n}").status_code == 200
        page = client.get("/branches/child").text
        assert "par (deleted)" in page and 'href="/branches/par"' not in page
        assert 'href="/branches/par"' not in client.get("/").text


def test_csrf_tokens_that_are_not_ascii_are_refused_not_500(writable: TestClient) -> None:
    form = {"name": "x", "csrf_token": "é"}
    assert writable.post("/branches/research/fork", data=form).status_code == 403
    token = writable.app.state.csrf_token  # type: ignore[attr-defined]
    blank = writable.post("/branches/research/fork", data={"name": " ", "csrf_token": token})
    assert blank.status_code == 422
    https = writable.post(
        "/branches/research/fork",
        data={"name": "y", "csrf_token": token},
        headers={"Origin": "https://localhost"},
    )
    assert https.status_code == 403  # another scheme is another origin


def test_a_damaged_database_is_a_server_error_page_not_a_bad_request(tmp_path: Path) -> None:
    path = tmp_path / "agent"
    with rewinddb.open(path) as db:
        db.events.append("start", {})
    raw = sqlite3.connect(path / "rewind.sqlite3")
    raw.execute("DROP TABLE rewind_events")
    raw.commit()
    raw.close()
    with TestClient(create_app(path), base_url="http://localhost") as client:
        page = client.get("/branches/default")
        assert page.status_code == 500 and "corrupt.events" in page.text
        assert "Traceback" not in page.text
        twin = client.get("/branches/default.json")
        assert twin.status_code == 500 and twin.json()["error"]["code"] == "corrupt.events"
