"""The API diff, raise identity and pattern merging of assistant.releases, on real source read with ast."""

from __future__ import annotations

import ast
import re
import textwrap

from assistant.releases.apidiff import diff_surfaces
from assistant.releases.identity import message_template, raise_identity
from assistant.releases.patterns import combine_patterns
from assistant.releases.surface import read_surface


def surface(files: dict[str, str]):
    return read_surface((rel, ast.parse(textwrap.dedent(text))) for rel, text in files.items())


def messages(old: dict[str, str], new: dict[str, str]) -> set[str]:
    return {c.message for c in diff_surfaces(surface(old), surface(new))}


BASE = """
class _Base:
    def __init__(self, url, verify=True):
        pass
"""


def test_an_inherited_init_is_named_by_the_class_that_defines_it():
    old = {
        "pkg/__init__.py": "from ._impl import *\n__all__ = ['Client']\n",
        "pkg/_impl.py": BASE + "class Client(_Base):\n    pass\n",
    }
    new = {**old, "pkg/_impl.py": BASE.replace(", verify=True", "") + "class Client(_Base):\n    pass\n"}
    changes = diff_surfaces(surface(old), surface(new))
    assert [c.message for c in changes] == ["_Base.__init__() got an unexpected keyword argument 'verify'"]
    assert changes[0].subject == "pkg.Client.__init__" and changes[0].call == "pkg.Client(verify=...)"
    assert re.search(changes[0].pattern, "TypeError: _Base.__init__() got an unexpected keyword argument 'verify'")


OLD_API = """
def get(url, timeout=None):
    pass

def old():
    pass

VALUE = 1
"""

SHIM = """
def get(url, **kw):
    pass

_MOVED = {"old": "pkg._new"}

def __getattr__(name):
    if name in _MOVED:
        return None
    raise AttributeError(name)
"""


def test_what_still_works_is_not_reported():
    # get() takes any keyword (**kw), old is still served by the module's __getattr__; VALUE went for real
    assert messages({"pkg/__init__.py": OLD_API}, {"pkg/__init__.py": SHIM}) == {
        "cannot import name 'VALUE' from 'pkg'",
        "module 'pkg' has no attribute 'VALUE'",
    }
    assert messages({"pkg/__init__.py": OLD_API}, {"pkg/__init__.py": "def get(url):\n    pass\n"}) == {
        "cannot import name 'old' from 'pkg'",
        "module 'pkg' has no attribute 'old'",
        "cannot import name 'VALUE' from 'pkg'",
        "module 'pkg' has no attribute 'VALUE'",
        "get() got an unexpected keyword argument 'timeout'",
    }


def test_private_modules_and_names_are_not_api():
    old = {
        "pkg/__init__.py": "",
        "pkg/_private.py": "def helper(a, b=1):\n    pass\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/deep.py": "",
    }
    new = {"pkg/__init__.py": "", "pkg/_other.py": ""}
    # _private went and helper lost b, but neither is public; sub went with its child: one record names sub
    assert messages(old, new) == {"No module named 'pkg.sub'"}


def test_a_name_dropped_from_all_but_still_bound_imports_fine():
    old = {
        "pkg/__init__.py": "from ._a import A, B\n__all__ = ['A', 'B']\n",
        "pkg/_a.py": "class A: pass\nclass B: pass\n",
    }
    new = {**old, "pkg/__init__.py": "from ._a import A, B\n__all__ = ['A']\n"}
    assert messages(old, new) == set()


def test_raise_identity_survives_lines_src_prefix_and_placeholder_names():
    curated = {
        "repo": "encode/httpx",
        "filePath": "src/httpx/_urls.py",
        "lineNumber": 120,
        "errorClass": "InvalidURL",
        "errorMessage": "Invalid URL component {key!r}",
    }
    ingested = {
        **curated,
        "filePath": "httpx/_urls.py",
        "lineNumber": 131,
        "errorMessage": "Invalid URL component {name}.",
    }
    assert (
        raise_identity(curated)
        == raise_identity(ingested)
        == "encode/httpx|httpx/_urls.py|InvalidURL|invalid url component {}"
    )
    assert raise_identity({**ingested, "errorClass": "ValueError"}) != raise_identity(curated)
    assert message_template("  Port   {port} is\ninvalid! ") == "port {} is invalid"


def test_combined_patterns_match_every_wording():
    patterns = [r"Invalid port (.+?); expected a number", r"Invalid port (.+?): it is not a number", r"Bad port"]
    combined = combine_patterns(patterns)
    for text in ["Invalid port 'x'; expected a number", "Invalid port 'x': it is not a number", "Bad port"]:
        assert re.search(combined, text), text
    assert not re.search(combined, "Invalid port")
    assert combine_patterns(["Only one", "Only one"]) == "Only one"
    two = combine_patterns([r"Invalid port (.+?); expected a number", r"Invalid port (.+?): expected a number"])
    assert two == r"Invalid port (?:(.+?);|(.+?):) expected a number"


def test_a_plain_modules_imports_are_not_its_api():
    old = {
        "pkg/__init__.py": "from ._compat import WIN\n",
        "pkg/termui.py": "from ._compat import WIN\n\ndef echo():\n    pass\n",
        "pkg/_compat.py": "WIN = False\n",
    }
    new = {**old, "pkg/__init__.py": "", "pkg/termui.py": "def echo():\n    pass\n"}
    assert messages(old, new) == {"cannot import name 'WIN' from 'pkg'", "module 'pkg' has no attribute 'WIN'"}
