"""Placing a batch's distinct indices in distinct buckets: a maximum bipartite matching
(augmenting paths, Kuhn's algorithm) between indices and their candidate buckets.

A matching of every index exists exactly when Hall's condition holds, and augmenting paths
find one whenever it exists, so no placement that could succeed fails here; the chance that
none exists is models/placement_bound.py's. A failure is final: the hash functions are fixed
per database, so fresh randomness cannot help, and fetching the rest in a second round would
tell the server that this batch failed (which depends on the indices). The caller gets a clear
error and may split its request.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from spiralpir.optimizer.errors import SpiralpirError


class PlacementFailed(SpiralpirError):
    """No assignment of the indices to distinct buckets exists for this layout."""


def place(indices: Sequence[int], cand: np.ndarray, buckets: int) -> dict[int, int]:
    """index -> bucket for distinct ``indices`` (cand[j]: the candidates of indices[j])."""
    if len(indices) > buckets:
        raise PlacementFailed(f"{len(indices)} distinct indices cannot go to {buckets} "
                              "buckets: a batch holds at most one index per bucket")
    owner = [-1] * buckets  # bucket -> position in indices
    options = [list(dict.fromkeys(int(b) for b in row)) for row in cand]
    for start in range(len(indices)):
        # iterative DFS for an augmenting path from index `start`
        seen = [False] * buckets
        parent: dict[int, tuple[int, int]] = {}  # bucket -> (index position, previous bucket)
        stack = [(start, -1)]
        found = -1
        while stack and found < 0:
            j, via = stack.pop()
            for b in options[j]:
                if seen[b]:
                    continue
                seen[b] = True
                parent[b] = (j, via)
                if owner[b] < 0:
                    found = b
                    break
                stack.append((owner[b], b))
        if found < 0:
            raise PlacementFailed(
                f"the {len(indices)} distinct indices cannot be placed in distinct buckets of "
                f"this database's batch layout ({buckets} buckets): a set of them shares too "
                "few candidate buckets. This happens with the probability the plan states; "
                "retrying cannot help (the hash functions are fixed), so request them in "
                "smaller batches")
        b = found
        while b >= 0:  # flip the path: each bucket on it takes the index that reached it
            j, prev = parent[b]
            owner[b] = j
            b = prev
    return {int(indices[j]): b for b, j in enumerate(owner) if j >= 0}
