"""``rewinddb.rendering``: counts in the right number, long text that wraps, raw JSON."""

from __future__ import annotations

import rewinddb
from rewinddb import rendering


def test_counts_of_one_are_singular(db: rewinddb.Database) -> None:
    db.kv.put("only", {"a": [1]})
    db.events.append("start", {})
    page = db.at("default")._repr_html_()
    assert "(1 key)" in page and "{1 key}" in page and "[1 item]" in page
    assert "1 event</div>" in page
    assert "keys)" in rendering.state_html({"kv": {"a": 1, "b": 2}})  # (2 keys)
    assert "(0 keys)" in page  # json and state are empty
    assert rendering.plural(1, "branch", "branches") == "1 branch"
    assert rendering.plural(1_000, "branch", "branches") == "1,000 branches"


def test_long_values_wrap_instead_of_widening_their_column(db: rewinddb.Database) -> None:
    db.kv.put("k" * 300, "word " * 80)
    table = db.diff("default", "default", as_of_a=0, as_of_b=1)._repr_html_()
    assert "overflow-wrap:anywhere" in table and "max-width:16em" in table


def test_raw_json_is_escaped_and_cut() -> None:
    html = rendering.json_html({"<b>": "</pre><script>", "blob": b"xyz"}, limit=10_000)
    assert "<script>" not in html and "&lt;/pre&gt;&lt;script&gt;" in html
    assert "&lt;3 bytes&gt;" in html
    cut = rendering.json_html({"long": "x" * 500}, limit=100)
    assert "characters in all" in cut and "x" * 200 not in cut


def test_a_long_list_shows_its_first_and_last_items() -> None:
    half = rendering.MAX_TREE_ITEMS // 2
    html = rendering.value_tree([f"m{n}" for n in range(1_000)], "messages", decode=False)
    assert "[1,000 items]" in html and "&quot;m0&quot;" in html and "&quot;m999&quot;" in html
    assert f"&quot;m{half}&quot;" not in html and f"&quot;m{999 - half}&quot;" not in html
    assert f"… 900 items ([{half}] to [{999 - half}]) not shown" in html
    assert html.count("<code>") == rendering.MAX_TREE_ITEMS
    short = rendering.value_tree(list(range(rendering.MAX_TREE_ITEMS)), decode=False)
    assert "not shown" not in short
