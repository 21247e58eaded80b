"""float32 products through numpy (whatever BLAS it loads), for
bench/kernels, which alternates them with its own measurements.

Protocol: the first line printed is a JSON object naming the BLAS library
loaded and OpenBLAS's core name; then each line read from stdin, a JSON
object {"m", "n", "k", "trans_a" (optional, false), "trans_b", "seconds"},
is answered by a line {"gflops": ..., "best_gflops": ...}: the product
op(A)·op(B) (op(A) m×k, stored k×m when trans_a) repeated for that
long after one warm-up, its rate over all the calls and over the fastest.
"""
import ctypes
import json
import sys
import time

import numpy as np


def loaded_blas():
    """The BLAS library this process loaded, and OpenBLAS's core name."""
    path = ""
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 6:
                continue
            base = fields[-1].rsplit("/", 1)[-1]
            if base.startswith(("libblas.so", "libopenblas")):
                path = fields[-1]
                break
    core = ""
    if path:
        try:
            fn = ctypes.CDLL(path).openblas_get_corename
            fn.restype = ctypes.c_char_p
            core = fn().decode()
        except (AttributeError, OSError):
            core = ""
    return path, core


def main():
    path, core = loaded_blas()
    print(json.dumps({"blas": path, "corename": core, "numpy": np.__version__}), flush=True)
    rng = np.random.default_rng(1)
    cache = {}
    for line in sys.stdin:
        s = json.loads(line)
        m, n, k, trans_b = s["m"], s["n"], s["k"], s["trans_b"]
        trans_a = s.get("trans_a", False)
        key = (m, n, k, trans_a, trans_b)
        if key not in cache:
            a = rng.standard_normal((k, m) if trans_a else (m, k), dtype=np.float32)
            b = rng.standard_normal((n, k) if trans_b else (k, n), dtype=np.float32)
            cache[key] = (a.T if trans_a else a, b.T if trans_b else b, np.empty((m, n), dtype=np.float32))
        op_a, op_b, c = cache[key]
        np.matmul(op_a, op_b, out=c)
        iters, start = 0, time.perf_counter()
        last, best = start, float("inf")
        while True:
            np.matmul(op_a, op_b, out=c)
            iters += 1
            now = time.perf_counter()
            best, last = min(best, now - last), now
            el = now - start
            if el >= s["seconds"]:
                break
        flops = 2.0 * m * n * k
        print(json.dumps({"gflops": flops * iters / el / 1e9, "best_gflops": flops / best / 1e9}), flush=True)


main()
