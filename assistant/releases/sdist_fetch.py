"""A release's sdist fetched as pip finds it, without preparing it; run as a child process by :mod:`.download`:

    python sdist_fetch.py NAME VERSION FOLDER [PIP_ARGS...]

``pip download`` prepares every sdist it fetches: it builds the project's metadata, which installs its build
dependencies and runs its build backend, and where the backend has no metadata hook (meson-python: numpy,
pandas, scipy) compiles the whole project. That takes minutes, fails where a build dependency will not
build, or stalls (pyyaml 5.4.1), and runs the release's code, which errata never needs: it reads the sources.
This script finds the archive with pip's own finder (its indexes, find-links and configuration, ``PIP_*``
variables included) and downloads it through pip's session (its proxies, certificates and credentials),
checking the hash the index gives; nothing of the release runs.

It imports only pip and the standard library (the caller runs it by path). Exit status: 0 and the archive's
path on stdout; 2 when the index lists no sdist of the release; 3 when this pip's internals are not the ones
used here (the caller then runs ``pip download``); 1 for any other failure, its reason on stderr's last line.
"""

from __future__ import annotations

import hashlib
import os
import sys

NO_SDIST = 2
UNSUPPORTED_PIP = 3


def main(argv: list[str]) -> int:
    name, version, folder, *pip_args = argv
    try:
        from pip._internal.commands import create_command
        from pip._vendor.packaging.specifiers import SpecifierSet

        command = create_command("download", isolated="--isolated" in pip_args)
        options, _ = command.parse_args(["--no-deps", "--no-binary=:all:", *pip_args, f"{name}=={version}"])
        with command.main_context():
            session = command.get_default_session(options)
            finder = command._build_package_finder(
                options=options, session=session, target_python=None, ignore_requires_python=True
            )
            best = finder.find_best_candidate(name, SpecifierSet(f"=={version}")).best_candidate
            if best is None:
                print(f"no sdist of {name}=={version} on the index", file=sys.stderr)
                return NO_SDIST
            link = best.link
            return _save(session, link.url, link.filename, getattr(link, "hash_name", None), link.hash, folder)
    except (ImportError, AttributeError, TypeError) as exc:
        print(f"pip's internals differ ({type(exc).__name__}: {exc})", file=sys.stderr)
        return UNSUPPORTED_PIP


def _save(session, url: str, filename: str, hash_name: str | None, expected: str | None, folder: str) -> int:
    response = session.get(url, stream=True, timeout=60)
    response.raise_for_status()
    digest = hashlib.new(hash_name) if hash_name and expected else None
    target = os.path.join(folder, os.path.basename(filename))
    with open(target, "wb") as out:
        for chunk in response.iter_content(1 << 16):
            out.write(chunk)
            if digest is not None:
                digest.update(chunk)
    if digest is not None and digest.hexdigest() != expected:
        os.remove(target)
        print(f"{filename}: its {hash_name} is not the one the index gives", file=sys.stderr)
        return 1
    print(target)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception as exc:  # the caller reads the last line of stderr as the reason
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)
