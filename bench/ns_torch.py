#!/usr/bin/env python3
"""PyTorch CPU reference timing for Newton-Schulz "quintic" orthogonalisation (fp32).

For each m x n shape: transpose so rows <= cols, X <- X / (||X||_F + 1e-7), then
5 times: A = X X^T; B = b A + c A A; X = a X + B X, with (a, b, c) =
(3.4445, -4.7750, 2.0315); transpose back. One warm-up call, then --reps timed
calls (time.perf_counter); reports median / min ms and GFLOP/s at the median.

FLOPs per NS call (m <= n), counted as plain GEMMs like the C/OpenCL tool:
5 * (4*m*m*n + 2*m**3)  -- X X^T (2m^2 n) + A A (2m^3) + B X (2m^2 n).
"""
import argparse
import statistics
import sys
import time

A_COEF, B_COEF, C_COEF = 3.4445, -4.7750, 2.0315
STEPS = 5
DEFAULT_SHAPES = "256x768,1024x1024,1024x3072"


def die(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def parse_shapes(text):
    shapes = []
    for item in text.split(","):
        parts = item.strip().lower().split("x")
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            die(f"bad --shape entry {item!r} (expected RxC, e.g. 1024x3072)")
        r, c = int(parts[0]), int(parts[1])
        if r <= 0 or c <= 0:
            die(f"bad --shape entry {item!r} (dimensions must be positive)")
        shapes.append((r, c))
    return shapes


def ns_flops(r, c):
    m, n = min(r, c), max(r, c)
    return STEPS * (4 * m * m * n + 2 * m ** 3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default=DEFAULT_SHAPES, help="comma-separated RxC list")
    ap.add_argument("--reps", type=int, default=5, help="timed calls per shape")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    args = ap.parse_args()
    shapes = parse_shapes(args.shape)
    if args.reps < 1:
        die("--reps must be >= 1")
    if args.threads is not None and args.threads < 1:
        die("--threads must be >= 1")
    try:
        import torch
    except ImportError:
        die("python3-torch is not installed (Debian: apt-get install python3-torch)")

    def newton_schulz(g):
        x = g.mT if g.shape[0] > g.shape[1] else g
        x = x / (torch.linalg.norm(x) + 1e-7)
        for _ in range(STEPS):
            a = torch.mm(x, x.mT)
            b = B_COEF * a + C_COEF * torch.mm(a, a)
            x = A_COEF * x + torch.mm(b, x)
        return x.mT if g.shape[0] > g.shape[1] else x

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, CPU threads {torch.get_num_threads()}, fp32, "
          f"{STEPS} NS steps, {args.reps} reps\n")
    print("| shape | NS median (ms) | NS min (ms) | GFLOP/s (median) |")
    print("|---|---:|---:|---:|")
    with torch.inference_mode():
        for r, c in shapes:
            g = torch.randn(r, c, dtype=torch.float32)
            newton_schulz(g)  # warm-up
            times = []
            for _ in range(args.reps):
                t0 = time.perf_counter()
                newton_schulz(g)
                times.append(time.perf_counter() - t0)
            med = statistics.median(times)
            print(f"| {r}x{c} | {med * 1e3:.2f} | {min(times) * 1e3:.2f} | "
                  f"{ns_flops(r, c) / med / 1e9:.1f} |")


if __name__ == "__main__":
    main()
