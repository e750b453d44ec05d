//! The encoder's inner loops, vectorised safely: each runs inside
//! [`pulp::Arch::dispatch`], which picks the widest instruction set the CPU
//! has at run time (AVX2 + FMA on x86-64, NEON on ARM, plain scalar
//! otherwise) — so one binary is fast everywhere and nothing is `unsafe`.
//!
//! The shape that matters is a short query: a few tokens times a weight
//! matrix. A general matrix product packs the weights into blocks on every
//! call, which for 10 rows costs more than the arithmetic. Here the weights
//! are kept as IEEE half floats (21 MB for the model instead of 42 MB, so
//! they stay in a 32 MB L3 cache between queries instead of streaming from
//! RAM), each block of [`OUTS`] rows is widened to f32 once into a scratch
//! row that stays in L1, and multiplied into tiles of up to [`ROWS`] token
//! rows held in registers; sums are f32 throughout.

// `#[inline(always)]` is what makes this work: a function inlined into the
// body `dispatch` runs is compiled with that body's instruction set.
#![allow(clippy::inline_always)]

use std::array::from_fn;

use pulp::{Arch, Simd, WithSimd};

/// Token rows per tile (with [`OUTS`], 12 accumulators + 3 weights + 1
/// input fill the 16 vector registers of AVX2).
const ROWS: usize = 4;
/// Weight rows per block.
const OUTS: usize = 3;

/// The smallest normal half float; anything smaller is stored as zero.
const HALF_MIN: f32 = 6.103_515_6e-5;
/// The largest half float.
const HALF_MAX: f32 = 65_504.0;

/// `x` as an IEEE 754 half float (round to nearest even; magnitudes below
/// 2⁻¹⁴ become zero, above 65 504 saturate — neither occurs in the weights
/// of a trained model beyond rounding noise).
pub fn to_half(x: f32) -> u16 {
    let sign = ((x.to_bits() >> 16) & 0x8000) as u16;
    let a = x.abs();
    if a.is_nan() {
        return sign | 0x7e00;
    }
    if a < HALF_MIN {
        return sign;
    }
    let a = a.min(HALF_MAX);
    let bits = a.to_bits();
    let rounded = bits + 0x0fff + ((bits >> 13) & 1);
    sign | ((rounded >> 13) - (112 << 10)) as u16
}

/// A half float (as [`to_half`] writes it: no subnormals) widened to f32.
#[inline(always)]
pub fn from_half(h: u16) -> f32 {
    let h = u32::from(h);
    // Shifted into place the exponent is 112 short of f32's bias: scale it back.
    f32::from_bits(((h & 0x8000) << 16) | ((h & 0x7fff) << 13)) * f32::from_bits((112 + 127) << 23)
}

/// `out[t][o] = bias[o] + x[t] · w[o]` for every token row `t` of `x`
/// (`rows × inp`) and weight row `o` of `w` (half floats, `bias.len() ×
/// inp`: the `[out, in]` layout of a PyTorch `Linear`). `out` is
/// `rows × bias.len()`.
pub fn linear(arch: Arch, x: &[f32], inp: usize, w: &[u16], bias: &[f32], out: &mut [f32]) {
    debug_assert_eq!(w.len(), inp * bias.len());
    debug_assert_eq!(out.len() * inp, x.len() * bias.len());
    arch.dispatch(Linear {
        x,
        inp,
        w,
        bias,
        out,
    });
}

struct Linear<'a> {
    x: &'a [f32],
    inp: usize,
    w: &'a [u16],
    bias: &'a [f32],
    out: &'a mut [f32],
}

impl WithSimd for Linear<'_> {
    type Output = ();

    /// Weight rows outside, token tiles inside: each weight row is read and
    /// widened once, then used from L1 by every tile of tokens.
    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Linear {
            x,
            inp,
            w,
            bias,
            out,
        } = self;
        let n_out = bias.len();
        let mut scratch = vec![0.0f32; OUTS * inp];
        let mut o = 0;
        while o < n_out {
            let take = if o + OUTS <= n_out { OUTS } else { 1 };
            for (d, &h) in scratch.iter_mut().zip(&w[o * inp..(o + take) * inp]) {
                *d = from_half(h);
            }
            if take == OUTS {
                let ws: [&[f32]; OUTS] = from_fn(|j| &scratch[j * inp..(j + 1) * inp]);
                tiles::<S, OUTS>(simd, x, inp, ws, &bias[o..o + OUTS], out, n_out, o);
            } else {
                tiles::<S, 1>(simd, x, inp, [&scratch[..inp]], &bias[o..=o], out, n_out, o);
            }
            o += take;
        }
    }
}

