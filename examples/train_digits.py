#!/usr/bin/env python3
"""Train an MLP and a small CNN on scikit-learn's bundled digits (8x8 images, no download) with rill.

    python3 examples/train_digits.py                    # rill
    python3 examples/train_digits.py --framework torch  # the same code on PyTorch
    python3 examples/train_digits.py --strict           # under rill's strict dtype mode (a no-op on PyTorch)
    python3 examples/train_digits.py --dtype bfloat16 --models mlp   # the MLP trained in bfloat16
    python3 examples/train_digits.py --graph            # each step compiled once by rill.nn.Graph

A held-out test split, a tqdm progress bar, test accuracy per epoch (bars: MLP >= 95%, CNN >= 97%), the model
saved with save() and reloaded to re-check its accuracy, and a PNG plot of loss and accuracy per epoch under
--out (default runs/). Everything below is plain PyTorch code: `torch` is rill unless --framework torch (or
the FRAMEWORK line) says otherwise.
"""
import argparse
import contextlib
import importlib
import json
import os
import sys
import time

import numpy as np

FRAMEWORK = "rill"  # the one line to change: "torch" runs this script on PyTorch (or pass --framework torch)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--framework", default=FRAMEWORK, choices=["rill", "torch"])
    p.add_argument("--out", default="runs", help="folder for the checkpoints, the plot and metrics.json")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=int, default=20, help="MLP epochs")
    p.add_argument("--cnn-epochs", type=int, default=25)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--models", default="mlp,cnn", help="comma-separated: mlp, cnn")
    p.add_argument("--no-progress", action="store_true", help="no tqdm bar (logs one line per epoch)")
    p.add_argument("--graph", action="store_true",
                   help="train in graph mode: each step (forward, backward, Adam) traced once into a rill.nn.Graph, "
                        "compiled to a plan and run by the actor runtime")
    p.add_argument("--strict", action="store_true",
                   help="run under rill's strict dtype mode: every dtype conversion below is written explicitly "
                        "(PyTorch has no such mode: there the flag changes nothing)")
    # float16 is not offered: Adam's eps (1e-8) and small squared gradients underflow in it (in PyTorch too),
    # which needs loss scaling; bfloat16 has float32's range.
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"],
                   help="dtype of the parameters and inputs (bfloat16: models mlp; the CNN's convolutions are "
                        "float32/float64 in rill)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch = importlib.import_module(args.framework)
    # Strict dtype mode for this thread, restored on return (PyTorch has no such mode).
    strict = torch.strict_dtype() if args.strict and hasattr(torch, "strict_dtype") else contextlib.nullcontext()
    with strict:
        return run(args)


