"""Reading a release archive (wheel or sdist) without unpacking or importing it: metadata and ``*.py`` text.

Paths are kept as the package names them (``httpx/_client.py``); for an sdist the folder the packages
live in (``src/`` or the project root) is remembered as ``prefix`` so links can point at the repository.
"""

from __future__ import annotations

import re
import tarfile
import zipfile
from dataclasses import dataclass, field
from email.parser import HeaderParser
from pathlib import Path

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


def repo_from_metadata_text(text: str) -> str | None:
    """``owner/name`` of the first GitHub URL in ``Project-URL`` / ``Home-page`` of a METADATA file."""
    headers = HeaderParser().parsestr(text)
    urls = [*(headers.get_all("Project-URL") or []), headers.get("Home-page") or ""]
    for url in urls:
        found = _GITHUB_RE.search(url)
        if found and found[1].lower() not in {"sponsors", "orgs"}:
            return f"{found[1]}/{found[2]}"
    return None


def read_archive(path: str | Path) -> ReleaseArchive:
    """The metadata and Python sources of a wheel (``.whl``) or sdist (``.tar.gz`` / ``.zip``)."""
    path = Path(path)
    files = _wheel_files(path) if path.name.endswith(".whl") else _sdist_files(path)
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
    )
    archive.top_level = sorted({rel.split("/", 1)[0].removesuffix(".py") for rel in sources})
    return archive


def _in_dist_folder(name: str) -> bool:
    return bool(re.match(r"[^/]+\.(?:dist-info|data)/", name))


def _wheel_files(path: Path) -> dict[str, str]:
    with zipfile.ZipFile(path) as archive:
        return {
            info.filename: archive.read(info).decode("utf-8", errors="replace")
            for info in archive.infolist()
            if not info.is_dir() and (info.filename.endswith(".py") or info.filename.endswith(".dist-info/METADATA"))
        }


def _sdist_files(path: Path) -> dict[str, str]:
    """Text of the ``*.py`` files and ``PKG-INFO`` of an sdist, without its top folder (``name-1.0/``)."""
    found: dict[str, str] = {}
    if path.name.endswith(".zip"):
        with zipfile.ZipFile(path) as archive:
            items = [(i.filename, lambda i=i: archive.read(i)) for i in archive.infolist() if not i.is_dir()]
            found = _keep(items)
    else:
        with tarfile.open(path) as archive:
            items = [(m.name, lambda m=m: archive.extractfile(m).read()) for m in archive.getmembers() if m.isfile()]
            found = _keep(items)  # type: ignore[arg-type]
    return found


def _keep(items) -> dict[str, str]:
    out = {}
    for name, read in items:
        inner = name.split("/", 1)[1] if "/" in name else name
        if inner.endswith(".py") or inner == "PKG-INFO":
            out[inner] = read().decode("utf-8", errors="replace")
    return out


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
