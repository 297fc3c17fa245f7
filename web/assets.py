"""Plotly's JavaScript, served from the installed ``plotly`` package (never a CDN:
users may be offline). htmx is vendored unmodified in ``static/``."""

from __future__ import annotations

from pathlib import Path

import plotly
from starlette.responses import FileResponse

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
HTMX_VERSION = "2.0.11"


async def plotly_js_route() -> FileResponse:
    return FileResponse(
        PLOTLY_JS,
        media_type="text/javascript",
        headers={"Cache-Control": "public, max-age=86400"},
    )
