"""rewinddb's Jupyter widget (ipywidgets + Plotly). Not built yet: see the issues."""
