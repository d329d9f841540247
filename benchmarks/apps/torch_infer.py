#!/usr/bin/python3
"""PyTorch inference (Debian's python3-torch, unmodified): a small transformer
encoder, seeded, in eval mode.

    torch_infer.py [--threads N] [--batches B] [--batch S] [--seq L] [--width D]

Without --threads (or with --threads 0) PyTorch keeps its default intra-op
thread count; --threads N calls torch.set_num_threads(N). The model is two
nn.TransformerEncoderLayer of width D (4 heads, feed-forward 4D), weights
from torch.manual_seed(0); it runs B batches of S sequences of length L
under torch.inference_mode(), after one warm-up batch.

steady_seconds: the B timed batches.
result: the sum of |output| over all batches, to 6 significant digits (the
thread count changes how PyTorch splits its sums, so the last bits may differ).
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import appcommon as ac  # noqa: E402

NAME = "torch_infer"


def main():
    ap = argparse.ArgumentParser(prog=NAME, description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=0,
                    help="torch.set_num_threads(N); 0 (default): PyTorch's default")
    ap.add_argument("--batches", type=int, default=24, help="timed batches (default 24)")
    ap.add_argument("--batch", type=int, default=8, help="sequences per batch (default 8)")
    ap.add_argument("--seq", type=int, default=128, help="sequence length (default 128)")
    ap.add_argument("--width", type=int, default=256, help="model width (default 256)")
    a = ap.parse_args()
    if a.threads < 0 or min(a.batches, a.batch, a.seq) < 1 or a.width < 4 or a.width % 4:
        ac.fail(NAME, "--threads must be >= 0, the sizes positive, --width a multiple of 4")
    try:
        import torch
    except ImportError as e:
        ac.fail(NAME, f"{e} (install: apt-get install -y python3-torch)")
    default_threads = torch.get_num_threads()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(a.width, 4, dim_feedforward=4 * a.width,
                                             dropout=0.0, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
    gen = torch.Generator().manual_seed(1)
    inputs = [torch.randn(a.batch, a.seq, a.width, generator=gen) for _ in range(a.batches)]
    total = 0.0
    try:
        with torch.inference_mode():
            model(inputs[0])
            t0 = time.perf_counter()
            for x in inputs:
                total += float(model(x).abs().sum(dtype=torch.float64))
            steady = time.perf_counter() - t0
    except RuntimeError as e:
        ac.fail(NAME, f"inference failed: {e}")
    ac.report(steady, ac.rounded(total, 6),
              app=f"torch {torch.__version__}, 2 encoder layers width {a.width}, "
                  f"{a.batches} batches of {a.batch}x{a.seq}",
              torch_default_threads=default_threads, torch_threads=torch.get_num_threads())


if __name__ == "__main__":
    main()
