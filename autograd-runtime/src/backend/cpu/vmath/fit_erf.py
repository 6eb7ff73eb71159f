"""Fits the polynomials of the vector `erf` (`vmath/erf.rs`). Not part of the build; rerun after
changing the scheme and paste the printed tables:

    python3 fit_erf.py      # needs mpmath (pip install mpmath)

Scheme (a = |x|; the f32 tables the same with the clamp at 4 and f32 coefficients):
* a < 1: erf(a) = a + a P(a^2), P(s) ~ erf(sqrt s)/sqrt s - 1 (absolute error of P, which is
  the relative error of erf up to the factor 1/1.128).
* 1 <= a < 6: erfc(a) = e^(-a^2) R(t), t = (a - 3)/(a + 3) in [-1/2, 1/3], R(t) ~ erfcx(a)
  (relative error of R).

Each polynomial is a weighted least-squares fit at Chebyshev points, its coefficients rounded to
`f64` one at a time from the lowest degree up with the higher ones refitted after each rounding.
Printed with each table: the worst weighted error of the rounded polynomial on a dense grid (the
approximation error only, before the `f64` evaluation), in units of 2^-53.
"""

import struct

import mpmath as mp

mp.mp.prec = 256
POINTS = 80
K = mp.mpf(3)


def f64(x):
    return mp.mpf(float(x))


def f32(x):
    return mp.mpf(struct.unpack("f", struct.pack("f", float(x)))[0])


def chebyshev(lo, hi, n):
    return [(lo + hi) / 2 + (hi - lo) / 2 * mp.cos(mp.pi * (2 * i + 1) / (2 * n)) for i in range(n)]


def fit_rounded(func, weight, lo, hi, deg, rnd=f64):
    nodes = chebyshev(lo, hi, POINTS)
    vals = [func(u) for u in nodes]
    fixed = []
    for j in range(deg + 1):
        n = deg + 1 - j
        a = mp.matrix(POINTS, n)
        b = mp.matrix(POINTS, 1)
        for r, u in enumerate(nodes):
            w = weight(u)
            b[r] = w * (vals[r] - sum(fixed[i] * u**i for i in range(j)))
            for m in range(n):
                a[r, m] = w * u ** (j + m)
        q = mp.lu_solve(a.T * a, a.T * b)
        fixed.append(rnd(q[0]))
    return fixed


def horner(cs, u):
    acc = mp.mpf(0)
    for c in reversed(cs):
        acc = acc * u + c
    return acc


def worst(cs, func, weight, lo, hi, n=2000):
    w = 0
    for i in range(n + 1):
        u = lo + (hi - lo) * i / n
        w = max(w, abs(weight(u) * (horner(cs, u) - func(u))))
    return w


def p_small(s):
    if s == 0:
        return 2 / mp.sqrt(mp.pi) - 1
    r = mp.sqrt(s)
    return mp.erf(r) / r - 1


def r_large(t):
    a = K * (1 + t) / (1 - t)
    return mp.erfc(a) * mp.exp(a * a)


def show(name, cs, err, bits=53, ty="f64"):
    print(f"// {name}: worst error {float(err / mp.mpf(2) ** -bits):.3f} x 2^-{bits}")
    print(f"const {name}: [{ty}; {len(cs)}] = [")
    for c in cs:
        print(f"    {float(c)!r},")
    print("];")


def main():
    margin = mp.mpf(2) ** -20
    cs = fit_rounded(p_small, lambda s: 1, 0, 1 + margin, 11)
    show("ERF_P", cs, worst(cs, p_small, lambda s: 1, 0, 1 + margin))
    lo, hi = (1 - K) / (1 + K) - margin, (6 - K) / (6 + K) + margin
    cs = fit_rounded(r_large, lambda t: 1 / r_large(t), lo, hi, 14)
    show("ERFC_R", cs, worst(cs, r_large, lambda t: 1 / r_large(t), lo, hi))
    # The f32 lanes: coefficients rounded to f32, degrees 6 and 8, the argument clamped at 4.
    cs = fit_rounded(p_small, lambda s: 1, 0, 1 + margin, 6, rnd=f32)
    show("ERF_P32", cs, worst(cs, p_small, lambda s: 1, 0, 1 + margin), 24, "f32")
    lo, hi = (1 - K) / (1 + K) - margin, (4 - K) / (4 + K) + margin
    cs = fit_rounded(r_large, lambda t: 1 / r_large(t), lo, hi, 8, rnd=f32)
    show("ERFC_R32", cs, worst(cs, r_large, lambda t: 1 / r_large(t), lo, hi), 24, "f32")


main()
