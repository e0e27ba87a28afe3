"""Reading a release archive (wheel or sdist) without unpacking or importing it: metadata and ``*.py`` text.

Paths are kept as the package names them (``httpx/_client.py``); for an sdist the folder the packages
live in (``src/`` or the project root) is remembered as ``prefix`` so links can point at the repository.
An archive is a stranger's data: a module over ``MAX_SOURCE_BYTES`` is skipped without being read (an 816 KB
wheel held an 800 MB module), a module whose name is no plain relative path of safe characters is skipped
(names made to inject a link or leave the package, ``ingest.source_files``), each with a note in
``skipped``; modules are decoded as their coding cookie says.
"""

from __future__ import annotations

import logging
import re
import tarfile
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from email.parser import HeaderParser
from pathlib import Path

from ..ingest.source_files import MAX_SOURCE_BYTES, decode_source, shown, unsafe_path_reason

logger = logging.getLogger(__name__)

_GITHUB_RE = re.compile(r"github\.com/([\w.\-]+)/([\w.\-]+?)(?:\.git)?(?:[/#?]|$)")
# Folders of an sdist that hold no library code.
_NOT_LIBRARY = {"tests", "test", "testing", "docs", "doc", "examples", "example", "benchmarks", "scripts", "tools"}
_NOT_MODULES = {"setup.py", "conftest.py", "noxfile.py", "fabfile.py", "tasks.py"}


@dataclass
class ReleaseArchive:
    """What a release holds: its name, version, repository (if the metadata names one) and sources."""

    name: str
    version: str
    repo: str | None
    sources: dict[str, str] = field(default_factory=dict)
    prefix: str = ""  # where the packages sit in the repository, a guess for wheels ("")
    top_level: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "member: why" for modules not read


def repo_from_metadata_text(text: str) -> str | None:
    """``owner/name`` of the first GitHub URL in ``Project-URL`` / ``Home-page`` of a METADATA file."""
    headers = HeaderParser().parsestr(text)
    urls = [*(headers.get_all("Project-URL") or []), headers.get("Home-page") or ""]
    for url in urls:
        found = _GITHUB_RE.search(url)
        if found and found[1].lower() not in {"sponsors", "orgs"} and len(found[0]) < 300:
            return f"{found[1]}/{found[2]}"
    return None


def read_archive(path: str | Path) -> ReleaseArchive:
    """The metadata and Python sources of a wheel (``.whl``) or sdist (``.tar.gz`` / ``.zip``)."""
    path = Path(path)
    skipped: list[str] = []
    files = _wheel_files(path, skipped) if path.name.endswith(".whl") else _sdist_files(path, skipped)
    if path.name.endswith(".whl"):
        meta_name = next((n for n in files if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)), None)
        sources = {n: t for n, t in files.items() if n.endswith(".py") and not _in_dist_folder(n)}
        prefix = ""
    else:
        meta_name = "PKG-INFO" if "PKG-INFO" in files else None
        prefix = "src/" if any(n.startswith("src/") and n.endswith("/__init__.py") for n in files) else ""
        sources = _sdist_sources(files, prefix)
    meta = HeaderParser().parsestr(files.get(meta_name, "") if meta_name else "")
    archive = ReleaseArchive(
        name=meta.get("Name") or path.name.split("-")[0],
        version=meta.get("Version") or "",
        repo=repo_from_metadata_text(files[meta_name]) if meta_name else None,
        sources=sources,
        prefix=prefix,
        skipped=skipped,
    )
    archive.top_level = sorted({rel.split("/", 1)[0].removesuffix(".py") for rel in sources})
    return archive


def _in_dist_folder(name: str) -> bool:
    return bool(re.match(r"[^/]+\.(?:dist-info|data)/", name))


def _wheel_files(path: Path, skipped: list[str]) -> dict[str, str]:
    with zipfile.ZipFile(path) as archive:
        members = [(i.filename, i.file_size, lambda i=i: archive.open(i)) for i in archive.infolist() if not i.is_dir()]
        return _read_members(((name, name, size, open_) for name, size, open_ in members), skipped)


def _sdist_files(path: Path, skipped: list[str]) -> dict[str, str]:
    """Text of the ``*.py`` files and ``PKG-INFO`` of an sdist, without its top folder (``name-1.0/``)."""
    if path.name.endswith(".zip"):
        with zipfile.ZipFile(path) as archive:
            items = [
                (i.filename, i.file_size, lambda i=i: archive.open(i)) for i in archive.infolist() if not i.is_dir()
            ]
            return _read_members(_without_top(items), skipped)
    with tarfile.open(path) as archive:
        items = [(m.name, m.size, lambda m=m: archive.extractfile(m)) for m in archive.getmembers() if m.isfile()]
        return _read_members(_without_top(items), skipped)  # type: ignore[arg-type]


Member = tuple[str, str, int, Callable]  # (name in the archive, name kept, size, open)


def _without_top(items: Iterable[tuple[str, int, Callable]]) -> Iterable[Member]:
    for name, size, open_ in items:
        yield name, name.split("/", 1)[1] if "/" in name else name, size, open_


def _read_members(members: Iterable[Member], skipped: list[str]) -> dict[str, str]:
    """The text of the ``*.py`` members and the metadata file, by the name kept; what is skipped, noted."""
    out = {}
    for name, kept, size, open_ in members:
        is_meta = kept == "PKG-INFO" or kept.endswith(".dist-info/METADATA")
        if not (kept.endswith(".py") or is_meta):
            continue
        why = unsafe_path_reason(name)  # the whole name: an absolute or ".." one is refused before any cut
        if why is None and size > MAX_SOURCE_BYTES:
            why = f"{size} bytes, over the limit of {MAX_SOURCE_BYTES}"
        data = b""
        if why is None:
            with open_() as handle:  # never more than the limit, whatever the header says
                data = handle.read(MAX_SOURCE_BYTES + 1)
            if len(data) > MAX_SOURCE_BYTES:
                why = f"over the limit of {MAX_SOURCE_BYTES} bytes"
        if why is not None:
            skipped.append(f"{shown(name)}: {why}")
            logger.warning("skipped %s: %s", shown(name), why)
            continue
        out[kept] = data.decode("utf-8", errors="replace") if is_meta else _decode(data)
    return out


def _decode(data: bytes) -> str:
    try:
        return decode_source(data, errors="replace")  # as its coding cookie says (PEP 263)
    except SyntaxError:  # an unknown encoding declared: read as UTF-8, as Python would refuse it anyway
        return data.decode("utf-8", errors="replace")


def _sdist_sources(files: dict[str, str], prefix: str) -> dict[str, str]:
    """The library's modules in an sdist: packages (and top-level modules) under ``prefix``, not tests or docs."""
    packages = {
        name[len(prefix) :].split("/", 1)[0]
        for name in files
        if name.startswith(prefix) and name[len(prefix) :].count("/") == 1 and name.endswith("/__init__.py")
    } - _NOT_LIBRARY
    sources = {}
    for name, text in files.items():
        if not name.startswith(prefix) or not name.endswith(".py"):
            continue
        rel = name[len(prefix) :]
        top = rel.split("/", 1)[0]
        if top in packages or ("/" not in rel and rel not in _NOT_MODULES and not rel.startswith("test")):
            sources[rel] = text
    return sources
