"""Variable-length sequences: pad_sequence, PackedSequence and the pack/pad conversions, as torch.nn.utils.rnn.

A PackedSequence stores a batch of sequences time-major with the padding removed: data holds, for each time
step t, the rows of the batch_sizes[t] sequences still running at t (longest first). sorted_indices maps
positions in that longest-first order to the caller's batch; unsorted_indices is its inverse."""
from collections import namedtuple

import rill


def _lengths_list(lengths, name):
    if isinstance(lengths, rill.Tensor):
        if lengths.dim() != 1:
            raise ValueError(f"{name}: lengths must be a 1-D tensor or a list of ints, "
                             f"got shape {tuple(lengths.shape)}")
        return [int(v) for v in lengths.tolist()]
    try:
        return [int(v) for v in lengths]
    except TypeError:
        raise TypeError(f"{name}: lengths must be a 1-D tensor or a list of ints, got {type(lengths).__name__}") \
            from None


def _index_tensor(values):
    return rill.tensor(list(values), dtype=rill.int64)


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """A packed batch of variable-length sequences (data, batch_sizes, sorted_indices, unsorted_indices);
    build it with pack_padded_sequence or pack_sequence."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if batch_sizes is None:
            raise TypeError("PackedSequence: batch_sizes is required (build one with pack_padded_sequence)")
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data):
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def to(self, *args, **kwargs):
        """A PackedSequence whose data is data.to(...) (the index tensors are unchanged)."""
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else self._with_data(data)

    def cpu(self):
        return self

    def double(self):
        return self._with_data(self.data.double())

    def float(self):
        return self._with_data(self.data.float())

    def half(self):
        return self._with_data(self.data.half())

    def long(self):
        return self._with_data(self.data.long())

    @property
    def is_cuda(self):
        return False

    def is_pinned(self):
        return False


def _invert(permutation):
    order = [int(v) for v in permutation.tolist()]
    inverse = [0] * len(order)
    for i, p in enumerate(order):
        inverse[p] = i
    return _index_tensor(inverse)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of shapes (L_i, *) into (max L, B, *) (or (B, max L, *) when batch_first), filling the
    missing steps with padding_value on the right (or the left)."""
    if isinstance(sequences, rill.Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    for s in sequences:
        if not isinstance(s, rill.Tensor) or s.dim() < 1:
            raise TypeError("pad_sequence: expected a list of tensors with at least one dimension")
    trailing = tuple(sequences[0].shape[1:])
    if any(tuple(s.shape[1:]) != trailing for s in sequences):
        raise RuntimeError("pad_sequence: the sequences' trailing dimensions must all match, got "
                           f"{[tuple(s.shape) for s in sequences]}")
    max_len = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        missing = max_len - s.shape[0]
        if missing:
            pad = rill.full((missing,) + trailing, padding_value, dtype=s.dtype)
            s = rill.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        rows.append(s)
    out = rill.stack(rows, 0)
    return out if batch_first else out.transpose(0, 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The inverse of pad_sequence: a list of the first lengths[i] steps of each sequence."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:n] for seq, n in zip(padded_sequences.unbind(0), _lengths_list(lengths, "unpad_sequence"))]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) (or (B, T, *) when batch_first) of sequences of the given lengths.
    With enforce_sorted the lengths must be in decreasing order; otherwise the batch is sorted here and
    the permutation kept in sorted_indices."""
    if not isinstance(input, rill.Tensor):
        raise TypeError(f"pack_padded_sequence: expected a Tensor as input, got {type(input).__name__}")
    lengths = _lengths_list(lengths, "pack_padded_sequence")
    batch_dim = 0 if batch_first else 1
    if input.dim() < 2 or input.shape[batch_dim] != len(lengths):
        raise ValueError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                         f"(batch_size={input.shape[batch_dim] if input.dim() >= 2 else 'none'})")
    if enforce_sorted:
        if any(lengths[i] < lengths[i + 1] for i in range(len(lengths) - 1)):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        sorted_indices = _index_tensor(order)
        lengths = [lengths[i] for i in order]
        input = input.index_select(batch_dim, sorted_indices)
    if lengths and lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if batch_first:
        input = input.transpose(0, 1)
    if lengths[0] > input.shape[0]:
        raise RuntimeError(f"pack_padded_sequence: a length ({lengths[0]}) exceeds the padded length "
                           f"({input.shape[0]})")
    batch_sizes = [sum(1 for n in lengths if n > t) for t in range(lengths[0])]
    data = rill.cat([input[t, :b] for t, b in enumerate(batch_sizes)], 0)
    return PackedSequence(data, _index_tensor(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Unpack a PackedSequence into (padded (T, B, *) or (B, T, *), lengths) in the caller's batch order;
    T is total_length when given (at least the longest sequence), else the longest sequence's length."""
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"pad_packed_sequence: expected a PackedSequence, got {type(sequence).__name__}")
    batch_sizes = [int(v) for v in sequence.batch_sizes.tolist()]
    max_len = len(batch_sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {max_len}")
        max_len = total_length
    data = sequence.data
    batch = batch_sizes[0]
    trailing = tuple(data.shape[1:])
    steps, offset = [], 0
    for b in batch_sizes:
        step = data[offset:offset + b]
        offset += b
        if b < batch:
            step = rill.cat([step, rill.full((batch - b,) + trailing, padding_value, dtype=data.dtype)], 0)
        steps.append(step)
    for _ in range(max_len - len(batch_sizes)):
        steps.append(rill.full((batch,) + trailing, padding_value, dtype=data.dtype))
    padded = rill.stack(steps, 0)
    lengths = [sum(1 for b in batch_sizes if b > i) for i in range(batch)]
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = [lengths[i] for i in sequence.unsorted_indices.tolist()]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, _index_tensor(lengths)


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of tensors (L_i, *) (longest first when enforce_sorted)."""
    sequences = list(sequences)
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of tensors a PackedSequence holds, in the caller's order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return [seq[:n] for seq, n in zip(padded.unbind(0), lengths.tolist())]
