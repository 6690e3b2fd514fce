"""rill.utils.tensorboard: SummaryWriter, writing TensorBoard event files through the `tensorboard` package
(pip install tensorboard): scalars, groups of scalars, histograms and text, read back by TensorBoard as
PyTorch's writer's are."""
try:
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
    from tensorboard.compat.proto.tensor_pb2 import TensorProto
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
except ImportError as e:  # the package is optional: only this module needs it
    raise ImportError("rill.utils.tensorboard needs the tensorboard package: pip install tensorboard") from e

import os
import socket
import time
from datetime import datetime

import numpy as np

__all__ = ["SummaryWriter"]


def _numpy(values):
    if hasattr(values, "detach"):
        values = values.detach()
    if hasattr(values, "numpy"):
        return np.asarray(values.float().numpy() if str(values.dtype).endswith("bfloat16") else values.numpy())
    return np.asarray(values)


def _scalar(value):
    a = _numpy(value)
    if a.size != 1:
        raise ValueError(f"add_scalar expects a single number or a one-element tensor, got shape {a.shape}")
    return float(a.reshape(()))


def _tensorflow_buckets():
    """TensorFlow's default histogram bucket limits: +-1e-12 growing by 10% to 1e20, and 0."""
    pos, v = [], 1e-12
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return [-x for x in reversed(pos)] + [0.0] + pos + [float("inf")]


def _histogram(values, bins, max_bins):
    a = _numpy(values).astype(np.float64).reshape(-1)
    if a.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    if bins == "tensorflow":
        limits = np.array(_tensorflow_buckets())
        counts = np.bincount(np.searchsorted(limits, a, side="left"), minlength=len(limits))[:len(limits)]
    else:
        counts, edges = np.histogram(a, bins=bins)
        limits = edges[1:]
        if max_bins is not None and len(counts) > max_bins:
            group = -(-len(counts) // max_bins)
            counts = np.add.reduceat(counts, np.arange(0, len(counts), group))
            limits = limits[np.minimum(np.arange(group - 1, len(limits) + group - 1, group), len(limits) - 1)]
    nonzero = np.nonzero(counts)[0]
    lo, hi = (nonzero[0], nonzero[-1] + 1) if nonzero.size else (0, 0)
    return HistogramProto(min=float(a.min()), max=float(a.max()), num=int(a.size), sum=float(a.sum()),
                          sum_squares=float((a * a).sum()), bucket_limit=[float(x) for x in limits[lo:hi]],
                          bucket=[float(x) for x in counts[lo:hi]])


class SummaryWriter:
    """Writes TensorBoard event files under log_dir (default runs/<date>_<host><comment>), as
    torch.utils.tensorboard.SummaryWriter."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120, filename_suffix=""):
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self._writers = {}
        self._writer(self.log_dir)

    def _writer(self, logdir):
        w = self._writers.get(logdir)
        if w is None:
            w = EventFileWriter(logdir, self.max_queue, self.flush_secs, self.filename_suffix)
            w.add_event(Event(wall_time=time.time(), file_version="brain.Event:2"))
            if self.purge_step is not None:
                w.add_event(Event(step=self.purge_step, wall_time=time.time(),
                                  session_log={"status": 1}))  # START: TensorBoard drops later-step events
            self._writers[logdir] = w
        return w

    def _add(self, summary, global_step, walltime, logdir=None):
        event = Event(summary=summary, wall_time=time.time() if walltime is None else walltime)
        if global_step is not None:
            event.step = int(global_step)
        self._writer(logdir or self.log_dir).add_event(event)

    def get_logdir(self):
        return self.log_dir

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        """One point of the curve tag."""
        self._add(Summary(value=[Summary.Value(tag=tag, simple_value=_scalar(scalar_value))]), global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Several curves on one chart: each tag goes to its own run, log_dir/main_tag_tag, as PyTorch's."""
        for tag, value in tag_scalar_dict.items():
            run = os.path.join(self.log_dir, f"{main_tag.replace('/', '_')}_{tag}")
            self._add(Summary(value=[Summary.Value(tag=main_tag, simple_value=_scalar(value))]), global_step,
                      walltime, run)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None):
        """A histogram of values ('tensorflow' buckets, or numpy's bins: a count or a method name)."""
        self._add(Summary(value=[Summary.Value(tag=tag, histo=_histogram(values, bins, max_bins))]), global_step,
                  walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """Markdown text under tag (TensorBoard's text plugin)."""
        metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
            plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
        tensor = TensorProto(dtype="DT_STRING", string_val=[str(text_string).encode("utf-8")],
                             tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
        self._add(Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata, tensor=tensor)]),
                  global_step, walltime)

    def add_image(self, *args, **kwargs):
        raise NotImplementedError("[SummaryWriter] add_image is not supported by rill's writer; log scalars, "
                                  "histograms or text, or save the image to a file")

    def add_graph(self, *args, **kwargs):
        raise NotImplementedError("[SummaryWriter] add_graph needs TorchScript, which rill does not have")

    def flush(self):
        for w in self._writers.values():
            w.flush()

    def close(self):
        for w in self._writers.values():
            w.flush()
            w.close()
        self._writers.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
