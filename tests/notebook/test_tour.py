"""examples/notebook_tour.ipynb runs in a real kernel and shows the widget, no errors."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

TOUR = Path(__file__).resolve().parents[2] / "examples" / "notebook_tour.ipynb"
WIDGET = "application/vnd.jupyter.widget-view+json"


def test_the_tour_runs_and_shows_the_explorer(tmp_path: Path) -> None:
    notebook = nbformat.read(TOUR, as_version=4)
    NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=120,
        store_widget_state=True,
        resources={"metadata": {"path": str(tmp_path)}},
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
