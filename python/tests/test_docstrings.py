"""Every public name of the package says what it is (help() and IDEs show these)."""

from __future__ import annotations

import inspect

import overlap


def public_members(cls: type):
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") and name not in ("__init__",):
            continue
        if name == "__init__" and member is object.__init__:
            continue
        yield name, member


def test_every_public_name_and_member_has_a_docstring():
    missing = []
    for name in overlap.__all__:
        value = getattr(overlap, name)
        if not (inspect.getdoc(value) or "").strip():
            missing.append(name)
        if inspect.isclass(value) and not issubclass(value, BaseException):
            for member_name, member in public_members(value):
                if member_name == "__init__":
                    continue  # documented on the class
                if not (inspect.getdoc(member) or "").strip():
                    missing.append(f"{name}.{member_name}")
    assert missing == [], f"no docstring: {', '.join(missing)}"
