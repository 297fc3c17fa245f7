"""The error registry (``rewinddb.errors.CODES``) against the source, the docs and the web.

The source is read, not run: every code a raise site can produce (a ``code="..."``
literal, an f-string family such as ``invalid.{what}`` resolved through the calls that
give ``what``, or the default code of the class raised) must be registered, and every
registered code must be produced somewhere. docs/errors.md's table must be the
registry's, row for row, and the explorer must answer each code with its registered
status. Run this file as a script to print the table docs/errors.md needs.
"""

from __future__ import annotations

import ast
import re
import sys
import warnings
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import rewinddb
from rewinddb import _schema, errors
from rewinddb.demo import build_demo
from rewinddb.errors import CODES, ErrorCode, RewindError, UnregisteredCodeWarning
from rewinddb.web import create_app
from rewinddb.web import errors as web_errors

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ("backend", "web", "notebook_ext", "integrations")
DOCS = ROOT / "docs" / "errors.md"

#: f-strings whose variable part is not an argument: ``corrupt.<table>`` names a table
#: of the schema (``_damage``, ``Connection.damage``).
FAMILIES = {"corrupt.": {table.name.removeprefix("rewind_") for table in _schema.TABLES}}
#: Codes passed on rather than chosen: a RewindError's own code, re-raised or shown.
PASSED_ON = {
    ("web/app.py", "error.code"),
    ("web/writes.py", "error.code"),
    ("web/errors.py", "code_for(error)"),
    ("web/errors.py", "code"),  # ROUTE_CODES.get(...), counted from the table itself
}

#: The parameters already followed (module, ``function.parameter``): a recursion stops.
Seen = frozenset[tuple[str, str]]


@dataclass(frozen=True)
class Site:
    """Where a code is produced, and what users catch there (a class, or the explorer)."""

    where: str
    raiser: str


