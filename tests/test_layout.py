"""The package's shape: no import circles (lazy imports included), fitted weights that name real features."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from assistant.errors import ConfigurationError
from assistant.retrieval.confidence import CONFIDENCE_FEATURES
from assistant.retrieval.features import FEATURES
from assistant.retrieval.weights import WEIGHTS_PATH, FittedWeights, load_weights
from assistant.settings import Settings

PACKAGE = Path(__file__).resolve().parents[1] / "assistant"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Every module of the package and the package modules it imports, at top level or inside functions."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{a.name}" for a in node.names] + [base]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(target + "."):
                    graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert len(graph) > 30
    # A package's __init__ re-exporting its own modules is not a circle: leave those edges out.
    edges = {m: {t for t in ts if not (m.count(".") and t.startswith(m + "."))} for m, ts in graph.items()}
    assert find_cycle(edges) is None, " -> ".join(find_cycle(edges) or [])


def test_the_cycle_check_finds_a_planted_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_is_too_long_to_read():
    long = {module_name(p): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > 420}
    assert not long


def test_weights_file_names_exactly_the_features():
    data = json.loads(WEIGHTS_PATH.read_text())
    for model in ("error", "prose"):
        assert list(data["weights"][model]) == list(FEATURES)
        assert list(data["confidence_weights"][model]) == list(CONFIDENCE_FEATURES)
    fitted = load_weights()
    assert fitted.fusion["error"].shape == (len(FEATURES),)
    assert Settings.load(env={}).confidence_threshold == pytest.approx(data["confidence_threshold"])


def test_a_misspelled_weight_is_an_error_not_a_zero():
    data = json.loads(WEIGHTS_PATH.read_text())
    data["weights"]["error"]["pattern_mesage"] = data["weights"]["error"].pop("pattern_message")
    with pytest.raises(ConfigurationError, match="pattern_mesage"):
        FittedWeights.from_dict(data)


def test_weights_round_trip_through_their_json_shape():
    fitted = load_weights()
    again = FittedWeights.from_dict(json.loads(json.dumps(fitted.to_dict())))
    for model in ("error", "prose"):
        assert (again.fusion[model] == fitted.fusion[model]).all()
    assert again.confidence_threshold == fitted.confidence_threshold


def test_bm25_summed_here_equals_bm25s_own_scores_on_the_bundled_records(assistant, bundled_index_dir):
    """The Retriever sums BM25 from bm25s's matrix itself (bm25s scores every record, too slow at a million);
    the sums must stay bm25s's own scores, for the bm25s versions pyproject.toml admits."""
    import bm25s
    import numpy as np

    from assistant.retrieval.features import bm25_sum
    from assistant.retrieval.query_words import query_words

    retriever = assistant.retriever
    signals = retriever.signals
    n = len(assistant.records)
    own = bm25s.BM25.load(bundled_index_dir / "signals" / "bm25_all", mmap=True)  # what serving reads without bm25s
    for text in ("httpx ConnectTimeout timed out", "Agent interrupted max steps", "token use_auth_token both"):
        _message_tokens, all_tokens, _words, _unknown = query_words(text, signals)
        columns = {t: signals.all_columns(t) for t in set(all_tokens)}
        ours = bm25_sum(columns, all_tokens, n)
        theirs = own.get_scores_from_ids(all_tokens)
        assert ours.max() > 0
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
