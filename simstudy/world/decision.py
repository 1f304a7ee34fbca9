"""The automated decision system: an MLP classifier on standardized features.

As in CARMA and the 2026 individual-actionability study: two hidden layers of 32 ReLU units on
standardized features, Adam, batch size 256, 500 epochs. Trained models are saved as a state dict
plus JSON metadata (feature order, scaler, layer sizes) and cached by a content hash of the
training data and configuration, so a rerun does not retrain.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pickle
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import torch
from torch import nn

from ..core.store import atomic_write, atomic_write_text
from ..core.trainer import fit_minibatches
from .config import DecisionConfig
from .data import WorldData, tensor_hash

T = TypeVar("T")
M = TypeVar("M", bound=nn.Module)

__all__ = [
    "DecisionConfig",
    "DecisionModel",
    "train_decision_model",
    "state_dict_hash",
    "save_module",
    "load_module",
    "ModelCache",
    "default_cache_dir",
]


class DecisionModel(nn.Module):
    """MLP on standardized features returning the approval logit.

    Args:
        feature_names: input feature order.
        mean, std: the standardization fitted on the training split.
        hidden: hidden layer sizes.
    """

    def __init__(self, feature_names: tuple[str, ...], mean: torch.Tensor, std: torch.Tensor,
                 hidden: tuple[int, ...] = (32, 32)) -> None:
        super().__init__()
        self.feature_names = tuple(feature_names)
        self.hidden = tuple(hidden)
        self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32).clone())
        self.register_buffer("std", torch.as_tensor(std, dtype=torch.float32).clone())
        layers: list[nn.Module] = []
        width = len(feature_names)
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Approval logit of each row (float32, differentiable)."""
        z = (x.to(torch.float32) - self.mean) / self.std
        return self.net(z).squeeze(-1)

    @torch.no_grad()
    def approves(self, x: torch.Tensor) -> torch.Tensor:
        """Boolean decision: approval probability at least 0.5 (logit >= 0)."""
        return self(x) >= 0

    def metadata(self) -> dict:
        return {
            "kind": "mlp",
            "feature_names": list(self.feature_names),
            "hidden": list(self.hidden),
            "scaler_mean": self.mean.tolist(),
            "scaler_std": self.std.tolist(),
        }

    def save(self, path_stem: str | Path, extra: dict | None = None) -> str:
        """Writes ``<stem>.pt`` (state dict) and ``<stem>.json`` (metadata); returns the hash."""
        return save_module(self, path_stem, {**self.metadata(), **(extra or {})})

    @classmethod
    def load(cls, path_stem: str | Path) -> tuple[DecisionModel, dict]:
        return load_module(path_stem, lambda meta: cls(
            tuple(meta["feature_names"]), torch.tensor(meta["scaler_mean"]),
            torch.tensor(meta["scaler_std"]), tuple(meta["hidden"])))


def state_dict_hash(module: nn.Module) -> str:
    """sha256 of a module's state dict (names, dtypes, shapes and values, in order)."""
    h = hashlib.sha256()
    for name, tensor in module.state_dict().items():
        h.update(name.encode())
        h.update(tensor_hash(tensor).encode())
    return h.hexdigest()


def save_module(module: nn.Module, path_stem: str | Path, metadata: dict) -> str:
    """Saves a model as ``<stem>.pt`` (state dict) and ``<stem>.json`` (metadata plus hash).

    Both files are written atomically; no pickled objects. Returns the state dict's sha256,
    which is also stored in the JSON as ``state_dict_sha256``.
    """
    path_stem = Path(path_stem)
    path_stem.parent.mkdir(parents=True, exist_ok=True)
    digest = state_dict_hash(module)
    meta = {**metadata, "state_dict_sha256": digest}
    state = module.state_dict()
    atomic_write(path_stem.with_suffix(".pt"), lambda tmp: torch.save(state, tmp))
    atomic_write_text(path_stem.with_suffix(".json"), json.dumps(meta, indent=2))
    return digest


def load_module(path_stem: str | Path, build: Callable[[dict], M]) -> tuple[M, dict]:
    """Reads a model saved by :func:`save_module`: ``build(metadata)`` makes the empty module,
    whose weights are then loaded from ``<stem>.pt`` (tensors only, no pickled objects) and
    checked against the ``state_dict_sha256`` of the metadata.

    Raises:
        ValueError: the weights do not match the hash in the metadata.
    """
    path_stem = Path(path_stem)
    meta = json.loads(path_stem.with_suffix(".json").read_text())
    module = build(meta)
    module.load_state_dict(torch.load(path_stem.with_suffix(".pt"), weights_only=True))
    if state_dict_hash(module) != meta["state_dict_sha256"]:
        raise ValueError(f"{path_stem}.pt does not match the hash in its metadata")
    module.eval()
    return module, meta


