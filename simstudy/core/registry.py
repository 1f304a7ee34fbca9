"""The table of kinds: every name a document may give as ``kind``, with what it configures.

A kind is one declaration, ``register(family, params, runtime)``: its parameters model (a
:class:`~simstudy.core.documents.StrictModel` with a field ``kind: Literal[name]``, the document
entry, validated with the document) and its runtime (what the entry configures, a callable that
*takes* the validated entry first: a policy class ``Wachter(params)``, a world builder
``build(params, seed, cache, base_dir)``, a response model ``Logistic(params)``). A kind's
example (``check_example()``, the small entry the contract checks of :mod:`simstudy.checks`
build) and a world's roles and equations are members of its parameters model.

Kinds are found one way, for the package's own and for anyone else's: importing a module that
declares kinds registers them. The modules are named

* by the Python entry-point group ``simstudy.kinds`` (``[project.entry-points."simstudy.kinds"]``
  in a ``pyproject.toml``, as pytest and Gymnasium find plugins): every installed distribution's
  entries are imported the first time the table is read (:func:`discover`); an entry names a
  module that registers kinds when imported (or a :class:`Kind`, or a list of them, which are
  registered); simstudy's own kinds are declared in this group too;
* by a document's ``imports: [module, ...]``, imported before it is validated
  (:func:`import_modules`), from the document's folder or the working directory.

The built-in declaration modules are torch-free: a runtime that imports torch is named by a
small loader function that imports it when an entry is first built (:func:`lazy`), so
``simstudy validate`` reads documents without torch.

Why a declaration module stands apart from its parameters models: each runtime imports its
parameters model, and the declaration imports the runtime when an entry is first built; in one
module the two would import each other. The parameters models stay torch-free so that
``simstudy validate`` reads documents without torch.

Families: ``policy`` (recourse generators), ``world`` (causal worlds and their data),
``response`` (how people accept and act), ``family`` (GAMM likelihoods), ``executor`` (where a
run's work units are computed) and ``model`` (readers of decision models from files).

Optional members of a world's parameters model: ``labels`` (class attribute: the world has a
label rule, so the event world may retrain), ``feature_names()`` (the features a decision model
read from a file must take), ``check_data(base_dir)`` (``(field, reason)`` pairs for problems of
the data it reads, reported by ``simstudy validate``) and ``data_files(base_dir)`` (files whose
hashes enter a run's resume key). A policy's sets ``needs_gradients = True`` when it follows the
decision model's gradient (refused for decision models without one).

Example:
    >>> kinds("policy")
    ['growing_spheres', 'hare', 'icarma', 'oracle', 'wachter']
    >>> entry_model("policy", "oracle")(n_values=9).n_values
    9
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import importlib.util
import sys
import threading
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .documents import DocumentProblem, UsageError

__all__ = ["Kind", "FAMILIES", "KINDS", "GROUP", "register", "unregister", "kinds",
           "entry_model", "entries", "runtime_of", "build", "lazy", "discover",
           "import_modules", "module_folders", "KindsNotInstalled"]

#: the families of kinds, in the order they are listed to users
FAMILIES: tuple[str, ...] = ("policy", "world", "response", "family", "executor", "model")
#: the entry-point group naming the modules that declare kinds
GROUP = "simstudy.kinds"


@dataclass(frozen=True)
class Kind:
    """One row of the table: a kind's name, its parameters model and its runtime.

    Attributes:
        family: one of :data:`FAMILIES`.
        name: the ``kind`` a document gives.
        params: the parameters model (the document entry; torch-free for built-in kinds).
        runtime: the callable an entry builds, ``runtime(params, *args)`` (or a :func:`lazy`
            loader of it).
    """

    family: str
    name: str
    params: type
    runtime: Callable[..., Any]


#: ``{family: {name: Kind}}``: every kind a document may name (read it through :func:`kinds`,
#: :func:`entries` and :func:`entry_model`, which first import the declaring modules)
KINDS: dict[str, dict[str, Kind]] = {family: {} for family in FAMILIES}


class _Lazy:
    """A runtime named by a loader: the loader imports it when an entry is first built."""

    def __init__(self, loader: Callable[[], Callable[..., Any]]) -> None:
        self.loader = loader

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.loader()(*args, **kwargs)


def lazy(loader: Callable[[], Callable[..., Any]]) -> Callable[..., Any]:
    """A runtime imported when first built: ``loader()`` imports and returns it.

    A torch-free declaration names a torch runtime this way, by a real import inside the
    loader (which the layer test reads as an arrow), so documents validate without torch.

    Example:
        >>> def dumps():
        ...     from json import dumps
        ...     return dumps
        >>> lazy(dumps)([1, 2])
        '[1, 2]'
    """
    return _Lazy(loader)


def _family(family: str) -> dict[str, Kind]:
    if family not in KINDS:
        raise ValueError(f"no family of kinds named {family!r}; choose from {list(FAMILIES)}")
    return KINDS[family]


def _kinds_of(params: type) -> tuple[str, ...]:
    # every name of the ``kind`` literal: one model may serve several kinds of one runtime
    field = getattr(params, "model_fields", {}).get("kind")
    if field is not None and getattr(field.annotation, "__args__", None):
        return tuple(field.annotation.__args__)
    # an annotation pydantic has not resolved yet (postponed annotations in a local scope):
    # the literal's own default names the kind
    if field is not None and isinstance(field.default, str):
        return (field.default,)
    raise TypeError(f"{params.__name__} needs a field `kind: Literal['...']`")


def register(family: str, params: type, runtime: Callable[..., Any]) -> type:
    """Adds a kind to ``family`` under the name its ``kind`` field gives (under each name,
    when the literal gives several); returns ``params``.

    Args:
        family: one of :data:`FAMILIES`.
        params: the parameters model (a pydantic model with ``kind: Literal[name]``).
        runtime: what an entry builds, called with the validated entry first (a :func:`lazy`
            loader names one that is imported when first built).

    Example:
        >>> from typing import Literal
        >>> from simstudy.core.documents import StrictModel
        >>> class ShoutParams(StrictModel):
        ...     kind: Literal["shout"] = "shout"
        ...     word: str = "hey"
        >>> _ = register("response", ShoutParams, lambda params: params.word.upper())
        >>> build("response", entry_model("response", "shout")(word="recourse"))
        'RECOURSE'
        >>> unregister("response", "shout")
    """
    if isinstance(runtime, str) or not callable(runtime):
        raise TypeError(f"the runtime of {params.__name__} must be a callable (or a lazy "
                        f"loader), not {runtime!r}")
    for name in _kinds_of(params):
        _family(family)[name] = Kind(family, name, params, runtime)
    return params


def unregister(family: str, name: str) -> None:
    """Removes a kind (a test's own kinds, once the test is done)."""
    del _family(family)[name]


def kinds(family: str) -> list[str]:
    """The names of ``family``'s kinds, sorted."""
    discover()
    return sorted(_family(family))


def entries(family: str) -> dict[str, type]:
    """``{name: parameters model}`` of ``family``'s kinds."""
    discover()
    return {name: kind.params for name, kind in _family(family).items()}


def entry_model(family: str, name: str) -> type:
    """The parameters model of one kind (``KeyError`` naming the choices when unknown)."""
    discover()
    table = _family(family)
    if name not in table:
        raise KeyError(f"unknown {family} kind {name!r}; choose from {sorted(table)}")
    return table[name].params


def runtime_of(family: str, name: str) -> Callable[..., Any]:
    """The runtime of one kind, imported now when it was declared :func:`lazy`."""
    discover()
    runtime = _family(family)[name].runtime
    return runtime.loader() if isinstance(runtime, _Lazy) else runtime


def build(family: str, params: Any, *args: Any, **kwargs: Any) -> Any:
    """``runtime(params, *args, **kwargs)``: the runtime of the entry's kind, configured by it."""
    discover()
    return _family(family)[params.kind].runtime(params, *args, **kwargs)


# -- discovery ----------------------------------------------------------------------------
class KindsNotInstalled(UsageError):
    """simstudy's entry points are missing or stale: the package must be (re)installed."""


_discovered = False
_discovering = threading.RLock()


def _source_tree() -> Path | None:
    # a checkout (an editable install, or the source tree on PYTHONPATH): the folder whose
    # pyproject.toml declares the package beside this file
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "simstudy").is_dir() else None


