"""One trainer skeleton: Adam over shuffled mini-batches of a fixed sample, with checks.

The decision model and iCARMA (and any model trained by mini-batch gradient descent on a fixed
sample) share this loop, so batching, shuffling, progress and early stopping are written once.
The batch order comes from the caller's generator, so training is reproducible.

Example:
    >>> import torch
    >>> net = torch.nn.Linear(1, 1)
    >>> x = torch.linspace(-1, 1, 32).unsqueeze(1)
    >>> loss = lambda idx: ((net(x[idx]) - 2 * x[idx]) ** 2).mean()
    >>> fit_minibatches(net, 32, loss, lr=0.1, batch_size=8, epochs=50,
    ...                 generator=torch.Generator().manual_seed(0))
    50
    >>> round(float(net.weight), 1)
    2.0
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .progress import track
from .rng import derive_seed

__all__ = ["fit_minibatches", "torch_generator"]


def fit_minibatches(
    module: torch.nn.Module, n: int, loss: Callable[[torch.Tensor], torch.Tensor], *,
    lr: float, batch_size: int, epochs: int, generator: torch.Generator,
    weight_decay: float = 0.0, before_epoch: Callable[[int], None] | None = None,
    after_step: Callable[[], None] | None = None, check: Callable[[int], bool] | None = None,
    check_every: int = 1, desc: str = "training", progress: bool = False,
) -> int:
    """Trains ``module`` with Adam on mini-batches of ``n`` rows; returns the epochs run.

    Args:
        module: the model (put in train mode for the epochs, eval mode for the checks).
        n: rows of the training sample.
        loss: the loss of the rows ``idx`` (indices into the sample).
        lr, weight_decay: Adam's settings.
        batch_size, epochs: mini-batch size and number of passes.
        generator: draws each epoch's row order (``randperm``).
        before_epoch: called with the epoch index before its batches (e.g. data augmentation).
        after_step: called after every optimizer step (e.g. a Lagrange multiplier's update).
        check: called with the number of epochs done every ``check_every`` epochs and after
            the last; returning true stops training (early stopping).
        desc, progress: the progress display.
    """
    # foreach: one kernel per step for all parameters (same arithmetic as the per-tensor loop)
    opt = torch.optim.Adam(module.parameters(), lr=lr, weight_decay=weight_decay, foreach=True)
    for epoch in track(range(epochs), desc=desc, unit="epoch", leave=False, enabled=progress):
        module.train()
        if before_epoch is not None:
            before_epoch(epoch)
        order = torch.randperm(n, generator=generator)
        for start in range(0, n, batch_size):
            opt.zero_grad(set_to_none=True)
            loss(order[start:start + batch_size]).backward()
            opt.step()
            if after_step is not None:
                after_step()
        done = epoch + 1
        if check is not None and (done % check_every == 0 or done == epochs):
            module.eval()
            if check(done):
                module.eval()
                return done
    module.eval()
    return epochs


def torch_generator(seed: int, *keys: int | str) -> torch.Generator:
    """A CPU torch generator for the stream ``(seed, *keys)`` (the torch twin of
    :func:`simstudy.core.rng.generator`).

    Example:
        >>> a, b = torch_generator(0, "example"), torch_generator(0, "example")
        >>> bool((torch.rand(3, generator=a) == torch.rand(3, generator=b)).all())
        True
    """
    g = torch.Generator()
    g.manual_seed(derive_seed(seed, *keys))
    return g
