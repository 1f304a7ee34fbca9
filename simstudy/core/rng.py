"""Keyed random streams.

Every random quantity in simstudy is drawn from a stream identified by *what it is for*
(replication, purpose, entity), never by the order in which code happens to run. Two policies
compared in one scenario therefore face the same applicants and the same luck (common random
numbers), and results do not depend on batch sizes or worker counts.

Two kinds of streams are provided:

* :func:`generator` gives a whole stream for one purpose (for example "sample the world of
  replication 3"), derived with :class:`numpy.random.SeedSequence`
  (:func:`simstudy.core.trainer.torch_generator` is its torch twin).
* :func:`entity_uniforms` gives, for a vector of entity ids, draws that
  depend only on ``(seed, purpose, id, draw index)``. They are computed in one vectorized pass
  with a counter-based hash (SplitMix64 finalizer), because numpy exposes no way to evaluate
  many keyed counter-based generators at once and creating one ``Generator`` per applicant is
  too slow for populations of 10^5 people (:func:`simstudy.core.normal_draws.entity_normals`
  turns them into standard normals).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

__all__ = [
    "key_to_int",
    "seed_sequence",
    "generator",
    "derive_seed",
    "entity_uniforms",
]

_MASK64 = (1 << 64) - 1


def key_to_int(key: int | str) -> int:
    """Maps a stream key (an int, or a purpose name) to a non-negative integer, stably."""
    if isinstance(key, (bool, np.bool_)):
        raise TypeError("stream keys must be ints or strings, not bools")
    if isinstance(key, (int, np.integer)):
        if key < 0:
            raise ValueError(f"stream keys must be non-negative, got {key}")
        return int(key)
    digest = hashlib.sha256(str(key).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little")


def seed_sequence(seed: int, *keys: int | str) -> np.random.SeedSequence:
    """The seed sequence of the stream ``(seed, *keys)``."""
    return np.random.SeedSequence(int(seed), spawn_key=tuple(key_to_int(k) for k in keys))


def generator(seed: int, *keys: int | str) -> np.random.Generator:
    """A numpy generator for the stream ``(seed, *keys)``."""
    return np.random.Generator(np.random.PCG64(seed_sequence(seed, *keys)))


def derive_seed(seed: int, *keys: int | str) -> int:
    """A 63-bit integer seed for the stream ``(seed, *keys)`` (for libraries that take ints)."""
    state = seed_sequence(seed, *keys).generate_state(2, dtype=np.uint32)
    return int((int(state[0]) << 31) ^ int(state[1])) & ((1 << 63) - 1)


def _splitmix64(z: np.ndarray) -> np.ndarray:
    # SplitMix64 finalizer (Steele, Lea & Flood 2014): a bijective avalanche on uint64.
    z = (z + np.uint64(0x9E3779B97F4A7C15)) & np.uint64(_MASK64)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def entity_uniforms(
    seed: int, purpose: int | str, ids: Iterable[int] | np.ndarray, n_draws: int = 1
) -> np.ndarray:
    """Uniform(0, 1) draws keyed by ``(seed, purpose, id, draw)``.

    Args:
        seed: the run's (or replication's) seed.
        purpose: what the draws are for, e.g. ``"actionability"``.
        ids: entity ids (non-negative ints), any order, duplicates allowed.
        n_draws: draws per entity.

    Returns:
        Array of shape ``(len(ids), n_draws)`` in the open interval (0, 1). Row ``i`` depends
        only on ``ids[i]``, so any subset or permutation of entities sees the same numbers.

    References:
        Steele, Lea & Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014,
        https://doi.org/10.1145/2660193.2660195 (the SplitMix64 finalizer).

    Example:
        >>> both = entity_uniforms(7, "example", [3, 9])
        >>> bool((entity_uniforms(7, "example", [9]) == both[1]).all())
        True
    """
    ids = np.asarray(ids, dtype=np.uint64).reshape(-1)
    base = np.uint64(derive_seed(seed, purpose) & _MASK64)
    with np.errstate(over="ignore"):
        key = _splitmix64(ids ^ base)
        draws = np.arange(n_draws, dtype=np.uint64)
        bits = _splitmix64(_splitmix64(key[:, None] + draws[None, :]) ^ base)
    # 53 high bits -> double in (0, 1); the half offset keeps 0 out.
    return ((bits >> np.uint64(11)).astype(np.float64) + 0.5) / float(1 << 53)
