"""The packages `errata kb build-ecosystem` reads by default are data: each parses, is there once, and says why."""

from __future__ import annotations

import pytest

from assistant.errors import ConfigurationError
from assistant.releases.ecosystem import PACKAGES_FILE, default_targets, read_targets
from assistant.releases.scan import release_tag


def test_every_default_package_parses_once_and_says_why_it_is_there():
    targets = default_targets()
    names = [t.package.lower() for t in targets]
    assert len(names) == len(set(names)) >= 100
    lines = [line for line in PACKAGES_FILE.read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert len(lines) == len(targets)
    for line in lines:
        assert "#" in line and line.split("#", 1)[1].strip(), f"no reason given: {line!r}"
    for required in ("transformers", "torch", "numpy", "pandas", "django", "flask", "sqlalchemy", "botocore"):
        assert required in names
    for target in targets:
        assert "{" not in release_tag("2.0.36", target.tag_format), target


def test_a_tag_format_may_spell_the_version_with_underscores(tmp_path):
    path = tmp_path / "packages.txt"
    path.write_text("sqlalchemy last:3 rel_{version_}  # the ORM\n")
    (target,) = read_targets(path)
    assert release_tag("2.0.36", target.tag_format) == "rel_2_0_36"


def test_a_package_may_ask_for_its_retired_raises(tmp_path):
    path = tmp_path / "packages.txt"
    path.write_text(
        "openai last:3 v{version} retired=spread:40  # removed APIs\n"
        "smolagents last:3 v{version} huggingface/smolagents retired=last:9\n"
        "httpx minors:3 {version}\n"
    )
    openai, smolagents, httpx = read_targets(path)
    assert (openai.spec, openai.tag_format, openai.repo, openai.retired) == ("last:3", "v{version}", None, "spread:40")
    assert (smolagents.repo, smolagents.retired) == ("huggingface/smolagents", "last:9")
    assert httpx.retired is None
    path.write_text("openai last:3 retired=\n")
    with pytest.raises(ConfigurationError, match="packages.txt:1"):
        read_targets(path)
