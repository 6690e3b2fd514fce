"""rill.utils.tensorboard.SummaryWriter: what it writes reads back through TensorBoard's own event reader."""
import os

import pytest

import rill

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

from rill.utils.tensorboard import SummaryWriter  # noqa: E402


def read(logdir):
    acc = EventAccumulator(logdir, size_guidance={"scalars": 0, "histograms": 0, "tensors": 0})
    acc.Reload()
    return acc


def test_scalars_histograms_and_text_read_back(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        for step in range(5):
            w.add_scalar("loss", rill.tensor(1.0 / (step + 1)), step)
            w.add_scalar("lr", 0.1, step)
        w.add_histogram("weights", rill.randn(1000), 3)
        w.add_histogram("counts", rill.arange(10.0), 4, bins=5)
        w.add_text("note", "hello **rill**", 0)
        w.add_scalars("acc", {"train": 0.9, "test": 0.8}, 1)
    acc = read(str(tmp_path))
    loss = acc.Scalars("loss")
    assert [e.step for e in loss] == [0, 1, 2, 3, 4]
    assert abs(loss[3].value - 0.25) < 1e-7
    h = acc.Histograms("weights")[0].histogram_value
    assert h.num == 1000 and sum(h.bucket) == 1000
    assert acc.Histograms("counts")[0].histogram_value.num == 10
    text = acc.Tensors("note/text_summary")[0].tensor_proto.string_val[0].decode()
    assert text == "hello **rill**"
    runs = sorted(d for d in os.listdir(tmp_path) if os.path.isdir(tmp_path / d))
    assert runs == ["acc_test", "acc_train"]
    assert read(str(tmp_path / "acc_train")).Scalars("acc")[0].value == pytest.approx(0.9)


def test_bad_values_raise(tmp_path):
    w = SummaryWriter(str(tmp_path))
    with pytest.raises(ValueError, match="single number"):
        w.add_scalar("x", rill.ones(3))
    with pytest.raises(ValueError, match="empty"):
        w.add_histogram("h", rill.zeros(0))
    w.close()
