#!/usr/bin/python3
"""PyTorch CPU inference: one process of the runner's py/torch-2proc. A randomly
initialised TransformerEncoder (torch.manual_seed, so every run computes the same)
does forward passes on ATen's intra-op threads, which Debian's torch runs on OpenMP
(libgomp); libtorch also links oneTBB. Prints the steady time and an output checksum."""
import argparse

import torch

from bench_common import run_timed, threads


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--passes", type=int, default=10)
    args = ap.parse_args()
    # Debian's torch 1.13 starts with one intra-op thread whatever OMP_NUM_THREADS says.
    torch.set_num_threads(threads())
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=args.d_model, nhead=8,
                                             dim_feedforward=4 * args.d_model,
                                             batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=args.layers).eval()
    x = torch.randn(args.batch, args.tokens, args.d_model)

    def infer():
        with torch.no_grad():
            total = sum(float(model(x).abs().sum()) for _ in range(args.passes))
        return f"{total:.9e}"

    with torch.no_grad():
        model(x)  # warm-up (allocations, oneDNN primitives): set-up, not steady
    run_timed(infer)


if __name__ == "__main__":
    main()
