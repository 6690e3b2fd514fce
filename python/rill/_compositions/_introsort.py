"""The order libstdc++'s std::sort leaves equal elements in, for mode's tie index.

PyTorch's CPU mode sorts each row's (value, index) pairs with std::sort comparing the values only, then
takes the index of the last pair of the winning run. std::sort is not stable above 16 elements, so which of
several equal values' indices comes last depends on its exact sequence of moves: introsort (median-of-three
pivot moved to the front, unguarded Hoare partition, recursion on the right part, heapsort past
2 * floor(log2(n)) levels) down to runs of at most 16, then one insertion sort over the whole row. This
module replays that sequence on a Python list (CPU time O(n log n) per row, used only for rows with ties).
"""

_THRESHOLD = 16


def _sift_down(a, first, hole, length, item):
    """libstdc++'s __adjust_heap: move the hole to a leaf along the larger children, then push item up."""
    top, child = hole, hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if a[first + child][0] < a[first + child - 1][0]:
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and a[first + parent][0] < item[0]:
        a[first + hole] = a[first + parent]
        hole, parent = parent, (parent - 1) // 2
    a[first + hole] = item


def _heapsort(a, first, last):
    length = last - first
    for parent in range((length - 2) // 2, -1, -1):
        _sift_down(a, first, parent, length, a[first + parent])
    while last - first > 1:
        last -= 1
        item, a[last] = a[last], a[first]
        _sift_down(a, first, 0, last - first, item)


def _median_to_first(a, first, x, y, z):
    v = lambda i: a[i][0]  # noqa: E731
    if v(x) < v(y):
        pick = y if v(y) < v(z) else z if v(x) < v(z) else x
    else:
        pick = x if v(x) < v(z) else z if v(y) < v(z) else y
    a[first], a[pick] = a[pick], a[first]


def _partition(a, first, last, pivot):
    while True:
        while a[first][0] < a[pivot][0]:
            first += 1
        last -= 1
        while a[pivot][0] < a[last][0]:
            last -= 1
        if not first < last:
            return first
        a[first], a[last] = a[last], a[first]
        first += 1


def _introsort_loop(a, first, last, depth):
    while last - first > _THRESHOLD:
        if depth == 0:
            _heapsort(a, first, last)
            return
        depth -= 1
        _median_to_first(a, first, first + 1, first + (last - first) // 2, last - 1)
        cut = _partition(a, first + 1, last, first)
        _introsort_loop(a, cut, last, depth)
        last = cut


def _insert(a, i, first):
    """Insertion of a[i] into the sorted a[first:i] (stable: it stops at an equal value)."""
    item = a[i]
    if item[0] < a[first][0]:
        a[first + 1:i + 1] = a[first:i]
        a[first] = item
        return
    while item[0] < a[i - 1][0]:
        a[i] = a[i - 1]
        i -= 1
    a[i] = item


def std_sort(a):
    """a (a list of (value, payload) pairs) sorted by value in place, as libstdc++'s std::sort orders it."""
    n = len(a)
    if n < 2:
        return a
    _introsort_loop(a, 0, n, 2 * (n.bit_length() - 1))
    for i in range(1, n):
        # the first 16 elements against the row's start, the rest unguarded (introsort left an element no larger
        # than any later one within the first 16)
        _insert(a, i, 0) if i < _THRESHOLD else _insert_unguarded(a, i)
    return a


def _insert_unguarded(a, i):
    item = a[i]
    while i > 0 and item[0] < a[i - 1][0]:  # i > 0: only NaNs (unordered) could run past the start
        a[i] = a[i - 1]
        i -= 1
    a[i] = item


def mode_index(values):
    """The index PyTorch's CPU mode reports for one row: that of the last element, in std::sort's order, of the
    first longest run of equal values."""
    pairs = std_sort([(v, i) for i, v in enumerate(values)])
    best, best_count, count = 0, 0, 0
    for k, (v, i) in enumerate(pairs):
        count += 1
        if k == len(pairs) - 1 or v != pairs[k + 1][0]:
            if count > best_count:
                best, best_count = i, count
            count = 0
    return best
