"""Records from Python source: ``errata ingest``.

``ingest(path)`` reads every ``*.py`` file (see :mod:`assistant.extract`) and makes one record in the seed
schema per usable raise, warning or log call. Without an LLM the documentation and trigger scenarios come
from what the code says, and the record is tagged ``extracted``; a curated record for the same raise wins
when both are indexed (:func:`assistant.knowledge.records.prefer_curated`). ``--enrich`` hands the records to
:mod:`assistant.enrich`.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.util
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..errors import ConfigurationError
from ..knowledge.records import INGESTED_TAG, Record, record_from_dict
from .class_messages import class_findings, package_classes
from .extract import Finding, find_in_source, package_helpers
from .messages import WORD_RE, Part, bounded_message_pattern, literal_text, render_message
from .output import EXTRACTED_TAG, IngestReport
from .source_files import MAX_SOURCE_BYTES, decode_source, excerpt, shown, unsafe_path_reason, utf8_safe

CONTEXT_LINES = 8
MAX_ADVICE = 10
_STOPWORDS = frozenset({"a", "an", "the", "of", "to", "is", "be", "in", "for", "and", "or", "on", "at", "by", "it"})
# An advice clause: it starts with an imperative (after an optional "please" / "you must" ...) or says
# "pip install" / "instead".
_ADVICE_RE = re.compile(
    r"^(?:please\s+|you\s+(?:must|should|need\s+to|can|may\s+want\s+to)\s+|to\s+fix\s+this,?\s+|try\s+to\s+)?"
    r"(?:install|pip|set|pass|use|call|add|upgrade|downgrade|update|make\s+sure|ensure|specify|provide|run|"
    r"remove|enable|disable|export|check|consider|try|define|configure|rename|move|import|reinstall)\b",
    re.IGNORECASE,
)
_ADVICE_ANYWHERE_RE = re.compile(r"\bpip install\b|\binstead\b|\bplease\b", re.IGNORECASE)


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Origin:
    """Where the source comes from: the repository and commit that records and links name."""

    repo: str
    sha: str | None = None
    package: str | None = None

    @property
    def library_tag(self) -> str:
        return _kebab(self.repo.rsplit("/", 1)[-1])


def make_record(finding: Finding, file_path: str, lines: list[str], origin: Origin, analyzed_at: str) -> dict:
    """The seed-schema record (as a dict) for one finding; documentation from the code, tagged extracted.

    Its source excerpt is bounded (:func:`source_files.excerpt`) and its text holds no lone surrogate."""
    error_message = utf8_safe(render_message(finding.parts))
    file_path = utf8_safe(file_path)
    start = max(1, finding.line - CONTEXT_LINES)
    source_code, end = excerpt(lines, start, min(len(lines), finding.end_line + CONTEXT_LINES))
    github_url = None
    if origin.sha and "/" in origin.repo and not origin.repo.startswith("local/"):
        github_url = f"https://github.com/{origin.repo}/blob/{origin.sha}/{file_path}#L{start}-L{end}"
    key = f"{origin.repo}\n{file_path}\n{finding.line}\n{error_message}"
    documentation, triggers = describe(finding, file_path)
    data = {
        "id": hashlib.sha256(key.encode("utf-8")).hexdigest()[:16],
        "repo": origin.repo,
        "slug": _slug(finding),
        "errorCode": None,
        "errorMessage": error_message,
        "messagePattern": bounded_message_pattern(finding.parts),
        "errorType": finding.kind,
        "errorClass": finding.error_class,
        "httpStatus": finding.http_status,
        "severity": finding.severity,
        "filePath": file_path,
        "lineNumber": finding.line,
        "sourceCode": source_code,
        "sourceCodeStart": start,
        "sourceCodeEnd": end,
        "githubUrl": github_url,
        "documentation": documentation,
        "triggerScenarios": triggers,
        "commonSituations": None,
        "solutions": advice(finding.parts),
        "exampleFix": None,
        "handlingStrategy": None,
        "validationCode": None,
        "typeGuard": None,
        "tryCatchPattern": None,
        "preventionTips": [],
        "tags": _tags(finding, file_path, origin),
        "backgroundTag": None,
        "analyzedSha": origin.sha,
        "analyzedAt": analyzed_at,
        "schemaVersion": 2,
    }
    return {name: utf8_safe(value) for name, value in data.items()}


def describe(finding: Finding, file_path: str) -> tuple[str, str]:
    """Documentation and trigger scenarios from what the code says: function, docstring, guards."""
    where = f"`{finding.qualname}`" if finding.qualname else f"module `{_module_name(file_path)}`"
    verb = {
        "exception": f"raises {finding.error_class}",
        "http": f"raises {finding.error_class} (HTTP {finding.http_status})",
        "warning": f"warns with {finding.error_class}",
    }.get(finding.kind, f"logs at {finding.severity.upper()} level")
    handlers = [g for g in finding.guards if g == "except" or g.startswith("except ")]
    conditions = [g for g in finding.guards if g not in handlers][-3:]
    handlers = handlers[-1:]
    when = ""
    if conditions:
        when += " when " + " and ".join(f"`{_short(g)}`" for g in conditions)
    if handlers:
        when += (" and" if conditions else "") + f" while handling an exception (`{_short(handlers[0])}`)"
    doc = f"{where} in {file_path} {verb}{when}."
    summary = _docstring_summary(finding.docstring)
    if summary:
        doc += f" {where}: {summary}"
    doc += " (Extracted from the source code; not reviewed.)"
    if finding.class_of_init:
        action = f"Creating `{finding.class_of_init}(...)`"
    elif finding.qualname:
        action = f"Calling `{finding.qualname}(...)`"
    else:
        action = f"Importing `{_module_name(file_path)}`"
    triggers = action + (f" {when.strip()}" if when else "") + "."
    return doc, triggers


def advice(parts: list[Part]) -> list[str]:
    """Solutions only where the message itself says what to do ("install X", "set Y", "use Z instead"); at
    most :data:`MAX_ADVICE` of them (a record's lists are bounded)."""
    text = render_message(parts).strip()
    clauses = [c.strip().rstrip(",:;").strip() for c in re.split(r"(?<=[.!?;])\s+|\n+", text)]
    found = []
    for clause in clauses:
        if len(clause) < 8:
            continue
        if _ADVICE_RE.search(clause) or _ADVICE_ANYWHERE_RE.search(clause):
            found.append(clause[0].upper() + clause[1:])
    return found[:MAX_ADVICE]


def _docstring_summary(docstring: str | None) -> str:
    if not docstring:
        return ""
    first = " ".join(docstring.strip().split("\n\n", 1)[0].split())
    if re.match(r"(?:Parameters|Args|Arguments|Returns|Raises|Example|Examples)\b\s*:?", first):
        return ""  # a section, not a summary
    sentence = re.match(r".+?[.!?](?=\s|$)", first)
    first = sentence.group(0) if sentence else first
    return first if len(first) <= 240 else first[:237].rstrip() + "..."


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _module_name(file_path: str) -> str:
    module = file_path[:-3] if file_path.endswith(".py") else file_path
    module = module.replace("/", ".")
    return module[: -len(".__init__")] if module.endswith(".__init__") else module


def _kebab(text: str) -> str:
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", text)
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _slug(finding: Finding) -> str:
    words = [w.lower() for w in WORD_RE.findall(literal_text(finding.parts)) if w.lower() not in _STOPWORDS]
    return "-".join(words[:6]) or _kebab(finding.error_class) or "message"


def _tags(finding: Finding, file_path: str, origin: Origin) -> list[str]:
    tags = [origin.library_tag]
    path_parts = file_path.split("/")
    if origin.package:
        tags.append(_kebab(origin.package))
        if origin.package in path_parts:
            path_parts = path_parts[path_parts.index(origin.package) + 1 :]
    if len(path_parts) > 1:
        tags.append(_kebab(path_parts[0]))
    if finding.kind == "exception":
        tags.append(_kebab(finding.error_class))
    tags += [INGESTED_TAG, EXTRACTED_TAG]
    return list(dict.fromkeys(t for t in tags if t))


def _too_big(size: int) -> str | None:
    return f"{size} bytes, over the limit of {MAX_SOURCE_BYTES} for a module" if size > MAX_SOURCE_BYTES else None


# --------------------------------------------------------------------------- entry points


def resolve_package(name: str) -> Path:
    """The folder (or file) an importable package's source lives in.

    Nothing is imported for a top-level name; a dotted name (``slack_bolt.app``) imports its parents.
    """
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as exc:
        raise ConfigurationError(f"package {name!r} cannot be found ({exc}); install it or give its PATH") from None
    if spec is None:
        raise ConfigurationError(f"package {name!r} is not installed; install it or give the PATH of its source")
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    if spec.origin and spec.origin.endswith(".py"):
        return Path(spec.origin)
    raise ConfigurationError(f"package {name!r} has no Python source to read (origin: {spec.origin})")


def repo_from_metadata(package: str) -> str | None:
    """``owner/name`` of the GitHub repository an installed package's metadata names, if any."""
    try:
        try:  # usually the distribution is named like the package; asking for it is fast
            distributions = [importlib.metadata.distribution(package).metadata["Name"]]
        except importlib.metadata.PackageNotFoundError:
            distributions = importlib.metadata.packages_distributions().get(package, [])
        for dist_name in distributions:
            meta = importlib.metadata.metadata(dist_name)
            urls = [*(meta.get_all("Project-URL") or []), meta.get("Home-page") or ""]
            for url in urls:
                m = re.search(r"github\.com/([\w.\-]+)/([\w.\-]+?)(?:\.git)?(?:[/#?]|$)", url)
                if m:
                    return f"{m[1]}/{m[2]}"
    except (importlib.metadata.PackageNotFoundError, OSError):
        return None
    return None


def python_files(root: Path, base: Path | None = None) -> Iterator[tuple[Path, str]]:
    """Each ``*.py`` file under ``root`` with its path as the repository names it, sorted.

    Paths are relative to ``base``; by default a package folder (one with ``__init__.py``) keeps its own
    name in the path (``slack_bolt/app/app.py``) and a plain folder (a repository checkout) is the root.
    """
    if root.is_file():
        yield root, (root.relative_to(base).as_posix() if base else root.name)
        return
    if base is None:
        base = root.parent if (root / "__init__.py").exists() else root
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(base)
        if any(part.startswith(".") or part in {"__pycache__", "node_modules"} for part in relative.parts[:-1]):
            continue
        yield path, relative.as_posix()


def ingest(
    path: str | Path | None = None,
    *,
    package: str | None = None,
    repo: str | None = None,
    sha: str | None = None,
    analyzed_at: str | None = None,
) -> tuple[list[Record], IngestReport]:
    """Records for every usable raise, warning and log call under ``path`` (or an installed ``package``)."""
    import time

    started = time.perf_counter()
    if (path is None) == (package is None):
        raise ConfigurationError("give either a PATH to Python source or --package NAME, not both or neither")
    root = resolve_package(package) if package else Path(path).expanduser()  # type: ignore[arg-type]
    if not root.exists():
        raise ConfigurationError(f"{root} does not exist; give a folder or file of Python source")
    top = package.split(".")[0] if package else (root.name if (root / "__init__.py").exists() else root.stem)
    origin = Origin(repo=repo or repo_from_metadata(top) or f"local/{top}", sha=sha, package=top)
    analyzed_at = analyzed_at or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    report = IngestReport(root=str(root))
    records: list[Record] = []
    seen_ids: set[str] = set()
    slugs: Counter[str] = Counter()
    modules: list[tuple[str, str, ast.Module]] = []
    # An installed (sub)package keeps its full dotted path: slack_bolt.app -> slack_bolt/app/app.py.
    base = root.parents[package.count(".")] if package else None
    for file, rel in python_files(root, base):
        report.files += 1
        try:
            why = unsafe_path_reason(rel) or _too_big(file.stat().st_size)
            if why:  # a name that would reach a page (source_files.py), or a module too big to hold
                report.skipped_files.append(f"{shown(rel)}: {why}")
                continue
            source = decode_source(file.read_bytes())  # as its coding cookie says (PEP 263)
            tree = ast.parse(source)
        except (SyntaxError, UnicodeDecodeError, RecursionError, ValueError, OSError):
            report.unparsable_files.append(shown(rel))
            continue
        modules.append((rel, source, tree))
    helpers = package_helpers(tree for _rel, _source, tree in modules)
    classes = package_classes(tree for _rel, _source, tree in modules)
    for rel, source, tree in modules:
        try:
            findings, skipped = find_in_source(tree, helpers)
            findings += class_findings(tree, classes, findings)  # messages defined by exception classes
        except RecursionError:
            report.unparsable_files.append(rel)
            continue
        report.skipped.update(skipped)
        lines = source.splitlines()
        for finding in findings:
            data = make_record(finding, rel, lines, origin, analyzed_at)
            if data["id"] in seen_ids:
                continue
            seen_ids.add(data["id"])
            slugs[data["slug"]] += 1
            if slugs[data["slug"]] > 1:
                data["slug"] = f"{data['slug']}-{slugs[data['slug']]}"
            try:
                records.append(record_from_dict(data, source=f"{rel}:{finding.line}", dataset_version=analyzed_at))
            except ValueError as exc:  # a field over its limit (knowledge.record_limits): the rest is written
                report.skipped[f"invalid record ({str(exc).split(':', 1)[0]})"] += 1
    report.records = len(records)
    report.seconds = time.perf_counter() - started
    return records, report
