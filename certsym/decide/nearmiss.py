"""Why two float networks that are NOT EQUIVALENT almost are: a summary for the reader, never a verdict.

Neuron i of θ1 has an exact partner j in θ2 when (a_j, b_j) = λ (a_i, b_i) with λ > 0 and λ v_j = v_i exactly,
the H_n relation. Rows are compared through their normalized form r / |r_p| (p the first nonzero input
weight): IEEE division is correctly rounded, so positively proportional rows of ≤ 24-bit floats have
bit-identical normalized rows, and the output weights scaled by |r_p| are exact in binary64. For a neuron
without an exact partner, the nearest neuron of θ2 by normalized row is reported with the largest difference,
relative and in units in the last place (ulps) of the file's element type, after scaling the partner onto
the neuron. Cost: O((n1 + n2)(m + k)) plus one n1' × n2 matrix product over the unpartnered neurons.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class NearMiss:
    """``partnered`` of ``n`` live neurons of θ1 have an exact partner in θ2; ``worst`` lists, for up to three
    others, (neuron, nearest partner, largest relative difference, largest difference in ulps)."""

    n: int
    partnered: int
    worst: list[tuple[int, int, float, float]]
    dtype: str

    def lines(self) -> list[str]:
        """The summary as short lines of text."""
        out = [f"{self.partnered} of {self.n} neurons of θ1 have an exact partner in θ2 (a positive rescaling)"]
        for i, j, rel, ulps in self.worst:
            out.append(f"  neuron {i}: nearest is neuron {j} of θ2, differing by at most {rel:.3g} relative "
                       f"({ulps:.3g} ulp of {self.dtype}) after rescaling")
        return out

    def to_json(self) -> dict:
        return {"neurons": self.n, "partnered": self.partnered, "dtype": self.dtype,
                "nearest": [{"neuron": i, "partner": j, "relative": rel, "ulps": ulps} for i, j, rel, ulps in
                            self.worst]}


def _normalized(W1: np.ndarray, b1: np.ndarray, W2: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Live neurons' rows divided by |first nonzero input weight| (in the file's type), their output weights
    multiplied by it (binary64, exact), and their indices."""
    rows = np.hstack([W1, b1[:, None]])
    live = np.flatnonzero(W1.any(axis=1) & W2.any(axis=0))
    rows = rows[live]
    lead = np.abs(rows[np.arange(len(live)), np.argmax(rows[:, :-1] != 0, axis=1)])
    return rows / lead[:, None].astype(rows.dtype), W2[:, live].T.astype(np.float64) * lead[:, None], live


def _keys(rows: np.ndarray, v: np.ndarray) -> np.ndarray:
    """One opaque key per neuron, the bytes of its normalized row and of its scaled output weights, as one void
    scalar each: sorting them (``np.isin``) matches exact partners without a Python object per row."""
    both = np.concatenate([np.ascontiguousarray(rows).view(np.uint8).reshape(len(rows), rows.shape[1] * rows.itemsize),
                           np.ascontiguousarray(v).view(np.uint8).reshape(len(v), v.shape[1] * v.itemsize)], axis=1)
    return np.ascontiguousarray(both).view(np.dtype((np.void, both.shape[1]))).ravel()


def near_miss(arrays1: list, arrays2: list) -> NearMiss:
    """The summary for two networks of float arrays (W1, b1, W2, b2). Never decides anything."""
    W1, b1, W2, _ = (np.asarray(a) for a in arrays1)
    V1, c1, V2, _ = (np.asarray(a) for a in arrays2)
    dtype = np.result_type(W1.dtype, V1.dtype)
    r1, v1, live1 = _normalized(W1.astype(dtype), b1.astype(dtype), W2)
    r2, v2, live2 = _normalized(V1.astype(dtype), c1.astype(dtype), V2)
    lonely = np.flatnonzero(~np.isin(_keys(r1, v1), _keys(r2, v2))).tolist()
    worst = []
    if lonely and len(live2):
        a, b = r1[lonely].astype(np.float64), r2.astype(np.float64)
        dist = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.T
        nearest = dist.argmin(axis=1)
        spacing = np.spacing(np.abs(r1[lonely]).astype(dtype)).astype(np.float64)
        diff = np.abs(a - b[nearest])
        rel = (diff / np.maximum(np.abs(a), np.finfo(np.float64).tiny)).max(axis=1)
        ulps = (diff / spacing).max(axis=1)
        order = np.argsort(-ulps)[:3]
        worst = [(int(live1[lonely[t]]), int(live2[nearest[t]]), float(rel[t]), float(ulps[t])) for t in order]
    return NearMiss(len(live1), len(live1) - len(lonely), worst, str(dtype))
