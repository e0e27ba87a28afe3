"""Record files of the package's own knowledge base that were checked when they were written, so loading
them again does not time every ``messagePattern`` on hostile texts.

Why: the pattern checks (compiling each pattern, and trying the risky ones on texts made to almost match
them; see pattern_safety.py) are nearly all of the time it takes to load records: 4 s of the bundled 952,
35 s of 19,000 release-built ones. A file ``errata refresh-kb`` validated is no less safe at the next start.
``checked.json`` beside the files names each one with its SHA-256; a file whose bytes are not those named is
checked as any other. Only files inside the package (``assistant/data/``) are trusted so: a folder a user
passes with ``--kb`` is always checked, whatever it holds, unless its bytes are those of a shipped file of
release-built records (``release_records.py``: unpacked beside the index, named by the package's manifest).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path

from ..settings import PACKAGE_DIR
from ..storage.files import atomic_path, sha256_file
from .release_records import trusted_digests

logger = logging.getLogger(__name__)

CHECKED_NAME = "checked.json"
PACKAGE_DATA = PACKAGE_DIR / "data"


def write_checked(folder: Path, files: Iterable[Path]) -> None:
    """Name ``files`` (under ``folder``, each validated strictly by the caller) as checked."""
    folder = Path(folder)
    digests = {str(Path(f).resolve().relative_to(folder.resolve())): sha256_file(Path(f)) for f in files}
    with atomic_path(folder / CHECKED_NAME) as tmp:
        tmp.write_text(json.dumps({"files": dict(sorted(digests.items()))}, indent=1) + "\n", encoding="utf-8")


def checked_files(files: Iterable[Path], root: Path = PACKAGE_DATA) -> frozenset[Path]:
    """Of ``files``, those under ``root`` that a ``checked.json`` of their folder (or a folder above it, up to
    ``root``) names with their current SHA-256."""
    root = Path(root).resolve()
    manifests: dict[Path, dict[str, str]] = {}
    shipped = trusted_digests()
    out = set()
    for path in files:
        resolved = Path(path).resolve()
        if not resolved.is_relative_to(root):
            if _is_shipped(resolved, shipped):
                out.add(Path(path))
            continue
        for folder in resolved.parents:
            if not folder.is_relative_to(root):
                break
            if folder not in manifests:
                manifests[folder] = _read(folder / CHECKED_NAME)
            digests = manifests[folder]
            name = str(resolved.relative_to(folder))
            if name in digests:
                if digests[name] == sha256_file(resolved):
                    out.add(Path(path))
                break
    return frozenset(out)


def _is_shipped(path: Path, shipped: dict[str, tuple[int, str]]) -> bool:
    """Whether ``path`` holds the bytes of a release-built file the package ships (checked when packed)."""
    expected = shipped.get(path.name)
    if expected is None:
        return False
    try:
        return path.stat().st_size == expected[0] and sha256_file(path) == expected[1]
    except OSError:
        return False


def _read(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        logger.warning("%s is unreadable (%s); its records' patterns are checked again", path, exc)
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else {}
