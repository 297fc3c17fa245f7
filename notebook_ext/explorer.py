"""``explore()``: branches, events, state and diffs of a rewinddb database in a notebook.

Standard ipywidgets 8 and a Plotly ``FigureWidget``, nothing to build: it works in
JupyterLab, classic Notebook and VS Code. Everything shown comes from rewinddb's public
API (``db.graph()``, ``snapshot``, ``diff``, ``rewinddb.rendering``), escaped.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from html import escape
from typing import Any

import ipywidgets as widgets
import plotly.graph_objects as go

import rewinddb
from rewinddb import rendering
from rewinddb.plotting import graph_figure, points_trace


@dataclass(frozen=True)
class _Point:
    branch: str
    version: int


def _message(text: str, *, error: bool = False) -> str:
    color = "#b31d28" if error else "#555"
    return f'<div style="color:{color}">{escape(text)}</div>'


class Explorer(widgets.VBox):
    """The explorer widget. Drive it like a user: set ``branch.value``, ``slider.value``,
    click a dot of ``graph``; read ``event_panel``, ``state_panel``, ``diff_panel``."""

    def __init__(
        self,
        db: rewinddb.Database | None,
        *,
        branch: str | None = None,
        live: bool = False,
        poll_interval: float = 1.0,
        owns_db: bool = False,
        problem: str | None = None,
    ) -> None:
        self.db = db
        self._owns_db = owns_db
        self._events: list[rewinddb.Event] = []
        self._seen_version = -1
        self._stop = threading.Event()
        self._updating = False
        self.title = widgets.HTML()
        self.message = widgets.HTML()
        self.graph = go.FigureWidget()
        self.branch = widgets.Dropdown(description="branch")
        self.slider = widgets.IntSlider(description="event", min=0, max=0, continuous_update=True)
        self.play = widgets.Play(interval=500, min=0, max=0)
        widgets.jslink((self.play, "value"), (self.slider, "value"))
        self.previous_button = widgets.Button(description="◀", layout={"width": "3em"})
        self.next_button = widgets.Button(description="▶", layout={"width": "3em"})
        self.event_panel = widgets.HTML()
        self.diff_panel = widgets.HTML()
        self.state_panel = widgets.HTML()
        self.compare_a = widgets.Text(description="a", placeholder="branch@version")
        self.compare_b = widgets.Text(description="b", placeholder="branch@version")
        self.compare_button = widgets.Button(description="compare")
        self.compare_panel = widgets.HTML()
        compare = widgets.VBox(
            [
                widgets.HBox([self.compare_a, self.compare_b, self.compare_button]),
                self.compare_panel,
            ]
        )
        self.tabs = widgets.Tab(
            [
                widgets.VBox(
                    [
                        widgets.HBox(
                            [
                                self.branch,
                                self.previous_button,
                                self.play,
                                self.slider,
                                self.next_button,
                            ]
                        ),
                        widgets.HBox([self.event_panel, self.diff_panel]),
                        self.state_panel,
                    ]
                ),
                compare,
            ]
        )
        self.tabs.set_title(0, "events")
        self.tabs.set_title(1, "compare")
        super().__init__([self.title, self.message, self.graph, self.tabs])
        if db is None:
            self.message.value = _message(problem or "no database", error=True)
            return
        self.branch.observe(self._on_branch, names="value")
        self.slider.observe(self._on_slider, names="value")
        self.previous_button.on_click(lambda _: self.step(-1))
        self.next_button.on_click(lambda _: self.step(1))
        self.compare_button.on_click(lambda _: self.compare())
        self.refresh(select=branch)
        if live:
            threading.Thread(target=self._poll, args=(poll_interval,), daemon=True).start()

    # -- loading -------------------------------------------------------------------

    def refresh(self, select: str | None = None) -> None:
        """Reload branches, the graph and the selected branch's events."""
        db = self._db()
        version = db.version
        self._seen_version = version
        names = db.branches.names()
        self.title.value = (
            f"<b>rewinddb</b> <code>{escape(str(db.path))}</code>: {len(names)} branches, "
            f"version {version}"
        )
        self._draw_graph(version)
        wanted = select or self.branch.value or "default"
        if wanted not in names:
            self.message.value = _message(
                f"branch {wanted!r} does not exist; showing 'default'. Branches: "
                + ", ".join(names),
                error=True,
            )
            wanted = "default"
        self._updating = True
        try:
            self.branch.options = names
            self.branch.value = wanted
        finally:
            self._updating = False
        self._load_events(follow=True)

    def _draw_graph(self, version: int) -> None:
        figure = graph_figure(self._db().graph(max_points_per_branch=2000), head=version)
        with self.graph.batch_update():
            self.graph.data = []
            self.graph.add_traces(list(figure.data))
            self.graph.layout = figure.layout
        points_trace(self.graph).on_click(self._on_click)

    def _load_events(self, *, follow: bool) -> None:
        """Read the selected branch's log; keep the position unless it was at the end."""
        at_end = not self._events or self.slider.value >= len(self._events) - 1
        view = self._db().at(self.branch.value)
        self._events = [item.event for item in view.events.list()]
        self._info = view.info()
        last = max(len(self._events) - 1, 0)
        self._updating = True
        try:
            self.slider.max = self.play.max = last
            self.slider.disabled = not self._events
            if follow and at_end:
                self.slider.value = last
        finally:
            self._updating = False
        self.show(self.slider.value)

    # -- showing an event ----------------------------------------------------------

    def show(self, index: int) -> None:
        """Fill the panels for event ``index`` of the selected branch."""
        db = self._db()
        if not self._events:
            self.event_panel.value = _message(
                f"branch {self.branch.value!r} has no events yet; its state now:"
            )
            self.diff_panel.value = ""
            self.state_panel.value = rendering.state_html(db.at(self.branch.value).snapshot())
            return
        event = self._events[index]
        point, previous = self._point(event), self._previous(index)
        try:
            snapshot = db.at(point.branch).snapshot(as_of=point.version)
            diff = db.diff(
                previous.branch,
                point.branch,
                as_of_a=previous.version,
                as_of_b=point.version,
                readable=True,
            )
        except rewinddb.RewindError as error:
            self.state_panel.value = _message(str(error), error=True)
            self.diff_panel.value = ""
        else:
            self.state_panel.value = "<b>state as of this event</b>" + rendering.state_html(
                snapshot
            )
            self.diff_panel.value = "<b>changed since the previous event</b>" + (
                rendering.diff_html(diff)
            )
        self.event_panel.value = rendering.event_html(event)

    def _point(self, event: rewinddb.Event) -> _Point:
        """Where to read the state at ``event``: this branch, or (for events it inherited
        from before its fork point) the branch that appended it."""
        if event.version >= self._info.forked_at:
            return _Point(self.branch.value, event.version)
        return _Point(event.branch, event.version)

    def _previous(self, index: int) -> _Point:
        if index > 0:
            return self._point(self._events[index - 1])
        first = self._point(self._events[0])
        return _Point(first.branch, self._db().branches.get(first.branch).forked_at)

    def step(self, delta: int) -> None:
        """Move the slider by ``delta`` events (the ◀ ▶ buttons)."""
        self.slider.value = min(max(self.slider.value + delta, 0), self.slider.max)

    # -- compare -------------------------------------------------------------------

    def compare(self) -> None:
        """Show the two points of the compare tab side by side, with their diff."""
        try:
            a, b = self._parse(self.compare_a.value), self._parse(self.compare_b.value)
            db = self._db()
            state_a = db.at(a.branch).snapshot(as_of=a.version)
            state_b = db.at(b.branch).snapshot(as_of=b.version)
            diff = db.diff(a.branch, b.branch, as_of_a=a.version, as_of_b=b.version, readable=True)
        except rewinddb.RewindError as error:
            self.compare_panel.value = _message(str(error), error=True)
            return
        column = '<div style="flex:1;min-width:0"><b>{}</b>{}</div>'
        self.compare_panel.value = (
            '<div style="display:flex;gap:1em">'
            + column.format(escape(f"{a.branch}@{a.version}"), rendering.state_html(state_a))
            + column.format(escape(f"{b.branch}@{b.version}"), rendering.state_html(state_b))
            + "</div>"
            + rendering.diff_html(diff)
        )

    def _parse(self, text: str) -> _Point:
        """``branch@version`` (the version may be left out: now)."""
        name, _, version = text.strip().rpartition("@")
        if not name:
            name, version = text.strip(), ""
        if version and not version.isdigit():
            raise rewinddb.InvalidInputError(
                f"{text!r}: write branch@version, for example run-1@12", code="invalid.point"
            )
        db = self._db()
        view = db.at(name)
        return _Point(name, int(version) if version else view.snapshot()["version"])

    # -- events from the widgets ---------------------------------------------------

    def _on_branch(self, change: dict[str, Any]) -> None:
        if not self._updating:
            self.message.value = ""
            self._events = []
            self._load_events(follow=True)

    def _on_slider(self, change: dict[str, Any]) -> None:
        if not self._updating:
            self.show(change["new"])

    def _on_click(self, trace: Any, points: Any, state: Any) -> None:
        """A click on a dot selects its branch and event (or the last event before it)."""
        if not points.point_inds:
            return
        branch, sequence, version = trace.customdata[points.point_inds[0]]
        if branch != self.branch.value:
            self.branch.value = branch
        index = next(
            (i for i, e in enumerate(self._events) if e.sequence == sequence),
            max((i for i, e in enumerate(self._events) if e.version <= version), default=0),
        )
        self.slider.value = index
        self.show(index)

    # -- live ------------------------------------------------------------------------

    def _poll(self, interval: float) -> None:
        while not self._stop.wait(interval):
            try:
                if self._db().version != self._seen_version:
                    self.refresh()
            except rewinddb.RewindError:
                return  # closed: stop following

    def close(self) -> None:
        """Stop following, close the database if ``explore`` opened it, remove the widget."""
        self._stop.set()
        if self._owns_db and self.db is not None:
            self.db.close()
        super().close()

    def _db(self) -> rewinddb.Database:
        assert self.db is not None
        return self.db


