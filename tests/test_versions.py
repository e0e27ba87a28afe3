"""The record valid for the installed version of its library is preferred (versioned records' release tags)."""

from __future__ import annotations

import json

import pytest

from assistant import Assistant, Settings
from assistant.retrieval.versions import fits, release_range
from assistant.settings import BUNDLED_KB_DIR

from .conftest import write_lines


def _record(base: dict, **changes) -> dict:
    return {**base, **changes}


@pytest.fixture
def versioned_kb(tmp_path):
    """Two records of one raise as two releases word it: 1.x says 'widget', 2.x says 'gadget'."""
    line = (BUNDLED_KB_DIR / "encode__httpx.jsonl").read_text().splitlines()[0]
    base = json.loads(line)["record"]
    common = dict(repo="acme/widgets", errorClass="WidgetError", filePath="widgets/core.py", solutions=["Fix it"])
    old = _record(
        base, **common, id="aaaaaaaaaaaaaaaa", slug="old", errorMessage="the widget frame is not aligned",
        messagePattern=r"the \w+ frame is not aligned", tags=["widgets", "release-first:1.0", "release-last:1.9"],
    )  # fmt: skip
    new = _record(
        base, **common, id="bbbbbbbbbbbbbbbb", slug="new", errorMessage="the gadget frame is not aligned",
        messagePattern=r"the \w+ frame is not aligned", tags=["widgets", "release-first:2.0", "release-last:2.3"],
    )  # fmt: skip
    kb = tmp_path / "kb"
    kb.mkdir()
    write_lines(kb / "acme__widgets.jsonl", [{"record": old}, {"record": new}])
    return kb


def test_release_tags_give_a_range_and_fit_an_installed_version(versioned_kb, tmp_path, embedder):
    assistant = Assistant(Settings.load(env={}), kb=versioned_kb, index_dir=tmp_path / "index", embedder=embedder)
    old, new = sorted(assistant.records, key=lambda r: r.slug == "new")
    assert str(release_range(old)[0]) == "1.0" and str(release_range(new)[1]) == "2.3"
    assert fits(new, {"widgets": "2.1"}) and fits(old, {"widgets": "2.1"}) is False
    assert fits(old, {}) is None


def test_the_record_of_the_installed_release_answers(versioned_kb, tmp_path, embedder):
    assistant = Assistant(Settings.load(env={}), kb=versioned_kb, index_dir=tmp_path / "index", embedder=embedder)
    paste = "widgets.core.WidgetError: the widget frame is not aligned"
    assert assistant.ask(paste).hits[0].record.slug == "old"  # worded as 1.x words it
    assert assistant.ask(paste, installed={"widgets": "2.1"}).hits[0].record.slug == "new"
    assert assistant.ask(paste, installed={"widgets": "1.5"}).hits[0].record.slug == "old"
    assert assistant.ask(paste, installed={"other": "9.9"}).hits[0].record.slug == "old"
