"""The explorer's compare tab: two points (``branch@version``) as two attempts: where
they part and how each ended first (``rewinddb.story.compare_stories``), then the state
of each and their diff."""

from __future__ import annotations

from html import escape

import ipywidgets as widgets

import rewinddb
from rewinddb import presenters, rendering, story

from . import _html
from ._events import Point
from ._layout import WIDE, html_widget, panel, row


class CompareTab(widgets.VBox):
    """Two text fields, a button, and the comparison."""

    def __init__(self, db: rewinddb.Database) -> None:
        self._db = db
        field = {"flex": "1 1 14em", "min_width": "10em"}
        self.compare_a = widgets.Text(
            description="a", placeholder="branch@version", layout=widgets.Layout(**field)
        )
        self.compare_b = widgets.Text(
            description="b", placeholder="branch@version", layout=widgets.Layout(**field)
        )
        self.compare_button = widgets.Button(description="compare")
        self.compare_button.on_click(lambda _: self.compare())
        self.compare_panel = html_widget(WIDE)
        super().__init__(
            [row([self.compare_a, self.compare_b, self.compare_button]), self.compare_panel],
            layout=widgets.Layout(**WIDE),
        )

    def compare(self) -> None:
        """Compare the two points as attempts: where they part and both outcomes first,
        then the state of each and their diff (folded)."""
        db = self._db
        try:
            a, b = self._parse(self.compare_a.value), self._parse(self.compare_b.value)
            comparison = story.compare_stories(db, (a.branch, a.version), (b.branch, b.version))
            state_a = db.at(a.branch).snapshot(as_of=a.version)
            state_b = db.at(b.branch).snapshot(as_of=b.version)
            count, diff = self._diff_html(comparison, a, b)
        except rewinddb.RewindError as error:
            self.compare_panel.value = _html.message(str(error), error=True)
            return
        name_a, name_b = f"{a.branch}@{a.version}", f"{b.branch}@{b.version}"
        column = '<div style="flex:1 1 20em;min-width:0"><b>{}</b>{}</div>'
        states = (
            '<div style="display:flex;flex-wrap:wrap;gap:1em">'
            + column.format(escape(name_a), rendering.state_html(state_a))
            + column.format(escape(name_b), rendering.state_html(state_b))
            + "</div>"
        )
        self.compare_panel.value = panel(
            _html.comparison_html(comparison, name_a, name_b)
            + f"<details><summary><b>state diff</b> ({count})</summary>"
            + diff
            + "</details><details><summary><b>state of each</b></summary>"
            + states
            + "</details>"
        )

    def _diff_html(self, comparison: story.StoryComparison, a: Point, b: Point) -> tuple[str, str]:
        """(how many rows, the state diff from ``a`` to ``b``): as ``b``'s presenter
        tells it (the comparison's rows, events left out, as on the web's compare page),
        or, for a plain branch, the store's diff decoded."""
        db = self._db
        if story.presenter_of(db, b.branch) is not presenters.generic():
            rows = comparison.rows
            shown = sum(not row.hidden for row in rows)
            point_a = comparison.point_a or rewinddb.Point(a.branch, a.version)
            point_b = comparison.point_b or rewinddb.Point(b.branch, b.version)
            count = rendering.plural(shown, "changed path")
            return count, rendering.diff_rows_html(point_a, point_b, rows)
        diff = db.diff(a.branch, b.branch, as_of_a=a.version, as_of_b=b.version, readable=True)
        return rendering.plural(len(diff.changes), "changed path"), rendering.diff_html(diff)

    def _parse(self, text: str) -> Point:
        """``branch@version`` (the version may be left out: now)."""
        name, _, version = text.strip().rpartition("@")
        if not name:
            name, version = text.strip(), ""
        if version and not version.isdigit():
            raise rewinddb.InvalidInputError(
                f"{text!r}: write branch@version, for example run-1@12", code="invalid.point"
            )
        view = self._db.at(name)
        return Point(name, int(version) if version else view.snapshot()["version"])
