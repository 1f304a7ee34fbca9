"""An action shortened to the decision boundary: the first approved point on its segment.

For a factual ``x``, the acted-on features ``A`` and the action's values ``theta_A``, the points

    x_A(t) = x_A + t (theta_A - x_A),    t = 1/n, 2/n, ..., 1,

are judged in order (each, when ``snap`` is given, first put on the features' levels), and the
first whose counterfactual the decision model approves is kept. iCARMA deploys it with
``shorten: boundary``; ``benchmarks/icarma_plausibility.py`` measures with it how much of an
action validity needs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

__all__ = ["first_approved"]


def first_approved(world, model, x: np.ndarray, acted: np.ndarray, target: np.ndarray,
                   steps: int,
                   snap: Callable[[np.ndarray, np.ndarray, np.ndarray],
                                  tuple[np.ndarray, np.ndarray]] | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(values, acted, t)``: each row's first approved point ``x + t (target - x)`` on the
    acted-on features (``t = 1/steps, ..., 1``), where it is acted on, and its ``t``; a row
    with no approved point keeps ``target`` and ``acted`` and has ``t = NaN``.

    Args:
        world: the world whose counterfactual is judged (``counterfactual(x, acted, values)``).
        model: the decision model (``approves``).
        x, acted, target: ``(n, d)`` factuals, acted-on features, the action's values
            (``x`` where not acted on).
        steps: the number of points ``n``.
        snap: ``(values, acted, rows) -> (values, acted)`` applied to every point before it is
            judged, for the rows ``rows`` of ``x`` still without an approved point (a coded
            feature put on its levels; one that returns to its factual value is no longer
            acted on).

    Example:
        Income raised far past what approval needs is cut back to the first approved point:

        >>> import numpy as np
        >>> from simstudy.examples import small_context
        >>> from simstudy.policies.icarma import first_approved
        >>> context = small_context()
        >>> x = context.data.x_test[~context.model.approves(context.data.x_test)][:3].numpy()
        >>> acted = np.zeros(x.shape, dtype=bool)
        >>> acted[:, 5] = True  # income
        >>> target = x.copy()
        >>> target[:, 5] += 10 * context.data.feature_range[5].item()
        >>> values, acted_at, t = first_approved(context.world, context.model, x, acted,
        ...                                      target, 50)
        >>> bool((values[:, 5] <= target[:, 5]).all()), t.shape
        (True, (3,))
    """
    x = np.asarray(x, dtype=np.float64)
    target = np.where(acted, target, x)
    xt = torch.from_numpy(x)
    values, chosen_acted = target.copy(), np.array(acted, dtype=bool, copy=True)
    t = np.full(len(x), np.nan)
    done = ~chosen_acted.any(axis=1)  # nothing acted on: nothing to shorten
    for i in range(1, steps + 1):
        # only the rows still without an approved point are judged: a row's verdict does not
        # depend on the others in its batch
        rows = np.flatnonzero(~done)
        if len(rows) == 0:
            break
        point = x[rows] + (i / steps) * (target[rows] - x[rows])
        point_acted = np.array(acted[rows], dtype=bool, copy=True)
        if snap is not None:
            point, point_acted = snap(point, point_acted, rows)
        with torch.no_grad():
            approved = model.approves(world.counterfactual(
                xt[rows], torch.from_numpy(point_acted), torch.from_numpy(point))).numpy().ravel()
        newly = approved & point_acted.any(axis=1)
        hit = rows[newly]
        values[hit], t[hit] = point[newly], i / steps
        chosen_acted[hit] = point_acted[newly]
        done[hit] = True
    return values, chosen_acted, t
