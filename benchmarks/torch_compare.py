#!/usr/bin/env python3
"""dptrain's DP-SGD and non-private steps against PyTorch (and Opacus, when importable), in one run.

Rounds are interleaved (dptrain, torch, Opacus, dptrain, ...) so that the load of a shared
machine hits all alike; the table gives medians over rounds, their ratios and the load average
before and after. For each --cores count c, dptrain runs with GOMAXPROCS=c pinned to the first c
CPUs (taskset), and torch with c threads pinned the same way (sched_setaffinity).

    python3 benchmarks/torch_compare.py --dptrain bin/dptrain --model cnn --batch 256 --cores 1 --cores 2

--baseline OTHER_BINARY times a second dptrain build in the same interleaved rounds (before and
after a change, say) and adds its DP step and the ratio of the two.

Models: cnn (cnn-tramer-boneh), mlp (784-512-10) and resnet20-gn (ResNet-20 with GroupNorm, as
models/spec.go). Without PyTorch (Debian: apt-get install python3-torch) the torch columns say so
and only dptrain is timed. Opacus is not in Debian; it is pure Python, so a copy of its source
on PYTHONPATH is enough: its columns then time its private step with per-sample hooks
(grad_sample_mode "hooks") and, where the version has it, ghost clipping ("ghost").

--memory adds a table of peak resident memory per shape: each side runs a few steps of one kind
in a fresh process of its own (dptrain's DP and plain steps through `dptrain bench throughput`,
torch's plain step in a child of this script) and reports that process's peak RSS, the
interpreter and libraries included.
"""

import argparse
import json
import os
import resource
import shutil
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
    if name == "resnet20-gn":  # He et al. 2016 ResNet-20 with GroupNorm(4), as models/spec.go
        class Block(nn.Module):
            def __init__(self, cin, cout, stride):
                super().__init__()
                self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
                self.g1 = nn.GroupNorm(4, cout)
                self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
                self.g2 = nn.GroupNorm(4, cout)
                self.proj = None
                if stride != 1 or cin != cout:
                    self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.GroupNorm(4, cout))

            def forward(self, x):
                h = torch.relu(self.g1(self.c1(x)))
                h = self.g2(self.c2(h))
                return torch.relu(h + (self.proj(x) if self.proj is not None else x))

        layers = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.GroupNorm(4, 16), nn.ReLU()]
        cin = 16
        for stage, ch in enumerate([16, 32, 64]):
            for blk in range(3):
                layers.append(Block(cin, ch, 2 if stage > 0 and blk == 0 else 1))
                cin = ch
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]
        return nn.Sequential(*layers), (3, 32, 32)
    raise SystemExit(f"--model {name!r}: want cnn, mlp or resnet20-gn")


class TorchStep:
    """One SGD step (forward, summed cross-entropy, backward, update): plain, or private with
    Opacus (per-sample clipping to 1 and noise σ = 1) in the given grad_sample_mode."""

    def __init__(self, torch, name, batch, opacus_mode=None):
        torch.manual_seed(1)
        self.torch = torch
        self.model, shape = torch_model(name, torch)
        self.x = torch.randn(batch, *shape)
        self.y = torch.randint(0, 10, (batch,))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=1e-3)
        self.loss = torch.nn.CrossEntropyLoss(reduction="sum")
        if opacus_mode:
            from opacus import PrivacyEngine
            data = torch.utils.data.TensorDataset(self.x, self.y)
            loader = torch.utils.data.DataLoader(data, batch_size=batch)
            kw = {"grad_sample_mode": opacus_mode} if opacus_mode != "hooks" else {}
            pe = PrivacyEngine()
            made = pe.make_private(module=self.model, optimizer=self.opt, data_loader=loader,
                                   noise_multiplier=1.0, max_grad_norm=1.0, poisson_sampling=False,
                                   criterion=self.loss, **kw)
            self.model, self.opt = made[0], made[1]
            if len(made) > 3:  # ghost clipping wraps the criterion
                self.loss = made[3]

    def step(self):
        start = time.perf_counter()
        self.opt.zero_grad(set_to_none=True)
        self.loss(self.model(self.x), self.y).backward()
        self.opt.step()
        return (time.perf_counter() - start) * 1000

    def median(self, steps, cores):
        self.torch.set_num_threads(cores)
        os.sched_setaffinity(0, set(range(cores)))
        try:
            return statistics.median(self.step() for _ in range(steps))
        finally:
            os.sched_setaffinity(0, set(range(os.cpu_count())))


