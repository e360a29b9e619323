#!/usr/bin/env python3
"""Trains examples/train_cnn's model with dagrad and with PyTorch, alternating the two, and
prints their training speed (images/s), its ratio and their test accuracy per thread count,
headed by the CPU it ran on.

  scripts/setup.sh --bench                       # once: Debian's python3-torch, numpy, OpenBLAS
  cmake --build build-release --target train_cnn
  bench/train_vs_pytorch/run.py --threads 1,2 --limit 9600 --epochs 1 --reps 3

This script needs only the standard library; the PyTorch side runs torch_cnn.py on --python
(Debian's /usr/bin/python3). Exit status: 0 done, 1 a run failed or something is missing.
"""
import argparse
import datetime
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD_DIRS = ("build-bench", "build-release", "build")
ISA_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile")
EPOCH_LINE = re.compile(r"^epoch (\d+)/(\d+): .*test accuracy ([\d.]+)\s+\((\d+) images/s, [\d.]+ s\)$", re.M)

# What the PyTorch side runs on: versions, oneDNN, the ISA its own kernels use, the BLAS loaded.
TORCH_PROBE = r"""
import json, platform, re, torch
torch.ones(2, 2) @ torch.ones(2, 2)  # loads the BLAS
config = torch.__config__.show()
blas = sorted({'/'.join(l.split()[-1].split('/')[-2:]) for l in open('/proc/self/maps') if re.search(r'blas|blis|mkl_rt', l)})
print(json.dumps({'version': torch.__version__, 'python': platform.python_version(), 'mkldnn': torch.backends.mkldnn.is_available(),
  'onednn': (re.findall(r'MKL-DNN (v[\d.]+)', config) or ['?'])[0],
  'capability': (re.findall(r'CPU capability usage: (\S+)', config) or ['?'])[0], 'blas': blas}))
"""


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


def find_train_cnn(path):
    if path:
        if not os.access(path, os.X_OK):
            fail(f"{path}: no such executable")
        return path
    for d in BUILD_DIRS:
        candidate = os.path.join(ROOT, d, "examples", "train_cnn")
        if os.access(candidate, os.X_OK):
            return candidate
    fail(f"no train_cnn in {', '.join(d + '/examples' for d in BUILD_DIRS)}; build it with\n"
         "  cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release && cmake --build build-release --target train_cnn\n"
         "or pass --train-cnn PATH")


def probe_torch(python):
    try:
        out = subprocess.run([python, "-c", TORCH_PROBE], capture_output=True, text=True, check=True).stdout
        return json.loads(out)
    except (OSError, subprocess.CalledProcessError, ValueError):
        fail(f"PyTorch is not importable by {python}; install Debian's python3-torch with\n"
             "  scripts/setup.sh --bench\n"
             "(it runs on the system /usr/bin/python3, not on a pyenv or venv python)")


def cpu_header():
    info = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())
    flags = set(info.get("flags", "").split())
    lscpu = {}
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            key, _, value = line.partition(":")
            lscpu[key.strip()] = value.strip()
    except OSError:
        pass
    # Virtual machines often show a generic brand string ("AMD EPYC"): family/model/stepping
    # still tell the generation (family 25 = Zen 3/4, 26 = Zen 5; 6 = Intel).
    lines = [
        f"CPU: {info.get('model name', '?')}  (vendor {info.get('vendor_id', '?')}, family {info.get('cpu family', '?')}"
        f", model {info.get('model', '?')}, stepping {info.get('stepping', '?')})",
        f"     {os.cpu_count()} logical CPUs, {lscpu.get('Thread(s) per core', '?')} thread(s) per core"
        + (f", hypervisor {lscpu['Hypervisor vendor']}" if "Hypervisor vendor" in lscpu else "")
        + f"; ISA: " + " ".join(f + ("+" if f in flags else "-") for f in ISA_FLAGS),
    ]
    return lines


def load_note():
    # The load average lags by minutes; one second of /proc/stat says what runs now.
    busy = busy_seconds()
    time.sleep(1)
    share = (busy_seconds() - busy) / os.cpu_count()
    note = f"other processes took {100 * share:.0f}% of the CPUs in the second before measuring"
    return note + ("  -- the numbers will be noisy" if share > 0.05 else "")


