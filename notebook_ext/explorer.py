"""``explore()``: a rewinddb database's attempts, conversations, steps and events in a notebook.

Standard ipywidgets 8 and a Plotly ``FigureWidget``, nothing to build: it works in
JupyterLab, classic Notebook and VS Code. What it shows of a branch comes from the
models the web explorer renders too (``rewinddb.story``: the summary, the transcript,
the steps, a step opened, two attempts compared), the events from the branch's log;
everything is escaped (``._html``, ``rewinddb.rendering``).
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
from rewinddb import rendering, story
from rewinddb.plotting import graph_figure, points_trace
from rewinddb.presenters import STEPS_PAGE, Fork

from . import _html
from ._graph import only_branches

#: A panel's HTML: normal line height (the HTML widget's is a control's), text wraps.
_PANEL = '<div style="line-height:1.45;min-width:0;{wrap}">{body}</div>'
#: Panels side by side share the width and wrap under each other when it is narrow.
_ROW = {"flex_flow": "row wrap", "width": "100%", "align_items": "flex-start"}
_COLUMN = {"flex": "1 1 22em", "min_width": "0", "overflow": "auto"}
_WIDE = {"width": "100%", "min_width": "0", "overflow": "auto"}
#: A long panel (a conversation, a state) scrolls within a screenful.
_TALL = {**_WIDE, "max_height": "40em"}


def _panel(body: str) -> str:
    return _PANEL.format(wrap=rendering.WRAP.replace("white-space:pre-wrap", ""), body=body)


def _html_widget(layout: dict[str, str]) -> widgets.HTML:
    return widgets.HTML(layout=widgets.Layout(**layout))


#: The events tab: its panels are filled when it is shown (reading the state and a
#: decoded diff of a long thread is the widget's slowest read, and often not looked at).
#: Dots a lane of the graph draws at most (evenly thinned): more than its width shows.
GRAPH_POINTS = 500
TABS = ("conversation", "steps", "events", "compare")
EVENTS_TAB = TABS.index("events")


@dataclass(frozen=True)
class _Point:
    branch: str
    version: int


class Explorer(widgets.VBox):
    """The explorer widget. Drive it like a user: set ``branch.value``, pick a step in
    ``steps`` (or move ``step_slider``), toggle ``show_hidden`` and ``show_raw``, move
    ``slider`` through the events, click a dot of ``graph``; read ``summary_panel``,
    ``transcript_panel``, ``step_panel``, ``step_state_panel``, ``raw_panel``,
    ``event_panel``, ``state_panel``, ``diff_panel`` and ``compare_panel``."""

    def __init__(
        self,
        db: rewinddb.Database | None,
        *,
        branch: str | None = None,
        live: bool = False,
        poll_interval: float = 1.0,
        owns_db: bool = False,
        problem: str | None = None,
        all_branches: bool = False,
    ) -> None:
        self.db = db
        self._owns_db = owns_db
        self._events: list[rewinddb.Event] = []
        self._seen_version = -1
        self._stop = threading.Event()
        self._updating = False
        self._fork: Fork | None = None
        self._step_cursors: list[int | None] = []
        self._steps_before: int | None = None
        self._step_versions: list[int] = []
        self._transcript_before: int | None = None
        self._transcript: Any = None
        self._detail: story.StepDetail | None = None
        self._events_stale = False
        self.title = widgets.HTML()
        self.message = widgets.HTML(layout=widgets.Layout(**_WIDE))
        if db is None:
            super().__init__([self.title, self.message])
            self.message.value = _html.message(problem or "no database", error=True)
            return
        self.graph = go.FigureWidget()
        self.branch = widgets.Dropdown(
            description="branch", layout=widgets.Layout(width="auto", min_width="16em")
        )
        self.all_branches = widgets.Checkbox(
            value=all_branches, description="internal branches", indent=False
        )
        self.summary_panel = _html_widget(_WIDE)
        self.tabs = widgets.Tab(
            [self._conversation_tab(), self._steps_tab(), self._events_tab(), self._compare_tab()]
        )
        for index, name in enumerate(TABS):
            self.tabs.set_title(index, name)
        super().__init__(
            [
                self.title,
                self.message,
                self.graph,
                widgets.HBox([self.branch, self.all_branches], layout=widgets.Layout(**_ROW)),
                self.summary_panel,
                self.tabs,
            ],
            layout=widgets.Layout(width="100%", min_width="0"),
        )
        self.branch.observe(self._on_branch, names="value")
        self.all_branches.observe(lambda _: self.refresh(), names="value")
        self.refresh(select=branch)
        self.tabs.observe(self._on_tab, names="selected_index")
        self.tabs.selected_index = 0 if self._transcript is not None else 1
        if live:
            threading.Thread(target=self._poll, args=(poll_interval,), daemon=True).start()

    # -- the tabs --------------------------------------------------------------------

    def _conversation_tab(self) -> widgets.Widget:
        self.transcript_panel = _html_widget(_TALL)
        self.older_messages = widgets.Button(description="◀ older messages")
        self.newer_messages = widgets.Button(description="newer messages ▶")
        self.older_messages.on_click(lambda _: self.page_transcript(-1))
        self.newer_messages.on_click(lambda _: self.page_transcript(1))
        paging = widgets.HBox(
            [self.older_messages, self.newer_messages], layout=widgets.Layout(**_ROW)
        )
        return widgets.VBox([paging, self.transcript_panel], layout=widgets.Layout(**_WIDE))

    def _steps_tab(self) -> widgets.Widget:
        self.steps = widgets.Select(
            description="", rows=14, layout=widgets.Layout(width="97%", min_width="0")
        )
        self.step_slider = widgets.IntSlider(
            description="step", min=0, max=0, continuous_update=True, readout=False
        )
        self.older_steps = widgets.Button(description="◀ older", layout={"width": "auto"})
        self.newer_steps = widgets.Button(description="newer ▶", layout={"width": "auto"})
        self.older_steps.on_click(lambda _: self.page_steps(-1))
        self.newer_steps.on_click(lambda _: self.page_steps(1))
        self.steps_info = widgets.HTML()
        self.step_panel = _html_widget(_WIDE)
        self.step_state_panel = _html_widget(_TALL)
        self.raw_panel = _html_widget(_WIDE)
        self.show_hidden = widgets.ToggleButton(description="show 0 hidden", disabled=True)
        self.show_raw = widgets.ToggleButton(description="raw stored JSON")
        self.steps.observe(self._on_step, names="value")
        self.step_slider.observe(self._on_step_slider, names="value")
        self.show_hidden.observe(lambda _: self._render_step(), names="value")
        self.show_raw.observe(lambda _: self._render_step(), names="value")
        chooser = widgets.VBox(
            [
                self.steps_info,
                widgets.HBox([self.older_steps, self.newer_steps], layout=widgets.Layout(**_ROW)),
                self.step_slider,
                self.steps,
            ],
            layout=widgets.Layout(flex="0 1 24em", min_width="14em", overflow="hidden"),
        )
        detail = widgets.VBox(
            [
                widgets.HBox([self.show_hidden, self.show_raw], layout=widgets.Layout(**_ROW)),
                self.step_panel,
                self.step_state_panel,
                self.raw_panel,
            ],
            layout=widgets.Layout(flex="1 1 28em", min_width="0", overflow="auto"),
        )
        return widgets.HBox([chooser, detail], layout=widgets.Layout(**_ROW))

    def _events_tab(self) -> widgets.Widget:
        self.slider = widgets.IntSlider(description="event", min=0, max=0, continuous_update=True)
        self.play = widgets.Play(interval=500, min=0, max=0)
        widgets.jslink((self.play, "value"), (self.slider, "value"))
        self.previous_button = widgets.Button(description="◀", layout={"width": "3em"})
        self.next_button = widgets.Button(description="▶", layout={"width": "3em"})
        self.event_panel = _html_widget(_COLUMN)
        self.diff_panel = _html_widget(_COLUMN)
        self.state_panel = _html_widget(_TALL)
        self.slider.observe(self._on_slider, names="value")
        self.previous_button.on_click(lambda _: self.step(-1))
        self.next_button.on_click(lambda _: self.step(1))
        controls = widgets.HBox(
            [self.previous_button, self.play, self.slider, self.next_button],
            layout=widgets.Layout(**_ROW),
        )
        return widgets.VBox(
            [
                controls,
                widgets.HBox([self.event_panel, self.diff_panel], layout=widgets.Layout(**_ROW)),
                self.state_panel,
            ],
            layout=widgets.Layout(**_WIDE),
        )

    def _compare_tab(self) -> widgets.Widget:
        field = {"flex": "1 1 14em", "min_width": "10em"}
        self.compare_a = widgets.Text(
            description="a", placeholder="branch@version", layout=widgets.Layout(**field)
        )
        self.compare_b = widgets.Text(
            description="b", placeholder="branch@version", layout=widgets.Layout(**field)
        )
        self.compare_button = widgets.Button(description="compare")
        self.compare_button.on_click(lambda _: self.compare())
        self.compare_panel = _html_widget(_WIDE)
        return widgets.VBox(
            [
                widgets.HBox(
                    [self.compare_a, self.compare_b, self.compare_button],
                    layout=widgets.Layout(**_ROW),
                ),
                self.compare_panel,
            ],
            layout=widgets.Layout(**_WIDE),
        )

    # -- loading -----------------------------------------------------------------------

    def refresh(self, select: str | None = None) -> None:
        """Reload the branches, the graph and the selected branch."""
        db = self._db()
        try:
            version = db.version
            attempts = story.attempts(db, include_internal=True)
        except rewinddb.RewindError as error:
            self.message.value = _html.message(str(error), error=True)
            return
        self._seen_version = version
        names = [a.branch.name for a in attempts]
        shown = [
            a.branch.name for a in attempts if self.all_branches.value or not a.summary.internal
        ]
        wanted = select or self.branch.value or (shown[0] if shown else "default")
        if wanted in names and wanted not in shown:
            shown.append(wanted)  # asked for by name: shown, even if internal
        if not shown:
            shown = names
        hidden = len(names) - len(shown)
        self.title.value = (
            f"<b>rewinddb</b> <code>{escape(str(db.path))}</code>: "
            f"{rendering.plural(len(names), 'branch', 'branches')}, version {version}"
            + (f" ({hidden} internal hidden)" if hidden else "")
        )
        self._draw_graph(version, shown)
        if wanted not in shown:
            instead = "default" if "default" in shown else shown[0]
            self.message.value = _html.message(
                f"branch {wanted!r} does not exist; showing {instead!r}. Branches: "
                + ", ".join(shown),
                error=True,
            )
            wanted = instead
        self._updating = True
        try:
            self.branch.options = shown
            self.branch.value = wanted
        finally:
            self._updating = False
        self._load_branch()

    def _draw_graph(self, version: int, branches: list[str]) -> None:
        graph = only_branches(self._db().graph(max_points_per_branch=GRAPH_POINTS), branches)
        figure = graph_figure(graph, head=version)
        with self.graph.batch_update():
            self.graph.data = []
            self.graph.add_traces(list(figure.data))
            self.graph.layout = figure.layout
            self.graph.layout.autosize = True
        if self.graph.data:
            points_trace(self.graph).on_click(self._on_click)

    def _load_branch(self) -> None:
        """Read the selected branch's story (summary, conversation, steps) and events."""
        self._step_cursors, self._steps_before, self._transcript_before = [], None, None
        self._load_story(select_last=True)
        self._load_events(follow=True)

    def _load_story(
        self, *, select_last: bool, select: int | None = None, steps: bool = True
    ) -> None:
        """Read the story pages at the cursors; select ``select`` (a version), the page's
        last step, or keep the selection (``steps=False``: only the conversation moved)."""
        try:
            found = story.branch_story(
                self._db(),
                self.branch.value,
                before=self._steps_before,
                transcript_before=self._transcript_before,
            )
        except rewinddb.RewindError as error:
            self._story_problem(error)
            return
        self._fork = found.summary.fork
        self._transcript = found.transcript
        self.summary_panel.value = _panel(_html.summary_html(found.summary))
        self._show_transcript()
        if steps:
            self._show_steps(found.steps, select_last=select_last, select=select)

    def _story_problem(self, error: rewinddb.RewindError) -> None:
        text = _html.message(f"cannot tell this branch's story: {error}", error=True)
        self.summary_panel.value = text
        self.transcript_panel.value = ""
        self.step_panel.value = ""
        self.step_state_panel.value = self.raw_panel.value = ""
        self._transcript, self._detail, self._step_versions = None, None, []
        self._updating = True
        try:
            self.steps.options = []
        finally:
            self._updating = False

    # -- the conversation ----------------------------------------------------------------

    def _show_transcript(self) -> None:
        transcript = self._transcript
        self.transcript_panel.value = _panel(_html.transcript_html(transcript, self._fork))
        self.older_messages.disabled = transcript is None or transcript.start == 0
        self.newer_messages.disabled = (
            transcript is None or transcript.start + len(transcript.messages) >= transcript.total
        )

    def page_transcript(self, direction: int) -> None:
        """Show the page of messages before (-1) or after (1) the one shown."""
        transcript = self._transcript
        if transcript is None:
            return
        if direction < 0:
            self._transcript_before = transcript.start
        else:
            end = transcript.start + len(transcript.messages) + STEPS_PAGE
            self._transcript_before = end if end < transcript.total else None
        self._load_story(select_last=False, steps=False)

    # -- steps -------------------------------------------------------------------------

    def _show_steps(self, page: Any, *, select_last: bool, select: int | None) -> None:
        self._step_versions = [step.version for step in page.steps]
        current = self.steps.value
        self._updating = True
        try:
            names = _html.step_names(page, self._fork)
            self.steps.options = list(zip(names, self._step_versions, strict=True))
            self.step_slider.max = max(len(page.steps) - 1, 0)
            self.step_slider.disabled = not page.steps
        finally:
            self._updating = False
        where = "the newest" if not self._step_cursors else "older"
        self.steps_info.value = escape(
            f"{len(page.steps)} of {rendering.plural(page.total, 'step')} ({where})"
            if len(page.steps) < page.total
            else rendering.plural(page.total, "step")
        )
        self._older_cursor = page.older
        self.older_steps.disabled = page.older is None
        self.newer_steps.disabled = not self._step_cursors
        if not page.steps:
            self._detail = None
            self.step_panel.value = _panel(_html.message("This branch has no steps yet."))
            self.step_state_panel.value = self.raw_panel.value = ""
            return
        if select is None:
            keep = not select_last and current in self._step_versions
            select = current if keep else self._step_versions[-1]
        self.select_step(select)

    def select_step(self, version: int) -> None:
        """Open the step at ``version`` (or the newest before it) of the selected branch."""
        steps = self._step_versions
        if not steps:
            return
        if version not in steps:
            limit = self._steps_before  # this page holds every step older than it
            if steps[0] <= version and (limit is None or version < limit):
                version = max(v for v in steps if v <= version)
            elif version < steps[0] and self._older_cursor is None:
                version = steps[0]  # before the first step: the first
            else:  # another page holds it: the one whose newest step is at or before it
                self._step_cursors = [None]
                self._steps_before = version + 1
                self._load_story(select_last=True)
                return
        self._updating = True
        try:
            self.steps.value = version
            self.step_slider.value = self._step_versions.index(version)
        finally:
            self._updating = False
        self._open_step(version)

    def _open_step(self, version: int) -> None:
        try:
            self._detail = story.step_detail(self._db(), self.branch.value, version)
        except rewinddb.RewindError as error:
            self._detail = None
            self.step_panel.value = _html.message(str(error), error=True)
            self.step_state_panel.value = self.raw_panel.value = ""
            return
        hidden = self._detail.hidden_count
        self._updating = True
        try:
            self.show_hidden.disabled = hidden == 0
            if hidden == 0:
                self.show_hidden.value = False
        finally:
            self._updating = False
        self._render_step()

    def _render_step(self) -> None:
        detail = self._detail
        if detail is None:
            return
        hidden = detail.hidden_count
        self.show_hidden.description = (
            f"hide {hidden} hidden" if self.show_hidden.value else f"show {hidden} hidden"
        )
        self.step_panel.value = _panel(
            _html.detail_html(detail, show_hidden=self.show_hidden.value, fork=self._fork)
        )
        self.step_state_panel.value = _panel(_html.state_html(detail))
        self.raw_panel.value = _panel(_html.raw_html(detail)) if self.show_raw.value else ""

    def page_steps(self, direction: int) -> None:
        """Show the page of steps before (-1) or after (1) the one shown."""
        if direction < 0:
            if self._older_cursor is None:
                return
            self._step_cursors.append(self._steps_before)
            self._steps_before = self._older_cursor
        else:
            if not self._step_cursors:
                return
            self._steps_before = self._step_cursors.pop()
        self._load_story(select_last=True)

    # -- events ------------------------------------------------------------------------

    def _load_events(self, *, follow: bool) -> None:
        """Read the selected branch's log; keep the position unless it was at the end."""
        at_end = not self._events or self.slider.value >= len(self._events) - 1
        try:
            view = self._db().at(self.branch.value)
            self._events = [item.event for item in view.events.list()]
            self._info = view.info()
        except rewinddb.RewindError as error:
            self._events = []
            self.event_panel.value = _html.message(str(error), error=True)
            self.diff_panel.value = self.state_panel.value = ""
            return
        last = max(len(self._events) - 1, 0)
        self._updating = True
        try:
            self.slider.max = self.play.max = last
            self.slider.disabled = not self._events
            if follow and at_end:
                self.slider.value = last
        finally:
            self._updating = False
        self._events_stale = True
        if self.tabs.selected_index == EVENTS_TAB:  # else when the tab is opened
            self.show(self.slider.value)

    def show(self, index: int) -> None:
        """Fill the events tab's panels for event ``index`` of the selected branch."""
        self._events_stale = False
        db = self._db()
        if not self._events:
            self.event_panel.value = _html.message(
                f"branch {self.branch.value!r} has no events yet; its state now:"
            )
            self.diff_panel.value = ""
            try:
                self.state_panel.value = rendering.state_html(db.at(self.branch.value).snapshot())
            except rewinddb.RewindError as error:
                self.state_panel.value = _html.message(str(error), error=True)
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
            self.state_panel.value = _html.message(str(error), error=True)
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
        """Move the event slider by ``delta`` events (the ◀ ▶ buttons)."""
        self.slider.value = min(max(self.slider.value + delta, 0), self.slider.max)

    # -- compare -----------------------------------------------------------------------

    def compare(self) -> None:
        """Compare the two points of the compare tab as attempts: where they part and
        both outcomes first, then the state of each and their diff."""
        try:
            a, b = self._parse(self.compare_a.value), self._parse(self.compare_b.value)
            db = self._db()
            comparison = story.compare_stories(db, (a.branch, a.version), (b.branch, b.version))
            state_a = db.at(a.branch).snapshot(as_of=a.version)
            state_b = db.at(b.branch).snapshot(as_of=b.version)
            diff = db.diff(a.branch, b.branch, as_of_a=a.version, as_of_b=b.version, readable=True)
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
        count = rendering.plural(len(diff.changes), "changed path")
        self.compare_panel.value = _panel(
            _html.comparison_html(comparison, name_a, name_b)
            + f"<details><summary><b>state diff</b> ({count})</summary>"
            + rendering.diff_html(diff)
            + "</details><details><summary><b>state of each</b></summary>"
            + states
            + "</details>"
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
        view = self._db().at(name)
        return _Point(name, int(version) if version else view.snapshot()["version"])

    # -- events from the widgets -------------------------------------------------------

    def _on_branch(self, change: dict[str, Any]) -> None:
        if not self._updating:
            self.message.value = ""
            self._events = []
            self._load_branch()

    def _on_step(self, change: dict[str, Any]) -> None:
        if not self._updating and change["new"] is not None:
            self.select_step(change["new"])

    def _on_step_slider(self, change: dict[str, Any]) -> None:
        if not self._updating and self._step_versions:
            self.select_step(self._step_versions[change["new"]])

    def _on_tab(self, change: dict[str, Any]) -> None:
        if change["new"] == EVENTS_TAB and self._events_stale:
            self.show(self.slider.value)

    def _on_slider(self, change: dict[str, Any]) -> None:
        if not self._updating:
            self.show(change["new"])

    def _on_click(self, trace: Any, points: Any, state: Any) -> None:
        """A click on a dot selects its branch, its event (or the last event before it)
        and its step."""
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
        self.select_step(version)

    # -- live --------------------------------------------------------------------------

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
    all_branches: bool = False,
) -> Explorer:
    """The explorer widget for ``db`` (an open database or a path, opened read-only).

    ``branch`` selects the branch to start on; ``live=True`` follows new events appended
    by this or another process; ``all_branches=True`` lists integrations' internal
    branches (LangGraph's index) and an empty ``default`` too. Problems (not a database,
    no such branch, a branch that cannot be decoded) are shown in the widget, not raised.
    """
    options = {"branch": branch, "live": live, "poll_interval": poll_interval}
    if isinstance(db, rewinddb.Database):
        return Explorer(db, all_branches=all_branches, **options)  # type: ignore[arg-type]
    try:
        opened = rewinddb.open(db, readonly=True, create=False)
    except rewinddb.RewindError as error:
        return Explorer(None, problem=f"cannot open {os.fspath(db)!r}: {error}")
    return Explorer(opened, owns_db=True, all_branches=all_branches, **options)  # type: ignore[arg-type]


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
        return widgets.HTML(_html.message(str(error), error=True))
    return widgets.HTML(_panel(rendering.diff_html(diff)))