def train_decision_model(
    data: WorldData, config: DecisionConfig = DecisionConfig(), seed: int = 0,
    progress: bool = False,
) -> DecisionModel:
    """Trains the decision model on the training split; deterministic for a seed.

    Initialization and mini-batch order come from a torch generator seeded with ``seed``.
    Training runs on one thread: the network is tiny, and a fixed thread count keeps the
    floating-point reductions, hence the trained weights, identical on every machine.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _train(data, config, seed, progress)
    finally:
        torch.set_num_threads(threads)


def _train(data: WorldData, config: DecisionConfig, seed: int, progress: bool) -> DecisionModel:
    x = data.x_train.to(torch.float32)
    y = data.y_train.to(torch.float32)
    mean, std = x.mean(dim=0), x.std(dim=0).clamp_min(1e-6)
    gen = torch.Generator().manual_seed(int(seed))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        model = DecisionModel(data.roles.names, mean, std, config.hidden)
    # class_weight "balanced": each class weighs n / (2 n_class) in the loss, so the 0.5
    # threshold answers as if the classes were equally frequent (King & Zeng 2001)
    pos_weight = None
    if config.class_weight == "balanced":
        n_pos = float(y.sum())
        pos_weight = torch.tensor((len(y) - n_pos) / max(n_pos, 1.0))
    loss_fn = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
    fit_minibatches(model, x.shape[0], lambda idx: loss_fn(model(x[idx]), y[idx]), lr=config.lr,
                    weight_decay=config.weight_decay, batch_size=config.batch_size,
                    epochs=config.epochs, generator=gen, desc="decision model",
                    progress=progress)
    return model


def default_cache_dir() -> Path:
    """``$SIMSTUDY_CACHE`` or ``./.simstudy_cache``."""
    return Path(os.environ.get("SIMSTUDY_CACHE", ".simstudy_cache"))


@dataclass
class ModelCache:
    """Trained models stored under a content-hash key (state dict + JSON, no pickles)."""

    root: Path = field(default_factory=default_cache_dir)

    def reuse(self, stem: Path, load: Callable[[Path], T]) -> T | None:
        """``load(stem)`` when the cache holds ``stem``; ``None`` when it does not.

        A stored model that fails its checks on reading (an unreadable or truncated file, a
        state dict whose hash differs from the one in its metadata) is moved to
        ``<root>/set-aside/`` with a one-line note, and ``None`` is returned so that the caller
        trains it again.
        """
        stem = Path(stem)
        if not (stem.with_suffix(".json").exists() and stem.with_suffix(".pt").exists()):
            return None
        try:
            return load(stem)
        except (OSError, ValueError, RuntimeError, EOFError, KeyError, TypeError,
                pickle.UnpicklingError) as exc:
            aside = Path(self.root) / "set-aside"
            aside.mkdir(parents=True, exist_ok=True)
            for suffix in (".json", ".pt"):
                if stem.with_suffix(suffix).exists():
                    os.replace(stem.with_suffix(suffix), aside / (stem.name + suffix))
            reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            print(f"model cache: {stem.name} failed its check ({reason}); set aside in {aside} "
                  "and trained again", file=sys.stderr)
            return None

    @staticmethod
    def key(kind: str, **parts) -> str:
        blob = json.dumps({"kind": kind, **parts}, sort_keys=True, default=str)
        return f"{kind}-{hashlib.sha256(blob.encode()).hexdigest()[:24]}"

    @contextmanager
    def exclusive(self, key: str) -> Iterator[Path]:
        """Holds the lock of one cache entry; yields the entry's path stem.

        Concurrent workers that need the same model wait here while the first one trains it,
        then load it: a model shared by several work units is trained once. (An advisory
        ``flock`` on a lock file beside the entry; the entry itself is written atomically.)
        """
        stem = Path(self.root) / key
        stem.parent.mkdir(parents=True, exist_ok=True)
        with open(stem.with_suffix(".lock"), "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield stem
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def get_or_train(self, key: str, load: Callable[[Path], tuple[M, dict]],
                     train_and_save: Callable[[Path], tuple[M, dict]]) -> tuple[M, dict]:
        """The model stored under ``key``, trained (and saved) once when it is not there.

        Under the entry's lock, so concurrent work units that need the same model train it
        once. ``load(stem)`` reads a stored entry (its checks failing sets it aside, see
        :meth:`reuse`); ``train_and_save(stem)`` trains, writes the entry and returns the model
        and its metadata. The metadata gains ``cache_key`` and ``cached``.
        """
        with self.exclusive(key) as stem:
            cached = self.reuse(stem, load)
            if cached is not None:
                model, meta = cached
                return model, {**meta, "cache_key": key, "cached": True}
            model, meta = train_and_save(stem)
            return model, {**meta, "cache_key": key, "cached": False}

    def decision_model(self, data: WorldData, config: DecisionConfig, seed: int,
                       progress: bool = False) -> tuple[DecisionModel, dict]:
        """Loads the model trained on ``data`` with ``config`` and ``seed``, training it once."""
        key = self.key("decision", data=data.content_hash(), config=config.to_json(),
                       seed=int(seed), torch=torch.__version__.split("+")[0])
        return self.get_or_train(key, DecisionModel.load, lambda stem: self._train_decision_model(
            stem, data, config, seed, progress))

    @staticmethod
    def _train_decision_model(stem: Path, data: WorldData, config: DecisionConfig,
                              seed: int, progress: bool) -> tuple[DecisionModel, dict]:
        model = train_decision_model(data, config, seed, progress=progress)
        with torch.no_grad():
            acc = float((model.approves(data.x_test).long() == data.y_test).float().mean())
            approval = float(model.approves(data.x_test).float().mean())
        extra = {"config": config.to_json(), "seed": int(seed), "data_sha256": data.content_hash(),
                 "test_accuracy": acc, "test_approval_rate": approval}
        model.save(stem, extra)
        _, meta = DecisionModel.load(stem)
        return model, meta


