"""Tiny real release archives (wheels and an sdist) built with the standard library, for tests/test_releases*.

``toylib`` has three releases whose differences are the ones issue 16 is about: a raise that moves and is
reworded, a deprecated keyword argument that is then removed, a module, a name and a method removed.
"""

from __future__ import annotations

import io
import tarfile
import textwrap
import zipfile
from pathlib import Path

METADATA = """Metadata-Version: 2.1
Name: {name}
Version: {version}
Summary: A toy library for errata's tests
Project-URL: Source, https://github.com/acme/{name}
"""

CLIENT_1_0 = '''
import warnings


class Client:
    def __init__(self, *, timeout=None, proxies=None):
        """Make a client that sends requests. Other text."""
        if timeout is not None and timeout < 0:
            raise ValueError(f"Invalid timeout {timeout}: must be positive")
        if proxies is not None:
            warnings.warn("The 'proxies' argument is deprecated. Use 'proxy' instead.", DeprecationWarning)
        self.timeout = timeout

    def send(self, request):
        raise NotImplementedError("Sending is not implemented by the base client")
'''

CLIENT_1_1 = '''
import warnings

DEFAULT_TIMEOUT = 5.0


def _helper():
    return None


class Client:
    def __init__(self, *, timeout=None, proxies=None, proxy=None):
        """Make a client that sends requests. Other text."""
        if timeout is not None and timeout < 0:
            raise ValueError(f"Invalid timeout {timeout}: it must be a positive number")
        if proxies is not None:
            warnings.warn("The 'proxies' argument is deprecated. Use 'proxy' instead.", DeprecationWarning)
        self.timeout = timeout

    def send(self, request):
        raise NotImplementedError("Sending is not implemented by the base client")
'''

CLIENT_2_0 = '''
DEFAULT_TIMEOUT = 5.0


def _helper():
    return None


def _other_helper():
    return None


class Client:
    def __init__(self, *, timeout=None, proxy=None):
        """Make a client that sends requests. Other text."""
        if timeout is not None and timeout < 0:
            raise ValueError(f"Invalid timeout {timeout}: it must be a positive number")
        self.timeout = timeout

    def send_request(self, request):
        raise NotImplementedError("Sending is not implemented by the base client")


class AsyncClient(Client):
    pass
'''

INIT_1 = """
from ._client import *
from ._client import Client
from .legacy import old_helper

__all__ = ["Client", "old_helper"]
"""

INIT_2 = """
from ._client import Client, AsyncClient

__all__ = ["Client", "AsyncClient"]
"""

LEGACY = '''
def old_helper(value):
    """Deprecated helper."""
    raise RuntimeError("old_helper is gone, call the client directly")
'''

RELEASES = {
    "1.0": {"toylib/__init__.py": INIT_1, "toylib/_client.py": CLIENT_1_0, "toylib/legacy.py": LEGACY},
    "1.1": {"toylib/__init__.py": INIT_1, "toylib/_client.py": CLIENT_1_1, "toylib/legacy.py": LEGACY},
    "2.0": {"toylib/__init__.py": INIT_2, "toylib/_client.py": CLIENT_2_0},
}


def build_wheel(folder: Path, name: str, version: str, files: dict[str, str]) -> Path:
    """A pure-Python wheel: the files, METADATA, WHEEL and RECORD, zipped as pip expects."""
    path = folder / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as archive:
        for rel, text in files.items():
            archive.writestr(rel, textwrap.dedent(text).lstrip())
        archive.writestr(f"{info}/METADATA", METADATA.format(name=name, version=version))
        archive.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: errata-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        archive.writestr(f"{info}/RECORD", "")
    return path


def build_sdist(folder: Path, name: str, version: str, files: dict[str, str]) -> Path:
    """An sdist with a ``src/`` layout and a setuptools ``pyproject.toml``."""
    path = folder / f"{name}-{version}.tar.gz"
    top = f"{name}-{version}"
    extra = {
        "PKG-INFO": METADATA.format(name=name, version=version),
        "pyproject.toml": f'[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{name}"\nversion = "{version}"\n',
        "tests/test_it.py": "def test():\n    raise AssertionError('a test, not library code')\n",
    }
    with tarfile.open(path, "w:gz") as archive:
        for rel, text in {**{f"src/{k}": v for k, v in files.items()}, **extra}.items():
            data = textwrap.dedent(text).lstrip().encode("utf-8")
            member = tarfile.TarInfo(f"{top}/{rel}")
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    return path


def build_toy_index(folder: Path) -> Path:
    """``toylib`` 1.0, 1.1 and 2.0 as wheels in ``folder`` (a ``--find-links`` folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    for version, files in RELEASES.items():
        build_wheel(folder, "toylib", version, files)
    return folder