def explore(
    db: rewinddb.Database | str | os.PathLike[str],
    *,
    branch: str | None = None,
    live: bool = False,
    poll_interval: float = 1.0,
) -> Explorer:
    """The explorer widget for ``db`` (an open database or a path, opened read-only).

    ``branch`` selects the branch to start on; ``live=True`` follows new events appended
    by this or another process. Problems (not a database, no such branch) are shown in
    the widget, not raised.
    """
    if isinstance(db, rewinddb.Database):
        return Explorer(db, branch=branch, live=live, poll_interval=poll_interval)
    try:
        opened = rewinddb.open(db, readonly=True, create=False)
    except rewinddb.RewindError as error:
        return Explorer(None, problem=f"cannot open {os.fspath(db)!r}: {error}")
    return Explorer(opened, branch=branch, live=live, poll_interval=poll_interval, owns_db=True)


def show_diff(
    db: rewinddb.Database,
    a: str,
    b: str,
    *,
    as_of_a: int | None = None,
    as_of_b: int | None = None,
) -> widgets.HTML:
    """One diff, inline: ``show_diff(db, "run-1", "run-2")``."""
    try:
        diff = db.diff(a, b, as_of_a=as_of_a, as_of_b=as_of_b, readable=True)
    except rewinddb.RewindError as error:
        return widgets.HTML(_message(str(error), error=True))
    return widgets.HTML(rendering.diff_html(diff))
