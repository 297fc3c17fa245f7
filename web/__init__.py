"""rewinddb's web explorer (FastAPI + Jinja2/htmx + Plotly). Not built yet: see the issues."""
