"""One settings object for every front end.

Values come from, in rising priority: defaults, ``ERRATA_*`` environment variables, and explicit
overrides (CLI flags or keyword arguments). Nothing else in the package reads ``os.environ``
for errata's own options.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigurationError

PACKAGE_DIR = Path(__file__).resolve().parent
BUNDLED_KB_DIR = PACKAGE_DIR / "data" / "kb"
BUNDLED_EVAL_DIR = PACKAGE_DIR / "data" / "eval"  # the eval sets beside the curated records (dev.jsonl)
# The bundled MiniLM run by ONNX Runtime with int8 weights, for records and queries alike: twice the
# speed of the float model at the same retrieval (dev Hit@1 0.939 against 0.941, real-world 0.897 against
# 0.893, abstention 98.2% both; see docs/architecture.md), so the first build fits in 30 s on 2 cores.
TORCH_EMBEDDER = "bundled:all-MiniLM-L6-v2"  # the same weights run by sentence-transformers (float)
DEFAULT_EMBEDDER = TORCH_EMBEDDER + "-onnx-int8"


def _default_index_dir() -> Path:
    """``index/`` beside the project when run from a checkout, else a per-user cache folder."""
    project_root = PACKAGE_DIR.parent
    if (project_root / "pyproject.toml").exists():
        return project_root / "index"
    cache_home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache_home / "errata" / "index"


def _fitted_threshold() -> float:
    """The confidence threshold the last fit chose (``retrieval/weights.json``, written by
    ``benchmarks/fit_retrieval.py``): one number, held in one place."""
    path = PACKAGE_DIR / "retrieval" / "weights.json"
    try:
        return float(json.loads(path.read_text(encoding="utf-8"))["confidence_threshold"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigurationError(f"cannot read the fitted confidence threshold from {path}: {exc}") from exc


def _default_data_dir() -> Path:
    project_root = PACKAGE_DIR.parent
    if (project_root / "pyproject.toml").exists():
        return project_root / "data"
    data_home = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return data_home / "errata"


@dataclass(frozen=True)
class Settings:
    """Every option errata has. Build with :meth:`Settings.load`; change with :meth:`replace`."""

    kb: tuple[Path, ...] = (BUNDLED_KB_DIR,)
    # The release-built records the package ships go with the bundled records (knowledge/release_records.py);
    # off: the curated records alone.
    release_records: bool = True
    index_dir: Path = field(default_factory=_default_index_dir)
    embedder: str = DEFAULT_EMBEDDER
    embed_batch_size: int = 32
    top_k: int = 5
    strict: bool = False
    # Retrieval: below this confidence errata says no record matches (fitted on the dev set with the
    # weights; see benchmarks/fit_retrieval.py).
    confidence_threshold: float = field(default_factory=_fitted_threshold)
    # Pasted text beyond this many characters is cut (keeping the end, where the error line is).
    max_query_chars: int = 20_000
    # Torch threads once an Assistant is serving: one query at a time is encoded fastest on one thread,
    # and concurrent requests then use the other cores instead of fighting over them. 0 leaves torch as is.
    serve_threads: int = 1
    # LLM drafting (None means the offline drafter).
    model: str | None = None
    api_base: str | None = None
    llm_timeout: float = 30.0
    llm_retries: int = 2
    fallback_models: tuple[str, ...] = ()
    llm_max_tokens: int = 800
    # However the reply arrives (a trickle, a flood), drafting stops after this many seconds in all and
    # this many characters; the reply so far is shown as cut, or the offline answer when there is none.
    llm_deadline: float = 60.0
    llm_max_chars: int = 20_000
    llm_temperature: float = 0.2
    # Front ends.
    host: str = "127.0.0.1"
    port: int = 7860
    feedback_db: Path = field(default_factory=lambda: _default_data_dir() / "feedback.sqlite3")
    slack_api_url: str = "https://slack.com/api/"
    slack_port: int = 3000
    # Slack credentials, from Slack's standard variables (ERRATA_* names work too); kept out of repr.
    slack_bot_token: str | None = field(default=None, repr=False, metadata={"env": "SLACK_BOT_TOKEN"})
    slack_app_token: str | None = field(default=None, repr=False, metadata={"env": "SLACK_APP_TOKEN"})
    slack_signing_secret: str | None = field(default=None, repr=False, metadata={"env": "SLACK_SIGNING_SECRET"})
    # Vector store: None means FAISS files under index_dir; "milvus:<uri>" a Milvus store.
    store: str | None = None

    def __post_init__(self) -> None:
        for name in ("top_k", "llm_deadline", "llm_max_chars"):
            if getattr(self, name) <= 0:
                raise ConfigurationError(f"setting {name} (env ERRATA_{name.upper()}) must be above 0")

    @classmethod
    def load(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Defaults, then ``ERRATA_*`` variables from ``env`` (default ``os.environ``), then overrides.

        Overrides whose value is ``None`` are ignored, so CLI flags that were not given fall through.
        """
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            raw = env.get(f"ERRATA_{f.name.upper()}") or env.get(f.metadata.get("env", ""))
            if raw is not None and raw != "":
                values[f.name] = _convert(f.name, f.type, raw)
        for name, value in overrides.items():
            if name not in {f.name for f in dataclasses.fields(cls)}:
                raise ConfigurationError(f"unknown setting {name!r}")
            if value is not None:
                values[name] = _convert(name, _field_type(cls, name), value)
        return cls(**values)

    def replace(self, **changes: Any) -> Settings:
        """A copy with some settings changed (``None`` values are ignored)."""
        converted = {
            name: _convert(name, _field_type(type(self), name), value)
            for name, value in changes.items()
            if value is not None
        }
        return dataclasses.replace(self, **converted)


def _field_type(cls: type, name: str) -> str:
    for f in dataclasses.fields(cls):
        if f.name == name:
            return str(f.type)
    raise ConfigurationError(f"unknown setting {name!r}")


def _convert(name: str, type_name: Any, value: Any) -> Any:
    """Turn an env string or CLI value into the field's type, with an error naming the setting."""
    type_name = str(type_name)
    try:
        if type_name.startswith("tuple[Path"):
            items = value if isinstance(value, (list, tuple)) else str(value).split(os.pathsep)
            return tuple(Path(item).expanduser() for item in items if str(item))
        if type_name.startswith("tuple[str"):
            items = value if isinstance(value, (list, tuple)) else str(value).split(",")
            return tuple(str(item).strip() for item in items if str(item).strip())
        if type_name == "Path":
            return Path(value).expanduser()
        if type_name == "bool":
            if isinstance(value, bool):
                return value
            lowered = str(value).strip().lower()
            if lowered in {"1", "true", "yes", "on"}:
                return True
            if lowered in {"0", "false", "no", "off"}:
                return False
            raise ValueError(f"expected true or false, got {value!r}")
        if type_name == "int":
            return int(value)
        if type_name == "float":
            return float(value)
        return None if value is None else str(value)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"setting {name} (env ERRATA_{name.upper()}): {exc}") from exc
