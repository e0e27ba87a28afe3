"""The fitted numbers of retrieval, read from ``weights.json`` (written by ``benchmarks/fit_retrieval.py``).

Why data, not code: a refit rewrites one file instead of pasting a printout, and loading checks that every
weight names a feature the code computes (a misspelled name used to count silently as zero).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ConfigurationError
from .confidence import CONFIDENCE_FEATURES
from .features import FEATURES

WEIGHTS_PATH = Path(__file__).with_name("weights.json")
MODELS = ("error", "prose")  # pasted errors, prose questions


@dataclass(frozen=True)
class FittedWeights:
    """Fusion weights and confidence weights per model, as vectors in feature order, and the threshold."""

    fusion: dict[str, np.ndarray]
    confidence: dict[str, np.ndarray]
    confidence_threshold: float
    # How far an ingested record's fused score must exceed a curated record's to rank above it (ranking
    # only; confidence reads the scores without it). Written by benchmarks/fit_ingested_offset.py.
    ingested_offset: float = 0.0
    # The confidence of a general answer (Python's record of an error raised inside or through a library): the
    # share of such answers found right, so it is never shown as sure as the cause's own record. Written by
    # benchmarks/fit_confidence.py; 1.0 leaves it uncapped.
    general_confidence: float = 1.0

    @classmethod
    def from_dict(cls, data: dict, where: str = "weights") -> FittedWeights:
        try:
            fusion = {m: _vector(data["weights"][m], FEATURES, f"{where}: weights.{m}") for m in MODELS}
            confidence = {
                m: _vector(data["confidence_weights"][m], CONFIDENCE_FEATURES, f"{where}: confidence_weights.{m}")
                for m in MODELS
            }
            threshold = float(data["confidence_threshold"])
            offset = float(data.get("ingested_offset", 0.0))
            general = float(data.get("general_confidence", 1.0))
            if not 0.0 < general <= 1.0:
                raise ValueError(f"general_confidence {general} is not in (0, 1]")
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(f"{where} is not a retrieval weights file ({exc!r}); refit it") from exc
        return cls(fusion, confidence, threshold, offset, general)

    def to_dict(self) -> dict:
        def named(vectors: dict[str, np.ndarray], names: tuple[str, ...]) -> dict:
            return {m: {n: round(float(v), 3) for n, v in zip(names, vectors[m], strict=True)} for m in MODELS}

        return {
            "about": "Written by benchmarks/fit_retrieval.py (do not edit by hand): the fusion weights of each "
            "model ('error' for pasted errors, 'prose' for questions), the confidence model and the threshold; "
            "ingested_offset by benchmarks/fit_ingested_offset.py; general_confidence by benchmarks/fit_confidence.py.",
            "weights": named(self.fusion, FEATURES),
            "confidence_weights": named(self.confidence, CONFIDENCE_FEATURES),
            "confidence_threshold": round(self.confidence_threshold, 3),
            "ingested_offset": round(self.ingested_offset, 3),
            "general_confidence": round(self.general_confidence, 3),
        }


def _vector(weights: dict[str, float], names: tuple[str, ...], where: str) -> np.ndarray:
    if set(weights) != set(names):
        unknown, missing = sorted(set(weights) - set(names)), sorted(set(names) - set(weights))
        raise ValueError(f"{where} names {unknown} that no feature has and lacks {missing}")
    return np.array([float(weights[n]) for n in names])


@functools.lru_cache(maxsize=4)
def load_weights(path: Path = WEIGHTS_PATH) -> FittedWeights:
    """The fitted weights in ``path`` (default: the ones shipped with errata), checked against the features."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot read the retrieval weights {path}: {exc}") from exc
    return FittedWeights.from_dict(data, str(path))


def save_weights(weights: FittedWeights, path: Path = WEIGHTS_PATH) -> None:
    """Write ``weights`` where :func:`load_weights` reads them (the fit script calls this)."""
    from ..storage.files import atomic_path

    with atomic_path(Path(path)) as tmp:
        tmp.write_text(json.dumps(weights.to_dict(), indent=1) + "\n", encoding="utf-8")
    load_weights.cache_clear()
