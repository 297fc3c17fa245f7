"""The four folders install as one ``rewinddb`` namespace, and nothing else."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_package_folder_is_declared() -> None:
    """A subfolder with __init__.py that is not in `packages` would be left out of wheels."""
    setuptools = PYPROJECT["tool"]["setuptools"]
    declared = set(setuptools["packages"])
    found = set()
    for name, folder in setuptools["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            found.add(".".join([name, *relative.parts]) if relative.parts else name)
    assert found <= declared, found - declared


def test_the_parts_import_under_rewinddb() -> None:
    import rewinddb

    assert Path(rewinddb.__file__).parent.name == "backend"
    for part in ("web", "notebook", "integrations"):
        importlib.import_module(f"rewinddb.{part}")


def test_backend_refuses_to_be_imported_as_backend() -> None:
    sys.path.insert(0, str(ROOT))
    try:
        with pytest.raises(ImportError, match="import it as 'rewinddb'"):
            importlib.import_module("backend")
    finally:
        sys.path.remove(str(ROOT))
        sys.modules.pop("backend", None)


def test_extras_and_python_version() -> None:
    project = PYPROJECT["project"]
    assert project["requires-python"] == ">=3.10"
    assert {"web", "notebook", "langgraph", "postgres", "test", "all"} <= set(
        project["optional-dependencies"]
    )


def test_public_api_is_exported() -> None:
    import rewinddb

    for name in rewinddb.__all__:
        assert hasattr(rewinddb, name), name


def test_web_templates_and_assets_ship_in_the_package() -> None:
    """Every template and static file of the web explorer is matched by package-data."""
    import fnmatch

    patterns = PYPROJECT["tool"]["setuptools"]["package-data"]["rewinddb.web"]
    web = ROOT / "web"
    for folder in ("templates", "static"):
        for path in (web / folder).iterdir():
            relative = path.relative_to(web).as_posix()
            assert any(fnmatch.fnmatch(relative, pattern) for pattern in patterns), relative


def test_the_readme_setup_command_serves_the_demo() -> None:
    readme = (ROOT / "README.md").read_text()
    command = readme.split("## Setup and run", 1)[1].split("```bash\n", 1)[1].split("\n", 1)[0]
    assert '-e ".[all]"' in command and command.endswith("rewinddb demo")


def _tracked() -> set[str] | None:
    """The files git tracks in this checkout, or None when it is not one."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return None
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
    )
    return set(listed.stdout.decode().split("\0")) - {""}


def test_a_wheel_built_from_the_tree_holds_only_tracked_files(tmp_path: Path) -> None:
    """``pip wheel .`` builds in the tree's ``build/`` and packs everything there, so a
    module deleted or moved since an earlier build (``rewinddb/readable.py``) still
    ships, as does a file nobody added to git: every file of the wheel must be a
    tracked file of the folder its package maps to."""
    tracked = _tracked()
    if tracked is None:
        pytest.skip("not a git checkout")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("rewinddb-*.whl")
    folders = PYPROJECT["tool"]["setuptools"]["package-dir"]
    # The longest package name first: rewinddb.web/... maps to web/, not backend/web/.
    prefixes = sorted(
        ((name.replace(".", "/") + "/", folder) for name, folder in folders.items()),
        key=lambda item: -len(item[0]),
    )
    shipped = [
        name
        for name in zipfile.ZipFile(wheel).namelist()
        if not name.split("/", 1)[0].endswith(".dist-info")
    ]
    assert shipped
    untracked = []
    for name in shipped:
        prefix, folder = next((p, f) for p, f in prefixes if name.startswith(p))
        source = f"{folder}/{name[len(prefix) :]}"
        if source not in tracked:
            where = "untracked" if (ROOT / source).exists() else "stale (not in the tree)"
            untracked.append(f"{name} <- {source}: {where}")
    assert not untracked, (
        "the wheel ships files git does not track; remove build/lib (rm -rf build/lib) "
        "for stale ones, git add or delete untracked ones:\n" + "\n".join(untracked)
    )
