#!/usr/bin/env python3
"""dptrain's DP-SGD and non-private steps against PyTorch's non-private step, in one run.

Rounds are interleaved (dptrain, torch, dptrain, torch, ...) so that the load of a shared
machine hits both alike; the table gives medians over rounds, their ratios and the load
average before and after. Opacus is not in Debian, so the private PyTorch step is not
measured: the comparison is dptrain's private step against torch's non-private one.

    python3 benchmarks/torch_compare.py --dptrain bin/dptrain --model cnn --batch 256

Without PyTorch (Debian: apt-get install python3-torch) the torch column says so and only
dptrain is timed.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def torch_model(name, torch):
    nn = torch.nn
    if name == "cnn":  # cnn-tramer-boneh (Tramèr & Boneh 2021, Table 9), as models/spec.go
        return nn.Sequential(
            nn.Conv2d(1, 16, 8, stride=2, padding=3), nn.Tanh(), nn.MaxPool2d(2, 1),
            nn.Conv2d(16, 32, 4, stride=2), nn.Tanh(), nn.MaxPool2d(2, 1),
            nn.Flatten(), nn.Linear(32 * 4 * 4, 32), nn.Tanh(), nn.Linear(32, 10)), (1, 28, 28)
    if name == "mlp":  # 784-512-10 ReLU, as dptrain bench's mlp
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10)), (784,)
    raise SystemExit(f"--model {name!r}: want cnn or mlp")


class TorchStep:
    """One non-private SGD step (forward, summed cross-entropy, backward, update)."""

    def __init__(self, torch, name, batch):
        torch.manual_seed(1)
        self.torch = torch
        self.model, shape = torch_model(name, torch)
        self.x = torch.randn(batch, *shape)
        self.y = torch.randint(0, 10, (batch,))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=1e-3)
        self.loss = torch.nn.CrossEntropyLoss(reduction="sum")

    def step(self):
        start = time.perf_counter()
        self.opt.zero_grad(set_to_none=True)
        self.loss(self.model(self.x), self.y).backward()
        self.opt.step()
        return (time.perf_counter() - start) * 1000

    def median(self, steps, threads):
        self.torch.set_num_threads(threads)
        return statistics.median(self.step() for _ in range(steps))


def dptrain_round(binary, model, batch, steps):
    out = subprocess.run([binary, "bench", "throughput", "--model", model, "--batch", str(batch),
                          "--steps", str(steps), "--json", "--no-memory"],
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return r["sgd_ms_per_step"], r["dpsgd_ms_per_step"], r["blas"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dptrain", default="bin/dptrain", help="the dptrain binary")
    ap.add_argument("--model", action="append", help="cnn or mlp (repeatable; default: cnn and mlp)")
    ap.add_argument("--batch", type=int, action="append", help="batch size (repeatable; default 256)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds per model and batch")
    ap.add_argument("--steps", type=int, default=10, help="timed steps per round and kind")
    ap.add_argument("--threads", type=int, action="append",
                    help="torch threads (repeatable; default 1 and the number of CPUs: the faster is reported, "
                         "since on a loaded machine torch's spinning OpenMP workers can make 2 threads 10x slower than 1)")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
        print("torch_compare: PyTorch not found (Debian: apt-get install python3-torch): "
              "timing dptrain only", file=sys.stderr)

    rows = []
    for model in args.model or ["cnn", "mlp"]:
        for batch in args.batch or [256]:
            load0 = os.getloadavg()[0]
            ts = TorchStep(torch, model, batch) if torch else None
            threads = args.threads or sorted({1, os.cpu_count()})
            if ts:
                for th in threads:
                    ts.median(3, th)  # warm-up
            plain, dp, blas = [], [], ""
            tp = {th: [] for th in threads}
            for _ in range(args.rounds):
                s, d, blas = dptrain_round(args.dptrain, model, batch, args.steps)
                plain.append(s)
                dp.append(d)
                if ts:
                    for th in threads:
                        tp[th].append(ts.median(args.steps, th))
            best = min(threads, key=lambda th: statistics.median(tp[th])) if ts else None
            rows.append((model, batch, blas, statistics.median(plain), statistics.median(dp),
                         statistics.median(tp[best]) if ts else None, best,
                         load0, os.getloadavg()[0]))

    ver = f"torch {torch.__version__} (threads: the faster setting)" if torch else "torch absent"
    print(f"medians of {args.rounds} interleaved rounds of {args.steps} steps; {ver}; Opacus not measured (not in Debian)")
    print(f"{'model':5} {'batch':>5} {'blas':8} {'torch plain':>11} {'dptrain plain':>13} {'dptrain DP':>10} "
          f"{'DP/plain':>8} {'DP/torch':>8} {'load 1m':>13}")
    for model, batch, blas, s, d, t, th, l0, l1 in rows:
        tcol = f"{t:6.2f} ms/{th}t" if t is not None else "     (none)"
        rcol = f"{d / t:8.2f}" if t is not None else "       -"
        print(f"{model:5} {batch:5d} {blas:8} {tcol:>11} {s:10.2f} ms {d:7.2f} ms {d / s:8.2f} {rcol} "
              f"{l0:5.2f}→{l1:5.2f}")


if __name__ == "__main__":
    main()