def dptrain_round(binary, model, batch, steps, cores, engine="auto"):
    env = dict(os.environ, GOMAXPROCS=str(cores))
    cmd = [binary, "bench", "throughput", "--model", model, "--batch", str(batch),
           "--steps", str(steps), "--json", "--no-memory", "--engine", engine]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", f"0-{cores - 1}"] + cmd
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return r["sgd_ms_per_step"], r["dpsgd_ms_per_step"], f'{r["blas"]}/{r.get("blas_kernel", "?")}'


def peak_mb():
    """This process's peak RSS in MB: VmHWM where /proc has it, since Linux carries ru_maxrss
    across fork and exec (a child would report at least its parent's peak)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def dptrain_peak(binary, model, batch, engine="auto"):
    """Peak RSS in MB of dptrain's plain and DP steps, each in a process of its own."""
    cmd = [binary, "bench", "throughput", "--model", model, "--batch", str(batch),
           "--steps", "3", "--json", "--engine", engine]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return r["sgd_peak_rss_mb"], r["dpsgd_peak_rss_mb"]


def torch_peak(model, batch):
    """Peak RSS in MB of torch's plain step, in a child process of its own."""
    out = subprocess.run([sys.executable, __file__, "--torch-peak", f"{model}:{batch}"],
                         check=True, capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def opacus_version():
    try:
        import opacus
        return opacus.__version__
    except ImportError:
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--dptrain", default="bin/dptrain", help="the dptrain binary")
    ap.add_argument("--baseline", help="a second dptrain binary timed in the same rounds (its DP step and DP/baseline)")
    ap.add_argument("--engine", default="auto",
                    help="model.engine of --dptrain's steps: auto, direct, dnnl or graph (the baseline's is auto)")
    ap.add_argument("--model", action="append", help="cnn, mlp or resnet20-gn (repeatable; default: cnn and mlp)")
    ap.add_argument("--batch", type=int, action="append", help="batch size (repeatable; default 256)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds per model, batch and core count")
    ap.add_argument("--steps", type=int, default=10, help="timed steps per round and kind")
    ap.add_argument("--shape", action="append", metavar="MODEL:BATCH[:ROUNDS:STEPS]",
                    help="one model at one batch size (repeatable; instead of --model × --batch), "
                         "optionally with its own rounds and steps, so that one run prints a whole table")
    ap.add_argument("--cores", type=int, action="append",
                    help="cores given to each side (repeatable; default: all of them)")
    ap.add_argument("--memory", action="store_true",
                    help="also report each side's peak resident memory per shape (fresh processes)")
    ap.add_argument("--torch-peak", metavar="MODEL:BATCH", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_peak:  # the child of torch_peak: a few plain steps, then the peak RSS in MB
        import torch
        model, batch = args.torch_peak.split(":")
        st = TorchStep(torch, model, int(batch))
        for _ in range(3):
            st.step()
        print(peak_mb())
        return
    try:
        import torch
    except ImportError:
        torch = None
        print("torch_compare: PyTorch not found (Debian: apt-get install python3-torch): "
              "timing dptrain only", file=sys.stderr)
    ov = opacus_version() if torch else None
    modes = []
    if ov:
        modes = ["ghost", "hooks"] if tuple(int(p) for p in ov.split(".")[:2]) >= (1, 5) else ["hooks"]

    shapes = []
    for sh in args.shape or []:
        p = sh.split(":")
        if len(p) not in (2, 4):
            raise SystemExit(f"--shape {sh!r}: want MODEL:BATCH or MODEL:BATCH:ROUNDS:STEPS")
        shapes.append((p[0], int(p[1]), int(p[2]) if len(p) == 4 else args.rounds,
                       int(p[3]) if len(p) == 4 else args.steps))
    if not shapes:
        shapes = [(m, b, args.rounds, args.steps) for m in args.model or ["cnn", "mlp"] for b in args.batch or [256]]

    rows = []
    for model, batch, rounds, nsteps in shapes:
        for cores in args.cores or [os.cpu_count()]:
            load0 = os.getloadavg()[0]
            steps = {"torch": TorchStep(torch, model, batch)} if torch else {}
            for m in modes:
                try:
                    steps[m] = TorchStep(torch, model, batch, m)
                except Exception as e:  # an Opacus mode that cannot take this model
                    print(f"torch_compare: Opacus {m} on {model}: {e}", file=sys.stderr)
            for st in steps.values():
                st.median(2, cores)  # warm-up
            plain, dp, base = [], [], []
            times = {k: [] for k in steps}
            blas = ""
            for _ in range(rounds):
                s, d, blas = dptrain_round(args.dptrain, model, batch, nsteps, cores, args.engine)
                plain.append(s)
                dp.append(d)
                if args.baseline:
                    base.append(dptrain_round(args.baseline, model, batch, nsteps, cores)[1])
                for k, st in steps.items():
                    times[k].append(st.median(nsteps, cores))
            med = {k: statistics.median(v) for k, v in times.items()}
            rows.append((model, batch, cores, rounds, nsteps, blas, statistics.median(plain),
                         statistics.median(dp), med, load0, os.getloadavg()[0],
                         statistics.median(base) if base else None))

    ver = f"torch {torch.__version__}" if torch else "torch absent"
    ver += f", Opacus {ov}" if ov else ", Opacus absent"
    print(f"medians of interleaved rounds (ms per step); {ver}")
    print(f"dptrain: {args.dptrain}, engine {args.engine}")
    if args.baseline:
        print(f"baseline: {args.baseline}, engine auto")
    bh = f" {'baseline DP':>11} {'DP/baseline':>11}" if args.baseline else ""
    print(f"{'model':11} {'batch':>5} {'cores':>5} {'rounds×steps':>12} {'blas':16} {'dptrain DP':>10} {'dptrain plain':>13} "
          f"{'torch plain':>11} {'Opacus ghost':>12} {'Opacus hooks':>12} {'DP/torch':>8} {'best Opacus/DP':>14} {'load 1m':>13}{bh}")
    for model, batch, cores, rounds, nsteps, blas, s, d, med, l0, l1, b in rows:
        def col(k, w):
            return f"{med[k]:{w}.2f}" if k in med else f"{'-':>{w}}"
        op = [med[k] for k in ("ghost", "hooks") if k in med]
        r1 = f"{d / med['torch']:8.2f}" if "torch" in med else f"{'-':>8}"
        r2 = f"{min(op) / d:14.2f}" if op else f"{'-':>14}"
        print(f"{model:11} {batch:5d} {cores:5d} {f'{rounds}×{nsteps}':>12} {blas:16} {d:10.2f} {s:13.2f} {col('torch', 11)} "
              f"{col('ghost', 12)} {col('hooks', 12)} {r1} {r2} {l0:5.2f}→{l1:5.2f}"
              + (f" {b:11.2f} {d / b:11.3f}" if b else ""))

    if args.memory:
        print("\npeak resident memory (MB), each kind in a fresh process")
        print(f"{'model':11} {'batch':>5} {'dptrain DP':>10} {'dptrain plain':>13} {'torch plain':>11} {'DP/torch':>8}")
        for model, batch in dict.fromkeys((m, b) for m, b, _, _ in shapes):
            s_mb, d_mb = dptrain_peak(args.dptrain, model, batch, args.engine)
            t_mb = torch_peak(model, batch) if torch else None
            tc = f"{t_mb:11.1f}" if t_mb else f"{'-':>11}"
            rc = f"{d_mb / t_mb:8.2f}" if t_mb else f"{'-':>8}"
            print(f"{model:11} {batch:5d} {d_mb:10.1f} {s_mb:13.1f} {tc} {rc}")


if __name__ == "__main__":
    main()
