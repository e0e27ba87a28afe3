"""What a raise inside a class reads from the class itself: the exception class an attribute names and the
messages a property returns.

Jinja raises every undefined-variable error as ``raise self._undefined_exception(self._undefined_message)``:
the class is the class attribute ``_undefined_exception = UndefinedError``, the message one of the f-strings
the ``_undefined_message`` property returns (``'dict object' has no attribute 'x'``, the error behind half
of Ansible's and Flask's template pastes). Read from the class body alone, as written; an attribute a
subclass or an instance sets otherwise is not followed.
"""

from __future__ import annotations

import ast

from .messages import message_parts

# At most this many messages are taken from one property (each becomes a record of the same raise).
MAX_PROPERTY_MESSAGES = 6


def attribute_of_self(node: ast.expr) -> str | None:
    """``x`` of ``self.x``, else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def class_named_by(owner: ast.ClassDef, attribute: str) -> str | None:
    """The class a class-level ``attribute = SomeError`` (or ``attribute: type[...] = SomeError``) names, or
    that ``__init__`` sets it to: ``self.attribute = exc`` with ``exc=UndefinedError`` its default (Jinja's)."""
    return _class_level(owner, attribute) or _set_in_init(owner, attribute)


def _class_name(value: ast.expr | None) -> str | None:
    if isinstance(value, ast.Name) and value.id[:1].isupper():
        return value.id
    if isinstance(value, ast.Attribute) and value.attr[:1].isupper():
        return value.attr
    return None


def _set_in_init(owner: ast.ClassDef, attribute: str) -> str | None:
    init = next((s for s in owner.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    if init is None:
        return None
    names = [a.arg for a in [*init.args.posonlyargs, *init.args.args]]
    with_defaults = names[len(names) - len(init.args.defaults) :]  # the last ones have the defaults
    defaults = dict(zip(with_defaults, init.args.defaults, strict=True))
    kwonly = zip(init.args.kwonlyargs, init.args.kw_defaults, strict=True)
    defaults.update({a.arg: d for a, d in kwonly if d is not None})
    for node in ast.walk(init):
        if isinstance(node, ast.Assign) and any(attribute_of_self(t) == attribute for t in node.targets):
            value = node.value
            if isinstance(value, ast.Name) and value.id in defaults:
                return _class_name(defaults[value.id])
            return _class_name(value)
    return None


def _class_level(owner: ast.ClassDef, attribute: str) -> str | None:
    for statement in owner.body:
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == attribute for t in targets):
            return _class_name(value)
    return None


def property_messages(owner: ast.ClassDef, attribute: str) -> list[ast.expr]:
    """The message-shaped values a ``@property`` named ``attribute`` returns, in order (empty if it is no
    property or returns none)."""
    for statement in owner.body:
        if (
            isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
            and statement.name == attribute
            and any(_is_property(d) for d in statement.decorator_list)
        ):
            returned = [n.value for n in ast.walk(statement) if isinstance(n, ast.Return) and n.value is not None]
            return [value for value in returned if message_parts(value) is not None][:MAX_PROPERTY_MESSAGES]
    return []


def _is_property(decorator: ast.expr) -> bool:
    return (isinstance(decorator, ast.Name) and decorator.id in ("property", "cached_property")) or (
        isinstance(decorator, ast.Attribute) and decorator.attr == "cached_property"
    )
