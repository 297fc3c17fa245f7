"""The saver's storage layout: what it writes today, and a database an earlier layout
wrote (``data/saver_layout_1.*``, made by ``data/make_saver_layout_1.py``) read and
continued by today's saver as LangGraph showed it then."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from chat_graphs import chat_graph, thread
from layout_graphs import Command, approval_graph, history, write_threads

import rewinddb
from rewinddb.integrations.langgraph import RewindSaver
from rewinddb.integrations.langgraph.presenter import LangGraphPresenter

DATA = Path(__file__).parent / "data"
PRESENTER = LangGraphPresenter()


@pytest.fixture
def layout_1(tmp_path: Path) -> Path:
    """A copy of the database the earlier layout wrote."""
    path = tmp_path / "agent"
    path.mkdir()
    shutil.copyfile(DATA / "saver_layout_1.sqlite3", path / "rewind.sqlite3")
    return path


def test_a_database_of_the_earlier_layout_reads_as_it_did(layout_1: Path) -> None:
    shown = json.loads((DATA / "saver_layout_1.json").read_text())
    with RewindSaver.from_path(layout_1) as saver:
        for thread_id in ("chat", "approve"):
            assert history(saver, thread_id) == shown[thread_id]
        db = saver.db
        # Its trigger channels are keys, and the overview still tells who waits.
        assert "channel/branch:to:approve" in db.at("lg/approve").kv.keys("channel/")
        approve = PRESENTER.summary(db, db.branches.get("lg/approve"))
        assert (approve.status, approve.waiting_on) == ("interrupted", "approve")
        assert PRESENTER.summary(db, db.branches.get("lg/chat~d5c2aeaf")).status == "finished"


def test_a_thread_of_the_earlier_layout_goes_on(layout_1: Path) -> None:
    shown = json.loads((DATA / "saver_layout_1.json").read_text())
    with RewindSaver.from_path(layout_1) as saver:
        chat = chat_graph(saver)
        newest = chat.get_state(thread("chat"))
        assert newest.config["configurable"]["checkpoint_id"] == shown["chat"][0]["id"]
        assert chat.invoke({"log": ["more"]}, thread("chat"))["log"] == [
            *shown["chat"][0]["values"]["log"],
            "more",
            "reply 5",
        ]
        after = history(saver, "chat")
        assert after[len(after) - len(shown["chat"]) :] == shown["chat"]
        assert [s["step"] for s in after[:3]] == [7, 6, 5] and after[0]["next"] == []
        # Its versions keep their width, so they still compare in number order.
        versions = chat.get_state(thread("chat")).config
        tuple_ = saver.get_tuple(versions)
        assert tuple_ is not None
        assert all(
            len(v.split(".")[0]) == 32 for v in tuple_.checkpoint["channel_versions"].values()
        )

        approval = approval_graph(saver)
        done = approval.invoke(Command(resume="ann"), thread("approve"))
        assert done == {"trail": ["draft", "approved by ann", "sent"]}
        db = saver.db
        assert PRESENTER.summary(db, db.branches.get("lg/approve")).status == "finished"
        assert history(saver, "approve")[-3:] == shown["approve"]


def test_trigger_channels_live_in_the_checkpoint_record(tmp_path: Path) -> None:
    with RewindSaver.from_path(tmp_path / "agent") as saver:
        write_threads(saver)
        db = saver.db
        for name in ("lg/chat", "lg/chat~" + "", "lg/approve"):
            branches = [b.name for b in db.branches.list() if b.name.startswith(name)]
            for branch in branches:
                keys = db.at(branch).kv.keys("channel/")
                assert not [
                    k for k in keys if k.startswith(("channel/branch:to:", "channel/__start__"))
                ]
        # The waiting thread's record holds the trigger of the node it waits on.
        record = db.at("lg/approve").kv.get("checkpoint")
        assert list(record["triggers"]) == ["branch:to:approve"]
        approve = PRESENTER.summary(db, db.branches.get("lg/approve"))
        assert (approve.status, approve.waiting_on) == ("interrupted", "approve")
        # Versions are 16 digits, and compare in number order.
        state = approval_graph(saver).get_state(thread("approve"))
        found = saver.get_tuple(state.config)
        assert found is not None
        versions = found.checkpoint["channel_versions"]
        assert {len(v) for v in versions.values()} == {16}
        assert saver.get_next_version("0000000000000009") == "0000000000000010"
        assert saver.get_next_version(None) == "0000000000000001"
        assert saver.get_next_version(7) == "0000000000000008"


def test_a_linear_thread_writes_its_namespace_record_once(tmp_path: Path) -> None:
    with RewindSaver.from_path(tmp_path / "agent") as saver:
        graph = chat_graph(saver)
        for _ in range(5):
            graph.invoke({"log": ["hi"]}, thread("t"))
        index = saver.db.at("lg-index")
        assert len(index.kv.history("ns/t/")) == 1
        states = list(graph.get_state_history(thread("t")))
        newest = graph.get_state(thread("t"))
        assert newest.config["configurable"]["checkpoint_id"] == max(
            s.config["configurable"]["checkpoint_id"] for s in states
        )
        # A time-travel fork becomes the newest, then the line it left does again.
        first = [s for s in states if s.metadata["step"] == 1][-1]
        graph.invoke({"log": ["fork"]}, first.config)
        forked = graph.get_state(thread("t"))
        assert forked.values["log"] == ["hi", "reply 1", "fork", "reply 3"]
        graph.invoke({"log": ["back"]}, newest.config)
        back = graph.get_state(thread("t"))
        assert back.values["log"] == [
            *newest.values["log"],
            "back",
            f"reply {len(newest.values['log']) + 1}",
        ]
        assert len(index.kv.history("ns/t/")) == 3


def test_a_late_older_checkpoint_leaves_the_newest_where_it_is(tmp_path: Path) -> None:
    with RewindSaver.from_path(tmp_path / "agent") as saver:
        graph = chat_graph(saver)
        graph.invoke({"log": ["hi"]}, thread("t"))
        states = list(graph.get_state_history(thread("t")))
        newest, oldest = states[0], states[-1]
        found = saver.get_tuple(newest.config)
        assert found is not None
        # A child of the newest whose id is older (another process's clock, say): it
        # goes on the newest's branch, and the newest stays the thread's newest.
        late_id = oldest.config["configurable"]["checkpoint_id"][:-1] + "f"
        late = saver.put(newest.config, {**found.checkpoint, "id": late_id}, found.metadata, {})
        assert saver.get_tuple(late) is not None
        assert saver.db.at("lg/t").kv.get("checkpoint")["id"] == late_id
        latest = graph.get_state(thread("t")).config["configurable"]["checkpoint_id"]
        assert latest == newest.config["configurable"]["checkpoint_id"]
        # The next checkpoint on that branch is the newest again.
        graph.invoke({"log": ["more"]}, late)
        assert graph.get_state(thread("t")).values["log"][-2:] == ["more", "reply 3"]


def test_a_thread_without_checkpoints_has_no_newest(tmp_path: Path) -> None:
    with rewinddb.open(tmp_path / "agent") as db:
        saver = RewindSaver(db)
        assert saver.get_tuple(thread("nobody")) is None
        assert list(saver.list(thread("nobody"))) == []


@pytest.mark.parametrize("newest", ["lg/missing", "lg/other", "lg/t~00000000", 7])
def test_a_namespace_record_naming_a_wrong_newest_branch_falls_back_to_its_head(
    tmp_path: Path, newest: object
) -> None:
    with rewinddb.open(tmp_path / "agent") as db:
        saver = RewindSaver(db)
        graph = chat_graph(saver)
        graph.invoke({"log": ["hi"]}, thread("t"))
        graph.invoke({"log": ["x"]}, thread("other"))
        head = graph.get_state(thread("t"))
        index = db.at("lg-index")
        record = index.kv.get("ns/t/")
        index.kv.put(
            "ns/t/",
            {**record, "newest": newest, "head": head.config["configurable"]["checkpoint_id"]},
        )
        assert graph.get_state(thread("t")).values == head.values
        graph.invoke({"log": ["y"]}, head.config)  # writing goes on, and moves the newest
        assert graph.get_state(thread("t")).values["log"] == ["hi", "reply 1", "y", "reply 3"]