def busy_seconds():
    """CPU seconds all CPUs spent outside idle and iowait (steal, the hypervisor's, counts)."""
    ticks = [int(v) for v in open("/proc/stat").readline().split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def children_seconds():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_one(cmd, env=None):
    """(images/s, test accuracy, share of the CPUs that other processes took during the run)."""
    busy, ours, start = busy_seconds(), children_seconds(), time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    others = (busy_seconds() - busy) - (children_seconds() - ours)
    others = max(0.0, others) / ((time.monotonic() - start) * os.cpu_count())
    epochs = EPOCH_LINE.findall(r.stdout)
    if r.returncode != 0 or not epochs:
        sys.stderr.write(r.stdout + r.stderr)
        fail(f"run failed (status {r.returncode}): {' '.join(cmd)}")
    # Every epoch trains on the same images, so the whole run's rate is the harmonic mean.
    rate = len(epochs) / sum(1.0 / float(e[3]) for e in epochs)
    return rate, float(epochs[-1][2]), others


def spread(values, fmt):
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else (fmt + "-" + fmt).format(lo, hi)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--limit", type=int, default=9600, help="training images (default 9600)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3, help="runs of each framework per thread count")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--train-cnn", help=f"dagrad's trainer (default: examples/train_cnn in the first of "
                    f"{', '.join(BUILD_DIRS)})")
    ap.add_argument("--python", default="/usr/bin/python3", help="the python that imports torch")
    ap.add_argument("--precision", choices=("float32", "bfloat16"), default="float32",
                    help="dagrad's --precision (PyTorch trains in float32 either way)")
    ap.add_argument("--channels-last", action="store_true", help="PyTorch in NHWC memory format (default NCHW)")
    ap.add_argument("--torch-init", choices=("dagrad", "torch"), default="dagrad",
                    help="dagrad: both start from dagrad's weights and batch order (default)")
    o = ap.parse_args()
    try:
        threads = [int(t) for t in o.threads.split(",")]
    except ValueError:
        fail(f"--threads: expected numbers like 1,2, got '{o.threads}'")
    if min(threads) < 1 or o.reps < 1 or o.epochs < 1 or o.limit < 0:
        fail("--threads, --reps and --epochs must be positive, --limit non-negative")

    train_cnn = find_train_cnn(o.train_cnn)
    torch_info = probe_torch(o.python)
    common = ["--epochs", str(o.epochs), "--limit", str(o.limit), "--seed", str(o.seed), "--batch-size", "32"]
    torch_cmd = [o.python, os.path.join(HERE, "torch_cnn.py"), *common, "--init", o.torch_init]
    if o.channels_last:
        torch_cmd.append("--channels-last")

    built = datetime.datetime.fromtimestamp(os.path.getmtime(train_cnn), datetime.timezone.utc)
    print(f"dagrad vs PyTorch, train_cnn's CNN (batch 32, Adam lr 1e-3), {o.limit or 60000} training images, "
          f"{o.epochs} epoch(s), {o.reps} rep(s), {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    for line in cpu_header():
        print(line)
    print(f"dagrad:  {train_cnn} (built {built:%Y-%m-%d %H:%M} UTC), --precision {o.precision}")
    print(f"PyTorch: {torch_info['version']} on {o.python} (Python {torch_info['python']}), oneDNN {torch_info['onednn']} (available: {torch_info['mkldnn']}), ATen CPU capability "
          f"{torch_info['capability']}, BLAS {', '.join(torch_info['blas']) or 'none loaded'}; "
          f"{'channels_last' if o.channels_last else 'NCHW'}, init {o.torch_init}")
    print(load_note())
    print("images/s: the training loop only (batch assembly included, evaluation excluded); "
          "ratio = dagrad / PyTorch, per rep", flush=True)

    rows = []
    for t in threads:
        # OpenMP and OpenBLAS read these when PyTorch loads them; set_num_threads sets the rest.
        env = dict(os.environ, OMP_NUM_THREADS=str(t), OPENBLAS_NUM_THREADS=str(t))
        dagrad, torch_, dagrad_acc, torch_acc, others = [], [], [], [], []
        for rep in range(o.reps):
            rate, acc, busy = run_one([train_cnn, *common, "--threads", str(t), "--plot", "", "--precision", o.precision])
            dagrad.append(rate)
            dagrad_acc.append(acc)
            others.append(busy)
            rate, acc, busy = run_one([*torch_cmd, "--threads", str(t)], env)
            torch_.append(rate)
            torch_acc.append(acc)
            others.append(busy)
            print(f"  {t} thread(s), rep {rep + 1}/{o.reps}: dagrad {dagrad[-1]:.0f} images/s (test accuracy "
                  f"{dagrad_acc[-1]:.4f}), PyTorch {torch_[-1]:.0f} images/s (test accuracy {torch_acc[-1]:.4f}); "
                  f"other processes took {100 * others[-2]:.0f}% / {100 * others[-1]:.0f}% of the CPUs", flush=True)
        rows.append((t, dagrad, torch_, [d / p for d, p in zip(dagrad, torch_)], dagrad_acc, torch_acc, others))

    head = ("threads", "dagrad images/s", "PyTorch images/s", "ratio median (min-max)", "dagrad acc", "PyTorch acc",
            "others")
    table = [head]
    for t, dagrad, torch_, ratios, dagrad_acc, torch_acc, others in rows:
        table.append((str(t), " ".join(f"{r:.0f}" for r in dagrad), " ".join(f"{r:.0f}" for r in torch_),
                      f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})",
                      spread(dagrad_acc, "{:.4f}"), spread(torch_acc, "{:.4f}"), f"{100 * max(others):.0f}%"))
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    print()
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    worst = max(max(r[-1]) for r in rows)
    print(f"others: the largest share of the CPUs that other processes took during a run"
          + (" -- above 5%: the runs competed for the cores; measure again on an idle machine" if worst > 0.05 else ""))


if __name__ == "__main__":
    main()