class Source:
    """The package's modules, parsed, with what resolving an argument needs."""

    def __init__(self) -> None:
        paths = [p for folder in PACKAGE for p in sorted((ROOT / folder).rglob("*.py"))]
        self.trees = {p.relative_to(ROOT).as_posix(): ast.parse(p.read_text()) for p in paths}
        self.parent: dict[ast.AST, ast.AST] = {}
        self.path_of: dict[ast.AST, str] = {}
        self.calls: dict[str, list[ast.Call]] = defaultdict(list)
        self.classes: dict[str, ast.ClassDef] = {}
        for path, tree in self.trees.items():
            for node in ast.walk(tree):
                self.path_of[node] = path
                for child in ast.iter_child_nodes(node):
                    self.parent[child] = node
                if isinstance(node, ast.Call) and (name := _callee(node)):
                    self.calls[name].append(node)
                elif isinstance(node, ast.ClassDef):
                    self.classes.setdefault(node.name, node)
        self.unresolved: list[str] = []

    def where(self, node: ast.AST) -> str:
        return f"{self.path_of[node]}:{getattr(node, 'lineno', 0)}"

    def up(self, node: ast.AST) -> Iterator[ast.AST]:
        while node in self.parent:
            node = self.parent[node]
            yield node

    def function(self, node: ast.AST) -> ast.FunctionDef | None:
        return next((n for n in self.up(node) if isinstance(n, ast.FunctionDef)), None)

    def lineage(self, name: str) -> list[str]:
        """``name`` and its bases among the package's classes, nearest first."""
        chain: list[str] = []
        while name in self.classes and name not in chain:
            chain.append(name)
            bases = [b for b in map(_name, self.classes[name].bases) if b in self.classes]
            name = bases[0] if bases else ""
        return chain

    def default_code(self, name: str) -> str | None:
        for cls in self.lineage(name):
            for stmt in self.classes[cls].body:
                target = stmt.targets[0] if isinstance(stmt, ast.Assign) else None
                if isinstance(stmt, ast.AnnAssign):
                    target = stmt.target
                value = getattr(stmt, "value", None)
                if _name(target) == "code" and isinstance(value, ast.Constant):
                    return str(value.value)
        return None

    def init_names_code(self, name: str) -> bool:
        """Whether the nearest ``__init__`` of ``name`` passes a ``code=`` itself."""
        for cls in self.lineage(name):
            for stmt in self.classes[cls].body:
                if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
                    return any(
                        isinstance(c, ast.Call) and any(k.arg == "code" for k in c.keywords)
                        for c in ast.walk(stmt)
                    )
        return False

    def values(self, node: ast.expr, seen: Seen = frozenset()) -> set[str]:
        """Every string ``node`` can be: a literal, either side of ``a if c else b``, a
        loop variable over literal tuples, or a parameter, through every call that
        passes it. Anything else is noted in ``unresolved``."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value}
        if isinstance(node, ast.IfExp):
            return self.values(node.body, seen) | self.values(node.orelse, seen)
        if isinstance(node, ast.Name):
            for loop in (n for n in self.up(node) if isinstance(n, ast.For)):
                found = self._loop_values(loop, node.id, seen)
                if found is not None:
                    return found
            function = self.function(node)
            if function is not None and node.id in _parameters(function):
                return self._argument_values(function, node.id, seen)
        self.unresolved.append(f"{self.where(node)}: {ast.unparse(node)}")
        return set()

    def _loop_values(self, loop: ast.For, name: str, seen: Seen) -> set[str] | None:
        if not isinstance(loop.iter, (ast.Tuple, ast.List)):
            return None
        names = [_name(t) for t in getattr(loop.target, "elts", [loop.target])]
        if name not in names:
            return None
        index = names.index(name)
        items = [getattr(item, "elts", [item])[index] for item in loop.iter.elts]
        return set().union(*(self.values(item, seen) for item in items))

    def _argument_values(self, function: ast.FunctionDef, name: str, seen: Seen) -> set[str]:
        key = (self.path_of[function], f"{function.name}.{name}")
        if key in seen:
            return set()
        positional = [a.arg for a in function.args.posonlyargs + function.args.args]
        found: set[str] = set()
        for call in self.calls[function.name]:
            argument = next((k.value for k in call.keywords if k.arg == name), None)
            if argument is None and name in positional:
                index = positional.index(name)
                if positional[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
                    index -= 1
                if index < len(call.args) and not isinstance(call.args[index], ast.Starred):
                    argument = call.args[index]
            if argument is not None:  # a call without it is another function's
                found |= self.values(argument, seen | {key})
        return found


def _callee(call: ast.Call) -> str | None:
    return _name(call.func)


def _name(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _parameters(function: ast.FunctionDef) -> list[str]:
    args = function.args
    return [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]


def _catchable(source: Source, cls: str, path: str) -> str:
    """What users catch for an error of class ``cls`` raised in ``path``: its nearest
    class that ``rewinddb.errors`` exports, else the explorer (its own errors)."""
    public = next((c for c in source.lineage(cls) if hasattr(errors, c)), None)
    if public is not None:
        return public
    return "explorer" if path.startswith("web/") else cls


def _code_values(source: Source, node: ast.expr) -> set[str]:
    """The codes a ``code=`` expression can produce (f-strings by their families)."""
    if isinstance(node, ast.IfExp):
        return _code_values(source, node.body) | _code_values(source, node.orelse)
    if not isinstance(node, ast.JoinedStr):
        return source.values(node)
    parts = [v for v in node.values if isinstance(v, ast.FormattedValue)]
    prefix = "".join(str(v.value) for v in node.values if isinstance(v, ast.Constant))
    if len(parts) != 1 or node.values[-1] is not parts[0]:
        source.unresolved.append(f"{source.where(node)}: {ast.unparse(node)}")
        return set()
    if prefix in FAMILIES:
        return {prefix + member for member in FAMILIES[prefix]}
    return {prefix + value for value in source.values(parts[0].value)}


def raised_codes(source: Source) -> dict[str, set[Site]]:
    """Every code the package's source can produce, with where and by what."""
    found: dict[str, set[Site]] = defaultdict(set)
    for call in (c for calls in source.calls.values() for c in calls):
        path, callee = source.path_of[call], _callee(call)
        assert callee is not None
        code = next((k.value for k in call.keywords if k.arg == "code"), None)
        if callee == "error_response" and len(call.args) >= 3:
            code, raiser = call.args[2], "explorer"
        elif code is not None:
            cls = callee
            if callee == "__init__":  # super().__init__(..., code=...) in an error class
                cls = next(n.name for n in source.up(call) if isinstance(n, ast.ClassDef))
            raiser = _catchable(source, cls, path)
        elif "RewindError" in source.lineage(callee) and not source.init_names_code(callee):
            default = source.default_code(callee)
            assert default is not None, callee
            found[default].add(Site(source.where(call), _catchable(source, callee, path)))
            continue
        else:
            continue
        if (path, ast.unparse(code)) in PASSED_ON:
            continue
        for value in _code_values(source, code):
            found[value].add(Site(source.where(call), raiser))
    web = Site("web/errors.py", "explorer")
    for value in [*web_errors.ROUTE_CODES.values(), web_errors.UNCODED]:
        found[value].add(web)
    return found


@pytest.fixture(scope="module")
def source() -> Source:
    return Source()


@pytest.fixture(scope="module")
def raised(source: Source) -> dict[str, set[Site]]:
    return raised_codes(source)


# --- the registry against the source ---------------------------------------------------