/// Every token row of `x` against the `O` weight rows `ws` (outputs `o..o + O`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn tiles<S: Simd, const O: usize>(
    simd: S,
    x: &[f32],
    inp: usize,
    ws: [&[f32]; O],
    bias: &[f32],
    out: &mut [f32],
    n_out: usize,
    o: usize,
) {
    let rows = x.len() / inp;
    let mut t0 = 0;
    while t0 < rows {
        let row = |t: usize| &x[(t0 + t) * inp..(t0 + t + 1) * inp];
        let n = (rows - t0).min(ROWS);
        let mut put = |sums: &[[f32; O]]| {
            for (t, s) in sums.iter().enumerate() {
                for j in 0..O {
                    out[(t0 + t) * n_out + o + j] = s[j] + bias[j];
                }
            }
        };
        match n {
            1 => put(&block::<S, 1, O>(simd, [row(0)], ws)),
            2 => put(&block::<S, 2, O>(simd, from_fn(row), ws)),
            3 => put(&block::<S, 3, O>(simd, from_fn(row), ws)),
            _ => put(&block::<S, ROWS, O>(simd, from_fn(row), ws)),
        }
        t0 += n;
    }
}

/// The `T × O` dot products of `xs` with `ws` (all of one length).
#[inline(always)]
fn block<S: Simd, const T: usize, const O: usize>(
    simd: S,
    xs: [&[f32]; T],
    ws: [&[f32]; O],
) -> [[f32; O]; T] {
    let xv = xs.map(S::as_simd_f32s);
    let wv = ws.map(S::as_simd_f32s);
    let n = wv[0].0.len();
    let xh = xv.map(|(h, _)| &h[..n]);
    let wh = wv.map(|(h, _)| &h[..n]);
    let mut acc = [[simd.splat_f32s(0.0); O]; T];
    for k in 0..n {
        let wk: [S::f32s; O] = from_fn(|j| wh[j][k]);
        for t in 0..T {
            let xk = xh[t][k];
            for j in 0..O {
                acc[t][j] = simd.mul_add_e_f32s(xk, wk[j], acc[t][j]);
            }
        }
    }
    let mut sums = [[0.0f32; O]; T];
    for t in 0..T {
        for j in 0..O {
            let tail: f32 = xv[t].1.iter().zip(wv[j].1).map(|(a, b)| a * b).sum();
            sums[t][j] = simd.reduce_sum_f32s(acc[t][j]) + tail;
        }
    }
    sums
}

/// GELU in its exact form, `x · (1 + erf(x / √2)) / 2`, in place.
pub fn gelu_erf(arch: Arch, xs: &mut [f32]) {
    arch.dispatch(Gelu(xs));
}

struct Gelu<'a>(&'a mut [f32]);

impl WithSimd for Gelu<'_> {
    type Output = ();

    /// Plain arithmetic (no branch, no libm call), so the compiler
    /// vectorises the loop with the instruction set `dispatch` enabled.
    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        for v in self.0.iter_mut() {
            *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
        }
    }
}

/// The error function in single precision: a rational approximation of
/// degree 13/8 on [-4, 4] (outside it erf is ±1 to f32 precision), the one
/// Eigen and XLA use; within a few units in the last place.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    const ALPHA: [f32; 7] = [
        -2.726_142_3e-10,
        2.770_681_4e-8,
        -2.101_024e-6,
        -5.692_506_4e-5,
        -7.349_906e-4,
        -2.954_6e-3,
        -1.609_603_3e-2,
    ];
    const BETA: [f32; 5] = [
        -1.456_607_2e-5,
        -2.133_740_6e-4,
        -1.682_827e-3,
        -7.373_329e-3,
        -1.426_474e-2,
    ];
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let p = ALPHA[1..].iter().fold(ALPHA[0], |p, &a| p.mul_add(x2, a)) * x;
    let q = BETA[1..].iter().fold(BETA[0], |q, &b| q.mul_add(x2, b));
    p / q
}

/// The dot product of two rows, vectorised (the shorter length counts).
pub fn dot(arch: Arch, a: &[f32], b: &[f32]) -> f32 {
    arch.dispatch(Dot(a, b))
}

/// [`dot`] inside a caller's own `dispatch` body (it must be inlined there
/// to use that body's instruction set). Two running sums hide the
/// multiply-add latency of a lone dot product.
#[inline(always)]
pub fn dot_with<S: Simd>(simd: S, a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (ha, ta) = S::as_simd_f32s(&a[..n]);
    let (hb, tb) = S::as_simd_f32s(&b[..n]);
    let (pa, ra) = pulp::as_arrays::<2, _>(ha);
    let (pb, rb) = pulp::as_arrays::<2, _>(hb);
    let mut acc0 = simd.splat_f32s(0.0);
    let mut acc1 = simd.splat_f32s(0.0);
    for ([x0, x1], [y0, y1]) in pa.iter().zip(pb) {
        acc0 = simd.mul_add_e_f32s(*x0, *y0, acc0);
        acc1 = simd.mul_add_e_f32s(*x1, *y1, acc1);
    }
    for (x, y) in ra.iter().zip(rb) {
        acc0 = simd.mul_add_e_f32s(*x, *y, acc0);
    }
    let tail: f32 = ta.iter().zip(tb).map(|(x, y)| x * y).sum();
    simd.reduce_sum_f32s(simd.add_f32s(acc0, acc1)) + tail
}

