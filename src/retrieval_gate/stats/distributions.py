"""The few distribution functions the comparison needs, without ``scipy.stats`` / ``scipy.optimize``
(whose import alone costs more than a whole small comparison: docs/performance.md). Pure.

- ``normal_quantile`` / ``normal_cdf``: ``statistics.NormalDist``.
- ``t_quantile(p, df)``: Student's t quantile from the exact finite series of its distribution
  function for an integer number of degrees of freedom (Abramowitz & Stegun 26.7.3–4: with
  ``θ = atan(t/√ν)``, ``A(t|ν) = P(|T| ≤ t)`` is ``sin θ·Σ_j c_j cos^{2j} θ`` for even ν and
  ``(2/π)(θ + sin θ·cos θ·Σ_j c_j cos^{2j} θ)`` for odd ν), solved for θ by bisection.
- ``log_binomial_pmf`` / ``binomial_cdf_walk``: the binomial law from a log-factorial table;
  ``binomial_cdf_walk`` gives ``P(Bin(m, p) ≤ k_m)`` along consecutive m by the recursion
  ``P(Bin(m + 1, p) ≤ k) = P(Bin(m, p) ≤ k) − p·P(Bin(m, p) = k)``, one step per m.
- ``sign_test_critical(size, alpha)``: the largest k with ``2·P(Bin(m, ½) ≤ k) < alpha`` for
  m = 0…size − 1, walking m with the same recursion; a tail within a relative 1e-9 of the level
  is decided exactly in integers.
- ``find_root``: bisection to an absolute tolerance (the root of a monotone function on a bracket).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from statistics import NormalDist

import numpy as np

_NORMAL = NormalDist()


def normal_quantile(p: float) -> float:
    return _NORMAL.inv_cdf(p)


def normal_cdf(x: float) -> float:
    return _NORMAL.cdf(x)


def find_root(f: Callable[[float], float], low: float, high: float, *, xtol: float = 1e-12) -> float:
    """A root of ``f`` on ``[low, high]`` where ``f(low)`` and ``f(high)`` differ in sign (or one is
    0), by bisection until the bracket is narrower than ``xtol``."""
    f_low = f(low)
    if f_low == 0.0:
        return low
    if f(high) == 0.0:
        return high
    while high - low > xtol:
        mid = (low + high) / 2
        if mid in (low, high):
            break
        f_mid = f(mid)
        if f_mid == 0.0:
            return mid
        if (f_mid < 0) == (f_low < 0):
            low, f_low = mid, f_mid
        else:
            high = mid
    return (low + high) / 2


@lru_cache(maxsize=64)
def _t_coefficients(df: int) -> np.ndarray:
    """``c_j`` of the series (module docstring): even ν: ``c_0 = 1, c_j = c_{j−1}·(2j − 1)/(2j)``,
    j < ν/2; odd ν: ``c_0 = 1, c_j = c_{j−1}·2j/(2j + 1)``, j < (ν − 1)/2."""
    count = df // 2 if df % 2 == 0 else (df - 1) // 2
    j = np.arange(1, count, dtype=np.float64)
    ratios = (2 * j - 1) / (2 * j) if df % 2 == 0 else (2 * j) / (2 * j + 1)
    out = np.concatenate([[1.0], np.cumprod(ratios)])
    out.setflags(write=False)
    return out


def _t_central(theta: float, df: int) -> float:
    """``A(t|ν) = P(|T| ≤ t)`` at ``θ = atan(t/√ν)``."""
    if df == 1:
        return 2 * theta / math.pi
    c = _t_coefficients(df)
    x = math.cos(theta) ** 2
    powers = np.power(x, np.arange(len(c)))
    total = float(np.dot(c, powers))
    if df % 2 == 0:
        return math.sin(theta) * total
    return 2 / math.pi * (theta + math.sin(theta) * math.cos(theta) * total)


@lru_cache(maxsize=4096)
def t_quantile(p: float, df: int) -> float:
    """The p-quantile of Student's t with ``df`` (a positive integer) degrees of freedom (kept:
    a history asks for the same few, refresh after refresh)."""
    if df < 1 or int(df) != df:
        raise ValueError("df must be a positive integer")
    if not 0 < p < 1:
        raise ValueError("p must be in (0, 1)")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1 - p, df)
    target = 2 * p - 1
    theta = find_root(lambda th: _t_central(th, int(df)) - target, 0.0, math.pi / 2, xtol=1e-15)
    return math.sqrt(df) * math.tan(theta)


@lru_cache(maxsize=8)
def _log_factorials(size: int) -> np.ndarray:
    out = np.array([math.lgamma(x + 1) for x in range(size)])
    out.setflags(write=False)
    return out


def log_factorials(top: int) -> np.ndarray:
    """``log(i!)`` for i = 0…top (a cached table grown in powers of two)."""
    size = 1 << max(6, int(top + 1).bit_length())
    return _log_factorials(size)[: top + 1]


def log_binomial_pmf(k: np.ndarray, m: np.ndarray, p: float) -> np.ndarray:
    """``log P(Bin(m, p) = k)`` elementwise (−inf outside 0 ≤ k ≤ m; p in [0, 1])."""
    k = np.asarray(k, dtype=np.int64)
    m = np.asarray(m, dtype=np.int64)
    inside = (k >= 0) & (k <= m)
    kk, mm = np.where(inside, k, 0), np.where(inside, m, 0)
    table = log_factorials(int(mm.max(initial=0)))
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p = math.log(p) if p > 0 else -math.inf
        log_q = math.log1p(-p) if p < 1 else -math.inf
        value = table[mm] - table[kk] - table[mm - kk]
        value = value + np.where(kk > 0, kk * log_p, 0.0) + np.where(mm - kk > 0, (mm - kk) * log_q, 0.0)
    return np.where(inside, value, -np.inf)


def _pmf_function(p: float, top: int) -> Callable[[int, int], float]:
    """``pmf(i, m) = P(Bin(m, p) = i)`` for m ≤ top, from the log-factorial table (plain floats)."""
    table = log_factorials(top).tolist()
    log_p = math.log(p) if p > 0 else -math.inf
    log_q = math.log1p(-p) if p < 1 else -math.inf

    def pmf(i: int, m: int) -> float:
        if i < 0 or i > m:
            return 0.0
        value = table[m] - table[i] - table[m - i]
        if i:
            value += i * log_p
        if m - i:
            value += (m - i) * log_q
        return math.exp(value)

    return pmf


def binomial_cdf_walk(k: np.ndarray, m_start: int, p: float) -> np.ndarray:
    """``P(Bin(m, p) ≤ k[i])`` for ``m = m_start + i`` (module docstring)."""
    ks = np.asarray(k, dtype=np.int64).tolist()
    out = np.zeros(len(ks))
    if not ks:
        return out
    pmf = _pmf_function(p, m_start + len(ks))
    m, current = m_start, ks[0]
    cdf = math.fsum(pmf(i, m) for i in range(min(current, m) + 1)) if current >= 0 else 0.0
    out[0] = min(1.0, cdf)
    for index in range(1, len(ks)):
        if current >= 0:
            cdf -= p * pmf(current, m)  # P(Bin(m + 1) ≤ k) from P(Bin(m) ≤ k)
        m += 1
        wanted = ks[index]
        while current < wanted:
            current += 1
            cdf += pmf(current, m)
        while current > wanted:
            cdf -= pmf(current, m)
            current -= 1
        if current < 0:
            cdf = 0.0
        out[index] = min(1.0, max(0.0, cdf))
    return out


_GUARD = 1e-9  # a floating tail this close to the level is decided exactly, in integers


@lru_cache(maxsize=64)
def sign_test_critical(size: int, alpha: float) -> np.ndarray:
    """``k(m)`` for m = 0…size − 1: the largest k with ``2·P(Bin(m, ½) ≤ k) < alpha`` (−1: none).
    The tail is walked in floats (``F(k, m + 1) = F(k, m) − ½·P(Bin(m, ½) = k)``); where it lies
    within a relative 1e-9 of the level the comparison is made exactly, ``2·Σ_{i ≤ k} C(m, i)``
    against ``alpha·2^m`` as a fraction (module docstring)."""
    pmf = _pmf_function(0.5, max(size - 1, 0))
    exact_alpha = Fraction(alpha)

    def below(tail: float, k: int, m: int) -> bool:  # 2·P(Bin(m, ½) ≤ k) < alpha
        if abs(2 * tail - alpha) > _GUARD * alpha:
            return 2 * tail < alpha
        return 2 * sum(math.comb(m, i) for i in range(k + 1)) < exact_alpha * (1 << m)

    out = np.empty(size, dtype=np.int64)
    k, tail = -1, 0.0  # tail = P(Bin(m, ½) ≤ k) at the current m
    for m in range(size):
        if m > 0 and k >= 0:
            tail -= 0.5 * pmf(k, m - 1)
        while k + 1 <= m and below(tail + pmf(k + 1, m), k + 1, m):
            k += 1
            tail += pmf(k, m)
        while k >= 0 and not below(tail, k, m):
            tail -= pmf(k, m)
            k -= 1
        out[m] = k
    out.setflags(write=False)
    return out