def test_the_scan_reads_every_raise_site(source: Source, raised: dict[str, set[Site]]) -> None:
    """No code expression escaped the scan (a new ``code=variable`` must be resolvable,
    a family in FAMILIES, or a code passed on), and the scan found the dynamic ones."""
    assert source.unresolved == []
    for family in ("invalid.key", "invalid.branch", "invalid.limit", "invalid.after"):
        assert any("_engine.py" in s.where for s in raised[family]), family
    assert {"invalid.kv", "invalid.state", "invalid.snapshot", "corrupt.commits"} <= set(raised)
    assert any("presenter.py" in s.where for s in raised["invalid.as_of"])  # a loop's names


def test_every_raised_code_is_registered(raised: dict[str, set[Site]]) -> None:
    missing = {code: sorted(s.where for s in raised[code]) for code in raised if code not in CODES}
    assert missing == {}, "register these codes in rewinddb.errors.CODES"


def test_every_registered_code_is_raised(raised: dict[str, set[Site]]) -> None:
    assert [code for code in CODES if code not in raised] == [], "dead codes: nothing raises them"


def test_raised_by_names_what_users_catch(raised: dict[str, set[Site]]) -> None:
    """Each code's "raised by" names the class users catch at every site that raises it
    (its nearest class exported by ``rewinddb.errors``), or the explorer."""
    wrong = {}
    for code, entry in CODES.items():
        named = set(re.findall(r"`(\w+)`", entry.raised_by))
        if "web explorer" in entry.raised_by:
            named.add("explorer")
        missing = {site.raiser for site in raised.get(code, ())} - named
        if missing:
            wrong[code] = sorted(missing)
    assert wrong == {}


def test_codes_are_well_formed_and_statuses_are_errors() -> None:
    for code, entry in CODES.items():
        assert entry.code == code and re.fullmatch(r"[a-z_]+(\.[a-z_]+)*", code), code
        assert 400 <= entry.status < 600, code
        for text in (entry.meaning, entry.raised_by):
            assert text and "|" not in text and "\n" not in text, code


def test_codes_users_match_on_stay() -> None:
    """The codes the architecture documents, and every exported class's own code (but
    the two bases that are never raised as they are)."""
    documented = {
        "not_found.engine.branch",
        "history_unavailable",
        "conflict.append",
        "conflict.merge",
        "invalid.json_path",
        "invalid.value",
    }
    assert documented <= set(CODES)
    exported = [*vars(errors).values(), *(getattr(rewinddb, n) for n in rewinddb.__all__)]
    for kind in exported:
        if isinstance(kind, type) and issubclass(kind, RewindError):
            assert kind.code in CODES or kind.code in ("rewind", "invalid"), kind


def test_literal_statuses_on_error_pages_are_the_registrys(source: Source) -> None:
    """An error page built with a literal status and code agrees with the registry."""
    checked = 0
    for call in source.calls["error_response"]:
        status, code = call.args[1:3]
        if isinstance(status, ast.Constant) and isinstance(code, ast.Constant):
            assert CODES[code.value].status == status.value, source.where(call)
            checked += 1
    assert checked >= 1


# --- the runtime check -----------------------------------------------------------------


def test_an_unregistered_code_built_inside_rewinddb_warns_at_its_raise_site() -> None:
    """Built by rewinddb's own code, an unregistered code warns (the tests' filter makes
    that a failure) and points at the line that built it, through subclasses'
    ``__init__``; the error itself is built as asked."""
    module = {"__name__": "rewinddb.probe", "__file__": "probe.py", "errors": errors}
    code = (
        "class Own(errors.NotFoundError):\n"
        "    def __init__(self, what):\n"
        "        super().__init__(f'no {what}', code='not_found.probe')\n"
        "def build():\n"
        "    return [errors.RewindError('x', code='probe.typo'), Own('thing')]\n"
    )
    exec(compile(code, "probe.py", "exec"), module)
    with pytest.warns(UnregisteredCodeWarning) as caught:
        plain, own = module["build"]()
    assert [(w.filename, w.lineno) for w in caught] == [("probe.py", 5), ("probe.py", 5)]
    assert "probe.typo" in str(caught[0].message) and "CODES" in str(caught[0].message)
    assert (plain.code, own.code, own.message) == ("probe.typo", "not_found.probe", "no thing")


def test_codes_of_other_packages_and_registered_codes_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        error = rewinddb.InvalidInputError("a presenter's own", code="invalid.encoding")
        assert error.code == "invalid.encoding"
        module = {"__name__": "rewinddb.probe", "errors": errors}
        exec("errors.RewindError('x', code='storage'); errors.EventNotFound('y')", module)


# --- the docs --------------------------------------------------------------------------


def row(entry: ErrorCode) -> str:
    return f"| `{entry.code}` | {entry.meaning} | {entry.status} | {entry.raised_by} |"


def table() -> str:
    head = "| Code | Meaning | HTTP status | Raised by |\n|---|---|---|---|\n"
    return head + "\n".join(row(entry) for entry in CODES.values()) + "\n"


