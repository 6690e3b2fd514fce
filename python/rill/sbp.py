"""rill.sbp: how a global tensor is laid out over the ranks of its placement (OneFlow's SBP).

    rill.sbp.split(0)      each rank holds one equal slice along dim 0
    rill.sbp.broadcast     each rank holds the whole tensor
    rill.sbp.partial_sum   each rank holds a summand; the tensor is their sum

See docs/global.md.
"""

__all__ = ["sbp", "split", "broadcast", "partial_sum"]


class sbp:
    """One SBP; compare with ==. Made by split(dim), or one of broadcast and partial_sum."""

    __slots__ = ("_kind", "_dim")

    def __init__(self, kind, dim=None):
        self._kind = kind
        self._dim = dim

    @property
    def dim(self):
        """split's dim (None for broadcast and partial_sum)."""
        return self._dim

    def _str(self):  # the job's spelling (src/rill/core/sbp.h)
        return f"S({self._dim})" if self._kind == "S" else self._kind

    @staticmethod
    def _parse(s):
        if s == "B":
            return broadcast
        if s == "P":
            return partial_sum
        return split(int(s[2:-1]))

    def __eq__(self, other):
        return isinstance(other, sbp) and (self._kind, self._dim) == (other._kind, other._dim)

    def __hash__(self):
        return hash((self._kind, self._dim))

    def __repr__(self):
        if self._kind == "S":
            return f"rill.sbp.split(dim={self._dim})"
        return "rill.sbp.broadcast" if self._kind == "B" else "rill.sbp.partial_sum"


def split(dim=0):
    """Each rank holds one equal slice along dim (the dim's size must be a multiple of the ranks)."""
    if not isinstance(dim, int) or isinstance(dim, bool) or dim < 0:
        raise ValueError(f"[rill.sbp.split] dim must be an int >= 0, got {dim!r}")
    return sbp("S", dim)


broadcast = sbp("B")
partial_sum = sbp("P")