def declared_entry_points(root: Path) -> dict[str, str]:
    """``{name: value}`` of the group :data:`GROUP` in ``root/pyproject.toml``."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return dict(project.get("entry-points", {}).get(GROUP, {}))


def _not_installed(reason: str) -> KindsNotInstalled:
    root = _source_tree()
    where = str(root) if root is not None else "simstudy"
    how = f"pip install -e {where} --no-deps" if root is not None else "pip install simstudy"
    return KindsNotInstalled(f"simstudy's kinds cannot be found: {reason}; reinstall the "
                             f"package so its entry points are current ({how})")


def discover(again: bool = False) -> None:
    """Imports every module the entry-point group :data:`GROUP` names (once per process, or
    ``again``: a distribution installed since is found; modules imported before are kept).

    simstudy's own entries must be installed and, in a source checkout, agree with its
    ``pyproject.toml``; otherwise :class:`KindsNotInstalled` says, in one line, to reinstall.
    """
    global _discovered
    if _discovered and not again:
        return
    with _discovering:
        if _discovered and not again:
            return
        _discovered = True  # a declaring module may read the table while it is imported
        try:
            _load_entry_points()
        except BaseException:
            _discovered = False
            raise


def _load_entry_points() -> None:
    found = importlib.metadata.entry_points(group=GROUP)
    # a distribution caught half-written by an installer has no name yet
    own = {ep.name: ep.value for ep in found if ep.dist is not None
           and (ep.dist.name or "").lower() == "simstudy"}
    if not own:
        raise _not_installed(f"no entry points of the group {GROUP!r} are installed")
    root = _source_tree()
    if root is not None:
        declared = declared_entry_points(root)
        if declared != own:
            changed = sorted(set(declared.items()) ^ set(own.items()))
            raise _not_installed(f"the installed entry points differ from {root}/"
                                 f"pyproject.toml ({', '.join(f'{n} = {v}' for n, v in changed)})")
    # simstudy's own first, so that a plugin's kinds may build on them
    for ep in sorted(found, key=lambda ep: (ep.name not in own, ep.name)):
        try:
            named = ep.load()
        except ImportError as exc:
            dist = ep.dist.name if ep.dist is not None else "?"
            if ep.name in own and own[ep.name] == ep.value:
                raise _not_installed(f"entry point {ep.name} = {ep.value} ({exc})") from None
            raise KindsNotInstalled(f"the kinds of {dist} cannot be imported: entry point "
                                    f"{ep.name} = {ep.value} ({exc})") from None
        # an entry naming a module registers by being imported; one naming kinds registers them
        for kind in named if isinstance(named, (list, tuple)) else [named]:
            if isinstance(kind, Kind):
                register(kind.family, kind.params, kind.runtime)


# -- a document's imports -------------------------------------------------------------------
def import_modules(names: list[str], base_dir: str | Path, source: str,
                   field: str = "imports") -> list[DocumentProblem]:
    """Imports the modules a document names in ``imports:``, so the kinds they register are
    known when it is validated; returns a problem for each module that cannot be imported.

    A module is looked for in the document's folder, then in the working directory; the folder
    it is found in is put on ``sys.path`` (so processes spawned for the run import it too). A
    module already imported is not imported again.

    Example:
        >>> import_modules(["json"], ".", "doc.yaml")
        []
        >>> import_modules(["no_such_module_here"], ".", "doc.yaml")[0].reason
        "no module 'no_such_module_here' in . or the working directory"
    """
    problems = []
    for i, name in enumerate(names):
        if name in sys.modules:
            continue
        try:
            _import(name, Path(base_dir))
        except ModuleNotFoundError:
            problems.append(DocumentProblem(
                source, f"{field}[{i}]",
                f"no module {name!r} in {base_dir} or the working directory"))
        except Exception as exc:  # the module's own error, in one line
            problems.append(DocumentProblem(
                source, f"{field}[{i}]", f"importing {name!r} failed: "
                                         f"{type(exc).__name__}: {exc}"))
    return problems


def module_folders(names: list[str]) -> list[str]:
    """The folders the imported modules ``names`` were found in (for another process's
    ``sys.path``: a process pool started before the document was read lacks them).

    Example:
        >>> import json
        >>> module_folders(["json"]) == [str(Path(json.__file__).parent.parent)]
        True
    """
    folders = []
    for name in names:
        module = sys.modules[name.partition(".")[0]]
        path = Path(module.__file__ or "")
        folder = str(path.parent.parent if path.name == "__init__.py" else path.parent)
        if folder not in folders:
            folders.append(folder)
    return folders


def _import(name: str, base_dir: Path) -> None:
    top = name.partition(".")[0]
    for folder in (base_dir.resolve(), Path.cwd().resolve()):
        if importlib.machinery.PathFinder.find_spec(top, [str(folder)]) is not None:
            if str(folder) not in sys.path:
                sys.path.insert(0, str(folder))
            break
    spec = importlib.util.find_spec(name)  # imports the parent packages of a dotted name
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(name)
    if name in sys.modules:  # a parent package imported it
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