def run(args):
    torch = importlib.import_module(args.framework)
    nn = torch.nn
    data = importlib.import_module(args.framework + ".utils.data")
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from tqdm import tqdm

    if args.graph and args.framework != "rill":
        raise SystemExit("--graph is rill's graph mode (rill.nn.Graph): use it with --framework rill")
    dtype = getattr(torch, args.dtype)
    torch.manual_seed(args.seed)
    device = torch.device("cpu")
    os.makedirs(args.out, exist_ok=True)

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=args.seed, stratify=y)
    # Explicit conversions: images to the model's dtype, labels to int64 class indices.
    train_set = data.TensorDataset(torch.tensor(x_train).to(dtype), torch.tensor(y_train).long())
    x_test_t, y_test_t = torch.tensor(x_test).to(device, dtype), torch.tensor(y_test).long().to(device)
    print(f"[{args.framework}] digits: {len(train_set)} train / {len(y_test)} test images of 8x8")

    def build(name):
        if name == "mlp":
            return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
        return nn.Sequential(
            nn.Unflatten(1, (1, 8, 8)),
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 2 * 2, 64), nn.ReLU(), nn.Linear(64, 10))

    criterion = nn.CrossEntropyLoss()

    def evaluate(model):
        model.eval()
        with torch.no_grad():
            logits = model(x_test_t)
            loss = criterion(logits, y_test_t).item()
            acc = (logits.argmax(dim=1) == y_test_t).float().mean().item()
        model.train()
        return loss, acc

    def train(name, epochs, lr):
        torch.manual_seed(args.seed)
        model = build(name).to(device, dtype)
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
        step = None
        if args.graph:
            class TrainStep(nn.Graph):
                def __init__(self):
                    super().__init__()
                    self.model, self.criterion = model, criterion
                    self.add_optimizer(optimizer)  # the learning rate is read from the optimizer at each call

                def build(self, xb, yb):
                    loss = self.criterion(self.model(xb), yb)
                    loss.backward()
                    return loss
            step = TrainStep()
        loader = data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                                 generator=torch.Generator().manual_seed(args.seed))
        history = {"train_loss": [], "test_loss": [], "test_acc": []}
        mode = " graph" if args.graph else ""
        bar = tqdm(range(epochs), desc=f"{name} ({args.framework}{mode})", disable=args.no_progress, unit="epoch")
        for epoch in bar:
            total, batches = 0.0, 0
            for xb, yb in loader:
                xb, yb = xb.to(device), yb.to(device)
                if step is not None:
                    loss = step(xb, yb)
                else:
                    optimizer.zero_grad()
                    loss = criterion(model(xb), yb)
                    loss.backward()
                    optimizer.step()
                total += loss.item()
                batches += 1
            scheduler.step()
            test_loss, test_acc = evaluate(model)
            history["train_loss"].append(total / batches)
            history["test_loss"].append(test_loss)
            history["test_acc"].append(test_acc)
            bar.set_postfix(loss=f"{total / batches:.4f}", test_acc=f"{test_acc:.4f}")
            if args.no_progress:
                print(f"  {name} epoch {epoch + 1}/{epochs}: train loss {total / batches:.4f}, "
                      f"test loss {test_loss:.4f}, test accuracy {test_acc:.4f}")
        bar.close()
        return model, history

    bars = {"mlp": 0.95 if args.dtype == "float32" else 0.93, "cnn": 0.97}
    epochs = {"mlp": args.epochs, "cnn": args.cnn_epochs}
    lrs = {"mlp": 2e-3, "cnn": 3e-3}
    results, histories, ok = {}, {}, True
    for name in [m.strip() for m in args.models.split(",") if m.strip()]:
        start = time.perf_counter()
        model, history = train(name, epochs[name], lrs[name])
        seconds = time.perf_counter() - start
        acc = history["test_acc"][-1]
        tag = args.framework + ("_graph" if args.graph else "")
        path = os.path.join(args.out, f"digits_{name}_{tag}.pt")
        torch.save(model.state_dict(), path)
        reloaded = build(name).to(dtype)
        reloaded.load_state_dict(torch.load(path))
        reloaded_acc = evaluate(reloaded)[1]
        passed = acc >= bars[name] and reloaded_acc == acc
        ok &= passed
        print(f"{name}: test accuracy {acc:.4f} (bar {bars[name]:.2f}) in {seconds:.1f} s; saved to {path}, "
              f"reloaded accuracy {reloaded_acc:.4f} -> {'PASS' if passed else 'FAIL'}")
        results[name] = {"test_accuracy": acc, "reloaded_accuracy": reloaded_acc, "seconds": seconds,
                         "bar": bars[name], "passed": passed}
        histories[name] = history

    tag = args.framework + ("_graph" if args.graph else "")
    with open(os.path.join(args.out, f"metrics_{tag}.json"), "w") as f:
        json.dump({"framework": args.framework, "graph": args.graph, "dtype": args.dtype, "strict": args.strict,
                   "results": results, "history": histories}, f, indent=1)
    if histories:
        plot_path = os.path.join(args.out, f"digits_{tag}.png")
        plot(histories, plot_path, args.framework)
        print(f"plot: {plot_path}")
    return 0 if ok else 1


def plot(histories, path, framework):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    for name, h in histories.items():
        epochs = range(1, len(h["train_loss"]) + 1)
        ax_loss.plot(epochs, h["train_loss"], label=f"{name} train")
        ax_loss.plot(epochs, h["test_loss"], "--", label=f"{name} test")
        ax_acc.plot(epochs, h["test_acc"], label=f"{name} test")
    ax_loss.set(title=f"loss ({framework})", xlabel="epoch", ylabel="cross-entropy")
    ax_loss.set_yscale("log")
    ax_acc.set(title=f"test accuracy ({framework})", xlabel="epoch", ylabel="accuracy")
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