struct Dot<'a>(&'a [f32], &'a [f32]);

impl WithSimd for Dot<'_> {
    type Output = f32;

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) -> f32 {
        dot_with(simd, self.0, self.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(x: &[f32], inp: usize, w: &[u16], bias: &[f32]) -> Vec<f32> {
        let rows = x.len() / inp;
        let mut out = Vec::new();
        for t in 0..rows {
            for (o, b) in bias.iter().enumerate() {
                let s: f64 = (0..inp)
                    .map(|i| f64::from(x[t * inp + i]) * f64::from(from_half(w[o * inp + i])))
                    .sum();
                out.push(s as f32 + b);
            }
        }
        out
    }

    fn values(n: usize, seed: u32) -> Vec<f32> {
        (0..n)
            .map(|i| {
                ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) % 2001) as f32 / 1000.0
                    - 1.0
            })
            .collect()
    }

    #[test]
    fn memory_kernel_linear_matches_the_naive_product_for_every_tile_shape() {
        let arch = Arch::new();
        // Token counts 1..=9 cover every tile (4, 3, 2, 1 rows); 7 outputs
        // and 37 inputs cover the weight-row and lane tails.
        for (inp, outs) in [(37, 7), (384, 12), (16, 3)] {
            let w: Vec<u16> = values(inp * outs, 7).into_iter().map(to_half).collect();
            let bias = values(outs, 11);
            for rows in 1..=9 {
                let x = values(rows * inp, rows as u32);
                let mut out = vec![0.0; rows * outs];
                linear(arch, &x, inp, &w, &bias, &mut out);
                for (a, b) in out.iter().zip(naive(&x, inp, &w, &bias)) {
                    assert!((a - b).abs() < 1e-3, "rows {rows}, inp {inp}: {a} vs {b}");
                }
            }
        }
        assert!((dot(arch, &[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]) - 32.0).abs() < 1e-6);
    }

    #[test]
    fn memory_kernel_half_floats_round_trip() {
        for x in [
            0.0f32,
            1.0,
            -1.0,
            0.1,
            -0.033_3,
            2.718_281_7 * 1.5,
            1e-4,
            65_504.0,
        ] {
            let back = from_half(to_half(x));
            assert!((back - x).abs() <= x.abs() / 2048.0, "{x} -> {back}");
        }
        assert_eq!(to_half(1.0), 0x3c00);
        assert_eq!(to_half(-2.0), 0xc000);
        // Round to nearest even: 1 + 2^-11 is halfway, goes down to 1.
        assert_eq!(to_half(1.0 + 1.0 / 2048.0), 0x3c00);
        assert_eq!(to_half(1.0 + 3.0 / 2048.0), 0x3c02);
        assert_eq!(from_half(to_half(1e-6)), 0.0);
        assert_eq!(from_half(to_half(1e9)), 65_504.0);
    }

    #[test]
    fn memory_kernel_erf_is_accurate_across_the_range() {
        // erf by its Taylor series in f64 (converges everywhere; exact enough to |x| = 4).
        let reference = |x: f64| -> f64 {
            let (mut term, mut sum, mut n) = (x, x, 0.0);
            while term.abs() > 1e-17 * sum.abs().max(1e-300) || n < 5.0 {
                n += 1.0;
                term *= -x * x / n;
                sum += term / (2.0 * n + 1.0);
                if n > 400.0 {
                    break;
                }
            }
            sum * 2.0 / std::f64::consts::PI.sqrt()
        };
        for i in -400..=400 {
            let x = i as f32 / 100.0;
            let e = (f64::from(erf(x)) - reference(f64::from(x))).abs();
            assert!(e < 2e-6, "erf({x}) off by {e}");
        }
        assert_eq!(erf(9.0), erf(4.0));
        let mut g = [-3.0f32, 0.0, 1.0];
        gelu_erf(Arch::new(), &mut g);
        // GELU(1) = 0.841 344 7; GELU(-3) = -0.004 049 6.
        assert!((g[2] - 0.841_344_7).abs() < 1e-6 && g[1] == 0.0);
        assert!((g[0] + 0.004_049_6).abs() < 1e-6, "{}", g[0]);
    }
}
