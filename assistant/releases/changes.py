"""Records for API changes: the error a removal causes, which release removed it, and what to do instead.

The text is built from what the two releases show (a name added in the same release, a deprecation
warning an earlier release gave about it), never from an LLM; records are tagged ``api-change``,
``ingested`` and ``extracted``, and say which releases raise the error (``release-first:`` / ``release-last:``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..ingest.output import EXTRACTED_TAG
from ..ingest.raises import advice
from ..knowledge.records import API_CHANGE_TAG, INGESTED_TAG
from .apidiff import ApiChange
from .identity import identity_id, kebab
from .merge import release_tags

_WHAT = {
    "module": "module",
    "import": "name",
    "attribute": "name",
    "method": "method",
    "parameter": "keyword argument",
}


def find_warning(change: ApiChange, warnings: Sequence[tuple[str, dict[str, Any], str]]) -> tuple[str, str] | None:
    """(version, message) of the latest deprecation warning that names what went, preferring one raised
    in the same function. ``warnings`` holds (version, record, qualname) of earlier releases, oldest first."""
    name = re.escape(change.removed.rsplit(".", 1)[-1])
    quoted = re.compile(rf"['\"`]{name}['\"`=(]|\b{name}=|\b{name}\(\)")
    bare = re.compile(rf"\b{name}\b")
    function = change.subject.rsplit(".", 1)[-1] if change.kind == "parameter" else None
    best = None
    for version, record, qualname in warnings:
        text = record["errorMessage"]
        here = function is not None and qualname.rsplit(".", 1)[-1] == function
        if quoted.search(text) or (here and bare.search(text)):
            score = (here, version)
            if best is None or score >= best[0]:
                best = (score, version, text)
    return (best[1], best[2]) if best else None


def change_record(
    change: ApiChange,
    *,
    package: str,
    repo: str,
    old_version: str,
    new_version: str,
    newest_version: str,
    tags_at: dict[str, str],
    prefix: str,
    warnings: Sequence[tuple[str, dict[str, Any], str]],
    analyzed_at: str,
) -> dict[str, Any]:
    """The seed-schema record (as a dict) for one API change between ``old_version`` and ``new_version``."""
    what = _WHAT[change.kind]
    warning = find_warning(change, warnings)
    replacement, replacement_text = _replacement(change, old_version, new_version)
    pin = f'pip install "{package}<{new_version}"'
    solutions = []
    if warning:
        solutions += [
            f"{clause.rstrip('.')} ({package} {warning[0]} deprecation warning)" for clause in advice([warning[1]])
        ]
    if replacement:
        solutions.append(_move_to(change, replacement))
    elif not warning:
        solutions.append(
            f"Stop using the {what} `{change.removed}`: see {package} {new_version}'s changelog for its successor"
        )
    solutions.append(f"Or pin the last release that has it: {pin} (or `{package}<{new_version}` in your requirements)")
    doc = (
        f"{_lost(change, package, new_version)} {package} {new_version} removed it ({old_version} had it). "
        f"Using it raises `{change.error_class}: {change.message}`."
    )
    if warning:
        doc += f' {package} {warning[0]} warned: "{warning[1]}"'
    if replacement_text:
        doc += f" {replacement_text}"
    doc += f" (Found by comparing the public API of {package} {old_version} and {new_version} with ast; not reviewed.)"
    tag = tags_at[old_version]  # where it last was
    path = prefix + change.file
    github_url = None
    if "/" in repo and not repo.startswith("local/"):
        github_url = f"https://github.com/{repo}/blob/{tag}/{path}#L{change.line}"
    identity = f"api-change|{repo.lower()}|{change.kind}|{change.subject}|{change.removed}|{new_version}"
    slug_subject = change.subject.split(".", 1)[-1] if "." in change.subject else change.subject
    library = kebab(repo.rsplit("/", 1)[-1])
    return {
        "id": identity_id(identity),
        "repo": repo,
        "slug": kebab(f"{change.kind}-{slug_subject}-{change.removed}-removed")[:80],
        "errorCode": None,
        "errorMessage": change.message,
        "messagePattern": change.pattern,
        "errorType": "exception",
        "errorClass": change.error_class,
        "httpStatus": None,
        "severity": "error",
        "filePath": path,
        "lineNumber": change.line,
        "sourceCode": None,
        "sourceCodeStart": None,
        "sourceCodeEnd": None,
        "githubUrl": github_url,
        "documentation": doc,
        "triggerScenarios": f"`{change.call}` with {package} {new_version} or later (it worked with {old_version}).",
        "commonSituations": (
            f"Code, a tutorial or a dependency written for {package}<{new_version} running after an upgrade: "
            f"an unpinned `{package}` requirement installs {new_version} or later."
        ),
        "solutions": solutions,
        "exampleFix": _example(change, replacement, package, new_version),
        "handlingStrategy": "upgrade",
        "validationCode": None,
        "typeGuard": None,
        "tryCatchPattern": None,
        "preventionTips": [
            f"Pin {package} to a tested range (`{package}>={old_version},<{new_version}`) until the code is updated.",
            "Run tests with `-W error::DeprecationWarning` to see removals announced before they happen.",
        ],
        "tags": list(
            dict.fromkeys(
                [library, kebab(package), API_CHANGE_TAG, kebab(change.error_class), INGESTED_TAG, EXTRACTED_TAG]
                + release_tags(new_version, newest_version)
            )
        ),
        "backgroundTag": "library-api-removed",
        "analyzedSha": tag,
        "analyzedAt": analyzed_at,
        "schemaVersion": 2,
    }


def _lost(change: ApiChange, package: str, new_version: str) -> str:
    if change.kind == "module":
        return f"The module `{change.subject}` no longer exists:"
    if change.kind in {"import", "attribute"}:
        module = change.subject.rpartition(".")[0]
        return f"The module `{module}` no longer has `{change.removed}`:"
    if change.kind == "method":
        return f"`{change.subject.rpartition('.')[0]}` objects no longer have the method `{change.removed}`:"
    call = change.subject.removesuffix(".__init__")
    return f"`{call}(...)` no longer accepts the keyword argument `{change.removed}`:"


def _replacement(change: ApiChange, old_version: str, new_version: str) -> tuple[str | None, str]:
    if not change.similar:
        return None, ""
    if change.similar in change.added:
        return change.similar, f"`{change.similar}`, added in {new_version}, probably takes its place."
    return change.similar, f"`{change.similar}` (in both {old_version} and {new_version}) may take its place."


def _move_to(change: ApiChange, replacement: str) -> str:
    if change.kind == "parameter":
        return f"Pass `{replacement}=` instead of `{change.removed}=` (check that it takes the same values)"
    if change.kind in {"import", "attribute"}:
        return f"Use `{change.subject.rpartition('.')[0]}.{replacement}` instead of `{change.subject}`"
    return f"Use `{replacement}` instead of `{change.removed}`"


def _example(change: ApiChange, replacement: str | None, package: str, new_version: str) -> str:
    before = change.call.replace("...", "value") if change.kind == "parameter" else change.call
    if replacement and change.kind == "parameter":
        after = before.replace(f"{change.removed}=", f"{replacement}=")
    elif replacement:
        after = before.replace(change.removed, replacement)
    else:
        after = f"# requirements.txt: {package}<{new_version}  (until the code no longer needs `{change.removed}`)"
    return f"# before\n{before}\n# after\n{after}"
