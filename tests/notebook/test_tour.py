"""examples/notebook_tour.ipynb runs in a real kernel and shows the widget, no errors."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TOUR = EXAMPLES / "notebook_tour.ipynb"
WIDGET = "application/vnd.jupyter.widget-view+json"
STATE = "application/vnd.jupyter.widget-state+json"


def test_the_tour_runs_and_shows_the_explorer() -> None:
    notebook = nbformat.read(TOUR, as_version=4)
    # It runs beside the examples it imports, as a user opens it; it writes only to a
    # temporary directory of its own.
    NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=120,
        store_widget_state=True,
        resources={"metadata": {"path": str(EXAMPLES)}},
    ).execute()
    outputs = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    ]
    assert not [output for output in outputs if output.output_type == "error"]
    widgets = [output for output in outputs if WIDGET in output.get("data", {})]
    assert len(widgets) >= 2  # the explorer and show_diff
    html = "".join(output.get("data", {}).get("text/html", "") for output in outputs)
    assert "rewinddb database" in html and "branch <b>run-2</b>" in html
    assert notebook.metadata.get("widgets")  # the widget state was stored
    shown = "".join(
        str(model["state"].get("value", ""))
        for model in notebook.metadata["widgets"][STATE]["state"].values()
    )
    assert "<b>step 6</b>: run.end" in shown  # run-2's newest step, opened
    assert "Book the hotel in Lisbon for 3 nights?" in shown  # the thread's approval card
    assert "search_flights" in shown and "Have a wonderful trip to Lisbon!" in shown
