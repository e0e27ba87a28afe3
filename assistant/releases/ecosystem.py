"""``errata kb build-ecosystem``: many packages, each over its recent releases, one knowledge-base file each.

Each (package, release) is one task, download and scan, run on a ``ProcessPoolExecutor`` (or on a Ray
cluster with ``ray_address``); both leave their result in the release cache, so a rerun after an
interruption only does what is missing. Merging and API diffs are then done per package in this process.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import Version

from ..errors import ConfigurationError
from ..ingest.output import write_records
from ..knowledge.records import record_from_dict
from .build import records_from_scans
from .download import default_cache, download_release
from .retired import older_raises, with_older_wordings
from .scan import DEFAULT_TAG_FORMAT, Scan, cached_scan
from .versions import resolve_versions

# The packages read by default, each with its releases, tag format and why it is there: a data file
# (``packages.txt``; ``--packages FILE`` takes another in the same form).
PACKAGES_FILE = Path(__file__).with_name("packages.txt")


@dataclass(frozen=True)
class Target:
    """One package and the releases to read: a ``--releases`` SPEC and the tag format of its repository."""

    package: str
    spec: str
    tag_format: str = DEFAULT_TAG_FORMAT
    repo: str | None = None  # owner/name on GitHub where the release's metadata names none (smolagents)
    retired: str | None = None  # older releases whose retired raises are added (``retired=spread:40``)


@dataclass
class EcosystemReport:
    packages: list[dict[str, Any]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def releases(self) -> int:
        return sum(p["releases"] for p in self.packages)

    @property
    def records(self) -> int:
        return sum(p["records"] for p in self.packages)

    def summary(self) -> str:
        text = f"{self.records} record(s) from {self.releases} release(s) of {len(self.packages)} package(s)"
        text += f" in {self.seconds:.1f} s"
        return text + (f"; {len(self.failed)} failed: {'; '.join(self.failed[:3])}" if self.failed else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "packages": self.packages,
            "failed": self.failed,
            "releases": self.releases,
            "records": self.records,
            "seconds": round(self.seconds, 2),
        }


def read_targets(path: str | Path) -> list[Target]:
    """``NAME SPEC [TAG_FORMAT [REPO]] [retired=SPEC]`` per line (``#`` starts a comment), e.g. ``httpx
    last:10 {version}``, ``smolagents last:3 v{version} huggingface/smolagents`` (REPO where the metadata names
    none) or ``openai last:3 v{version} retired=spread:40`` (that package's retired raises too)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigurationError(f"cannot read the packages file {path}: {why}") from None
    targets = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        options = [p for p in parts if p.startswith("retired=")]
        parts = [p for p in parts if not p.startswith("retired=")]
        if len(parts) not in (2, 3, 4) or len(options) > 1 or any(o == "retired=" for o in options):
            expected = "'NAME SPEC [TAG_FORMAT [REPO]] [retired=SPEC]'"
            raise ConfigurationError(f"{path}:{lineno}: expected {expected}, got {raw!r}")
        targets.append(Target(*parts, retired=options[0].split("=", 1)[1] if options else None))
    return targets


def default_targets() -> list[Target]:
    """The packages of ``packages.txt``: the curated libraries, their dependencies, the AI stack and the
    distributions people install most whose code is Python."""
    return read_targets(PACKAGES_FILE)


def release_task(
    package: str, version: str, cache: str, pip_args: Sequence[str], tag_format: str, repo: str | None = None
) -> str:
    """Download and scan one release: a worker's task. The scan comes back as JSON text, which any
    executor (a process pool, Ray) carries cheaply; it is also left in the cache for the next run."""
    archive = download_release(package, version, Path(cache), pip_args)
    return json.dumps(cached_scan(archive, Path(cache), repo=repo, tag_format=tag_format))


def build_ecosystem(
    targets: Iterable[Target],
    output: str | Path,
    *,
    cache: Path | None = None,
    pip_args: Sequence[str] = (),
    workers: int | None = None,
    ray_address: str | None = None,
    retired: str | None = None,
    show_progress: bool = False,
) -> EcosystemReport:
    """One ``<owner>__<name>.jsonl`` per package in ``output``, from every release its target names.

    ``retired``: a SPEC (``spread:40``) of older releases whose retired raises are added (see
    :mod:`.retired`), for every package (else a target's own ``retired``); the releases it names that are
    not older than the target's are left out."""
    from tqdm.auto import tqdm

    started = time.perf_counter()
    cache = Path(cache).expanduser() if cache else default_cache()
    output = Path(output).expanduser()
    report = EcosystemReport()
    targets = list(targets)
    tasks: list[tuple[Target, str]] = []
    recent: dict[str, set[str]] = {}
    for target in targets:
        try:
            versions = resolve_versions(target.package, target.spec, pip_args)
            wanted = retired or target.retired  # the command's SPEC for every package, else the package's own
            older = _older_releases(target.package, wanted, versions[0], pip_args) if wanted else []
        except ConfigurationError as exc:
            report.failed.append(f"{target.package}: {exc}")
            continue
        recent[target.package] = set(versions)
        tasks += [(target, v) for v in [*older, *versions]]
    # A package is merged and written as soon as its last release is scanned, and its scans let go: the
    # coordinator holds the scans of the packages in progress, not of every package (2 GB at 340 releases).
    scans: dict[str, dict[str, Scan]] = {t.package: {} for t in targets}
    pending = Counter(target.package for target, _version in tasks)
    written: dict[str, dict[str, Any]] = {}
    bar = tqdm(total=len(tasks), desc="releases", unit="release", disable=not show_progress)
    for (target, version), result in _run(tasks, str(cache), list(pip_args), workers, ray_address):
        bar.update(1)
        if isinstance(result, Exception):
            report.failed.append(f"{target.package} {version}: {result}")
        else:
            scans[target.package][version] = json.loads(result)
        pending[target.package] -= 1
        if not pending[target.package]:
            found = scans.pop(target.package)
            if found:
                taken = {entry["file"] for entry in written.values()}
                written[target.package] = _write_package(target, found, recent[target.package], output, taken)
    bar.close()
    report.packages = [written[t.package] for t in targets if t.package in written]
    report.seconds = time.perf_counter() - started
    return report


def _older_releases(package: str, spec: str, first_recent: str, pip_args: Sequence[str]) -> list[str]:
    """The releases ``spec`` names that are older than the first recent one (none is an error only when the
    spec itself is)."""
    try:
        versions = resolve_versions(package, spec, pip_args)
    except ConfigurationError as exc:
        if "matches" not in str(exc):
            raise
        return []
    return [v for v in versions if Version(v) < Version(first_recent)]


def _write_package(
    target: Target, found: dict[str, Scan], recent: set[str], output: Path, taken: set[str]
) -> dict[str, Any]:
    """Merge one package's scanned releases into its knowledge-base file; what the report says of it.

    The records of the ``recent`` releases, then the retired raises of the older ones (:mod:`.retired`).
    The file is named by the repository; a second package of the same repository (gradio_client beside
    gradio) gets its own name added rather than overwriting the first one's file (``taken``).
    """
    everything = _under_one_repository([found[v] for v in sorted(found, key=Version)], recent)
    ordered = [scan for scan in everything if scan["version"] in recent] or everything
    older = [scan for scan in everything if scan["version"] not in recent]
    dicts, raises = records_from_scans(ordered, target.package)
    found = older_raises(older, ordered)
    dicts = with_older_wordings(dicts, found)
    held = {d["id"] for d in dicts}
    gone = [d for d in found.retired if d["id"] not in held]
    records = [record_from_dict(d) for d in [*dicts, *gone]]
    repo = ordered[-1]["repo"]
    stem = repo.replace("/", "__") if "/" in repo else target.package
    path = output / f"{stem}.jsonl"
    if str(path) in taken:
        path = output / f"{stem}__{target.package}.jsonl"
    write_records(path, records)
    return {
        "package": target.package,
        "repo": repo,
        "releases": len(everything),
        "first": ordered[0]["version"],
        "last": ordered[-1]["version"],
        "older_releases": len(older),
        "records": len(records),
        "raise_records": raises,
        "api_change_records": len(dicts) - raises,
        "retired_records": len(gone),
        "older_wordings": len(found.wordings),
        "file": str(path),
    }


def _under_one_repository(scans: list[Scan], recent: set[str]) -> list[Scan]:
    """The scans (oldest first) with the repository of the newest recent release in place of any older name:
    a renamed repository (``tiangolo/fastapi`` before ``fastapi/fastapi``), or an old release whose metadata
    named none, is one raise's identity across releases; GitHub forwards a renamed repository's links."""
    newest = next((scan for scan in reversed(scans) if scan["version"] in recent), scans[-1])
    repo = newest["repo"]
    renamed = []
    for scan in scans:
        old = scan["repo"]
        if old == repo or repo.startswith("local/"):  # no repository known for the newest: nothing to agree on
            renamed.append(scan)
            continue
        entries = []
        for entry in scan["entries"]:
            record = {**entry["record"], "repo": repo}
            if record.get("githubUrl"):
                record["githubUrl"] = record["githubUrl"].replace(f"github.com/{old}/", f"github.com/{repo}/", 1)
            entries.append({**entry, "record": record})
        renamed.append({**scan, "repo": repo, "entries": entries})
    return renamed


def _run(tasks, cache: str, pip_args: list[str], workers: int | None, ray_address: str | None):
    """(task, scan JSON or the exception) for each task, as they finish."""
    if ray_address:
        yield from _run_on_ray(tasks, cache, pip_args, ray_address)
        return
    workers = workers or max(1, min(len(tasks), os.cpu_count() or 1))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {
            pool.submit(release_task, t.package, v, cache, pip_args, t.tag_format, t.repo): (t, v) for t, v in tasks
        }
        for future in as_completed(futures):
            try:
                yield futures[future], future.result()
            except Exception as exc:  # one broken release does not stop the others
                yield futures[future], exc


def _run_on_ray(tasks, cache: str, pip_args: list[str], address: str):
    try:
        import ray
    except ImportError:
        raise ConfigurationError(
            "--ray needs the ray package: pip install 'errata[ray]' (or leave --ray out)"
        ) from None
    _start_ray(ray, address)
    remote = ray.remote(release_task)
    pending = {remote.remote(t.package, v, cache, pip_args, t.tag_format, t.repo): (t, v) for t, v in tasks}
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        task = pending.pop(done[0])
        try:
            yield task, ray.get(done[0])
        except Exception as exc:
            yield task, exc


# Ray waits a fixed 30 s for a new local node's raylet to register; on a loaded 2-core machine it
# sometimes misses that (seen in CI); a second try gives it another 30 s before --ray is refused.
RAY_START_ATTEMPTS = 2


def _start_ray(ray, address: str) -> None:
    """Join the cluster at ``address``, or start one here for ``local`` (no dashboard: a scan needs none)."""
    options: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": False}
    if address == "local":
        options["include_dashboard"] = False
    for attempt in range(1, RAY_START_ATTEMPTS + 1):
        try:
            ray.init(address=address, **options)
            return
        except Exception as exc:  # Ray raises plain Exception / ConnectionError for a node that won't come up
            ray.shutdown()
            if attempt == RAY_START_ATTEMPTS:
                raise ConfigurationError(
                    f"--ray {address}: Ray did not start or reach the cluster ({exc}); "
                    "leave --ray out to scan on this machine's process pool"
                ) from exc
