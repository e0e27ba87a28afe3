"""``errata refresh-kb``: the bundled copy mirrors the curated knowledge base, and keeps its own wordings."""

from __future__ import annotations

import shutil

import pytest

from assistant.errors import KnowledgeBaseError
from assistant.knowledge.knowledge_base import refresh_bundled_kb
from assistant.settings import BUNDLED_KB_DIR


def test_refresh_mirrors_the_source_and_leaves_the_wordings_folder(tmp_path):
    source = tmp_path / "shared" / "records"
    source.mkdir(parents=True)
    (tmp_path / "shared" / "eval").mkdir()
    (tmp_path / "shared" / "eval" / "dev.jsonl").write_text('{"id": "q1", "query": "x", "relevant": []}\n')
    for name in ("ollama__ollama-python.jsonl", "huggingface__smolagents.jsonl"):
        shutil.copy(BUNDLED_KB_DIR / name, source / name)
    target, evals = tmp_path / "bundled", tmp_path / "bundled-eval"
    target.mkdir()
    shutil.copytree(BUNDLED_KB_DIR / "wordings", target / "wordings", dirs_exist_ok=True)
    (target / "stale__lib.jsonl").write_text((source / "ollama__ollama-python.jsonl").read_text())
    (target / "ollama__ollama-python.jsonl").write_text("")  # an old copy, changed upstream

    report = refresh_bundled_kb(source, target, evals)
    assert sorted(report.added) == ["dev.jsonl", "huggingface__smolagents.jsonl"]
    assert (report.changed, report.removed) == (["ollama__ollama-python.jsonl"], ["stale__lib.jsonl"])
    assert sorted(p.name for p in target.glob("*.jsonl")) == sorted(p.name for p in source.glob("*.jsonl"))
    assert (target / "wordings" / "pydantic__pydantic-ai.jsonl").stat().st_size > 0  # the bundled wordings stay
    assert "already up to date" in refresh_bundled_kb(source, target, evals).summary()

    # A malformed upstream line replaces nothing.
    before = (target / "huggingface__smolagents.jsonl").read_bytes()
    with (source / "huggingface__smolagents.jsonl").open("a") as out:
        out.write("{not json\n")
    with pytest.raises(KnowledgeBaseError, match="huggingface__smolagents.jsonl"):
        refresh_bundled_kb(source, target, evals)
    assert (target / "huggingface__smolagents.jsonl").read_bytes() == before