def table_problems(text: str) -> list[str]:
    """How the table in ``text`` differs from the registry: rows missing, rows that are
    no registered code, rows that say something else, or rows out of order."""
    rows = [line.strip() for line in text.splitlines() if line.startswith("| `")]
    codes = [line.split("`")[1] for line in rows]
    problems = [f"missing: {row(e)}" for e in CODES.values() if e.code not in codes]
    problems += [
        f"not a registered code: {line}" for line in rows if line.split("`")[1] not in CODES
    ]
    for line, code in zip(rows, codes, strict=True):
        if code in CODES and line != row(CODES[code]):
            problems.append(f"differs from the registry: {line}\n  should be: {row(CODES[code])}")
    if len(set(codes)) != len(codes):
        problems.append("a code is listed twice")
    if not problems and codes != list(CODES):
        problems.append("the rows are not in the registry's order")
    return problems


def test_the_docs_table_is_the_registry() -> None:
    problems = table_problems(DOCS.read_text())
    assert problems == [], "\n".join(problems) + f"\n\nthe table should be:\n{table()}"


def test_the_docs_check_catches_a_missing_an_extra_or_a_changed_row() -> None:
    text = DOCS.read_text()
    assert table_problems(text) == []
    busy = row(CODES["busy"])
    assert busy in text
    assert table_problems(text.replace(busy + "\n", "")) == [f"missing: {busy}"]
    extra = "| `busy.forever` | never raised | 503 | nothing |"
    problems = table_problems(text.replace(busy, f"{busy}\n{extra}"))
    assert problems == [f"not a registered code: {extra}"]
    changed = table_problems(text.replace(busy, busy.replace("503", "500")))
    assert len(changed) == 1 and changed[0].startswith("differs")


# --- the web ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    path = tmp_path_factory.mktemp("web") / "demo"
    build_demo(path).close()
    with TestClient(create_app(path), base_url="http://localhost") as test_client:
        yield test_client


@pytest.mark.parametrize(
    ("method", "url", "code"),
    [
        ("GET", "/api/branches/nope", "not_found.engine.branch"),
        ("GET", "/api/branches/research/events/999", "not_found"),
        ("GET", "/api/nowhere", "not_found.page"),
        ("GET", "/branches/research/steps/abc.json", "invalid.step"),
        ("GET", "/branches/~00.json", "invalid.branch"),  # a name that cannot exist: 404
        ("GET", "/branches/research/value?space=nope&key=x", "invalid.space"),
        ("GET", "/compare.json", "invalid.compare"),
        ("GET", "/api/branches/research/events?limit=0", "invalid.request"),
        ("DELETE", "/api/branches", "invalid.method"),
    ],
)
def test_the_explorer_answers_a_code_with_its_registered_status(
    client: TestClient, method: str, url: str, code: str
) -> None:
    response = client.request(method, url)
    if response.headers["content-type"].startswith("application/json"):
        assert response.json()["error"]["code"] == code
    else:
        assert f"error code <code>{code}</code>" in response.text
    assert response.status_code == CODES[code].status


def test_writes_refused_are_answered_with_their_registered_status(tmp_path: Path) -> None:
    """A fork onto a name that exists is ``conflict.branch_exists`` (409), a form that
    cannot be read ``invalid.body`` (400, Starlette's own refusal)."""
    build_demo(tmp_path / "demo").close()
    app = create_app(tmp_path / "demo", allow_writes=True)
    with TestClient(app, base_url="http://localhost") as writable:
        token = writable.app.state.csrf_token  # type: ignore[attr-defined]
        taken = writable.post(
            "/branches/research/fork", data={"name": "run-1", "csrf_token": token}
        )
        unreadable = writable.post(
            "/branches/research/fork",
            content=b"not a form",
            headers={"content-type": "multipart/form-data"},
        )
    for response, code in ((taken, "conflict.branch_exists"), (unreadable, "invalid.body")):
        assert f"error code <code>{code}</code>" in response.text
        assert response.status_code == CODES[code].status
    assert (taken.status_code, unreadable.status_code) == (409, 400)


@pytest.mark.parametrize("code", list(CODES))
def test_every_code_gets_its_registered_status(code: str) -> None:
    assert web_errors.status_for(RewindError("x", code=code)) == CODES[code].status


def test_codes_outside_the_registry_get_their_class_status() -> None:
    """A presenter of another package may raise codes of its own: its class decides."""
    assert web_errors.status_for(rewinddb.NotFoundError("x", code="not_found.own")) == 404
    assert web_errors.status_for(rewinddb.InvalidInputError("x", code="invalid.own")) == 422
    assert web_errors.status_for(RewindError("x", code="own")) == 500


if __name__ == "__main__":
    sys.stdout.write(table())
