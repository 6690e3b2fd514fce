"""Constraints on distribution parameters and supports: each says whether a tensor's values lie in a set."""

import rill


class Constraint:
    """A set of values; check(value) is a bool tensor, True where value lies in the set."""

    event_dim = 0

    def check(self, value):
        raise NotImplementedError

    def __repr__(self):
        return type(self).__name__.lstrip("_") + "()"


class _Real(Constraint):
    def check(self, value):
        return value == value  # False only at NaN


class _Boolean(Constraint):
    def check(self, value):
        return (value == 0) | (value == 1)


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return value > self.lower_bound

    def __repr__(self):
        return f"GreaterThan(lower_bound={self.lower_bound})"


class _GreaterThanEq(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return value >= self.lower_bound

    def __repr__(self):
        return f"GreaterThanEq(lower_bound={self.lower_bound})"


class _OneHot(Constraint):
    event_dim = 1

    def check(self, value):
        return rill.all((value == 0) | (value == 1), dim=-1) & (value.sum(-1) == 1)


class _Interval(Constraint):
    """lower <= value <= upper (or < upper when half_open)."""

    def __init__(self, lower_bound, upper_bound, half_open=False):
        self.lower_bound, self.upper_bound, self.half_open = lower_bound, upper_bound, half_open

    def check(self, value):
        upper = value < self.upper_bound if self.half_open else value <= self.upper_bound
        return (value >= self.lower_bound) & upper

    def __repr__(self):
        name = "HalfOpenInterval" if self.half_open else "Interval"
        return f"{name}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerInterval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self):
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        return rill.all(value >= 0, dim=-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _RealVector(Constraint):
    event_dim = 1

    def check(self, value):
        return rill.all(value == value, dim=-1)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        lower = rill.all(rill.all(value.tril() == value, dim=-1), dim=-1)
        positive_diag = rill.all(value.diagonal(dim1=-2, dim2=-1) > 0, dim=-1)
        return lower & positive_diag


class _PositiveDefinite(Constraint):
    event_dim = 2

    def check(self, value):
        symmetric = rill.all(rill.all((value - value.transpose(-1, -2)).abs() < 1e-6, dim=-1), dim=-1)
        _, info = rill.linalg.cholesky_ex(value)
        return symmetric & (info == 0)


real = _Real()
boolean = _Boolean()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
one_hot = _OneHot()
greater_than_eq = _GreaterThanEq
unit_interval = _Interval(0.0, 1.0)
simplex = _Simplex()
real_vector = _RealVector()
lower_cholesky = _LowerCholesky()
positive_definite = _PositiveDefinite()
greater_than = _GreaterThan
interval = _Interval
integer_interval = _IntegerInterval


def half_open_interval(lower_bound, upper_bound):
    """lower <= value < upper."""
    return _Interval(lower_bound, upper_bound, half_open=True)


