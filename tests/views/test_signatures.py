"""Layer 2: every public method of every view and of the Router is a fusepy operation with
fusepy's own parameter names where they hold what fusepy's name says (mfusepy calls
operations by name, and a view method whose name or parameters differ is never called or
gets the wrong arguments). This catches the original's
`ReadOnlyView.write(self, path, fh)` kind of slip, and a misspelt operation name
that FUSE would never call.
"""

import importlib
import inspect
import pkgutil

import mfusepy
import pytest

import gitfs.views
from gitfs.router import Router
from gitfs.views.base import View

# Public helpers that are deliberately not FUSE operations. Keep this list short.
NOT_OPERATIONS = {
    "resolve",  # Router.resolve(path): (view, relative path)
    # READDIRPLUS, which mfusepy does not answer: fuse_binding.GitFSFUSE calls the router's,
    # the router the view's (a view without it gets plain readdir).
    "readdir_with_attrs",
}
# mfusepy documents these signatures for raw_fi=True, which GitFS mounts with.
RAW_FI_SIGNATURES = {"open": ["path", "fi"]}
# What the Router hands a view where it is not what fusepy's name says: create gets
# the open(2) flags out of the file info, not the file info itself.
VIEW_SIGNATURES = {"create": ["path", "mode", "open_flags"]}


def view_classes():
    classes = set()
    for module_info in pkgutil.iter_modules(gitfs.views.__path__):
        module = importlib.import_module(f"gitfs.views.{module_info.name}")
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, View) and cls.__module__.startswith("gitfs."):
                classes.add(cls)
    return sorted(classes, key=lambda cls: cls.__name__)


def parameter_names(function):
    return list(inspect.signature(function).parameters)[1:]  # without self


def own_public_methods(cls):
    """Public functions that cls or a gitfs base defines (not fusepy's own defaults)."""
    for name, member in inspect.getmembers(cls, inspect.isfunction):
        if name.startswith("_") or getattr(mfusepy.Operations, name, None) is member:
            continue
        yield name, member


def test_every_view_module_is_found():
    names = {cls.__name__ for cls in view_classes()}
    assert {"View", "ReadOnlyView", "PassthroughView", "IndexView", "HistoryView", "CommitView",
            "CurrentView"} <= names


@pytest.mark.parametrize("cls", [*view_classes(), Router], ids=lambda cls: cls.__name__)
def test_public_methods_are_fuse_operations_with_fusepy_parameter_names(cls):
    problems = []
    for name, method in own_public_methods(cls):
        if name in NOT_OPERATIONS:
            continue
        reference = getattr(mfusepy.Operations, name, None)
        if reference is None or not callable(reference):
            problems.append(f"{cls.__name__}.{name} is not a fusepy operation")
            continue
        expected = parameter_names(reference)
        actual = parameter_names(method)
        if actual != expected and not (cls is Router and actual == RAW_FI_SIGNATURES.get(name)) and not (
                cls is not Router and actual == VIEW_SIGNATURES.get(name)):
            problems.append(f"{cls.__name__}.{name}{tuple(actual)}: fusepy has {tuple(expected)}")
    assert not problems, "\n".join(problems)


def test_the_router_answers_every_operation_a_view_implements():
    # fusepy only calls what the Operations object (the Router) has: a view operation the
    # Router does not forward would silently fall back to fusepy's default.
    forwarded = {name for name, _ in own_public_methods(Router)}
    for cls in view_classes():
        for name, _method in own_public_methods(cls):
            if name not in NOT_OPERATIONS:
                assert name in forwarded, f"{cls.__name__}.{name} is never called: Router lacks {name}"
