//! The AVX-512 path: the scalar path's chains, sixteen columns to a register, in tiles of up
//! to 8 rows by two panels (32 columns: sixteen of the 32 registers accumulate), every tile
//! finished in registers. The rows of a tile are the first of 8, 7 and 6 that divides the
//! product's rows (a 7 x 7 board's 49 squares are 7 tiles of 7, a 3x3 convolution's 288
//! weight-gradient rows 36 tiles of 8), so no product ends in a lone row; partial tiles (rows
//! or columns) use masked loads and stores, which touch no element outside the product.

use super::avx2::{Fin, finished, transpose8};
use super::{Arith, ColNorm, MatA, NR, Offsets, Out, Start, Then};
use std::arch::x86_64::*;

/// One product, as `gemm` was given it.
#[derive(Copy, Clone)]
pub(super) struct Product<'a> {
    pub shape: (usize, usize, usize),
    pub a: MatA<'a>,
    pub b: &'a [f32],
    pub start: Start<'a>,
    pub then: Then<'a>,
    pub out: Out,
}

/// Rows per tile for a product of `m` rows.
fn tile_rows(m: usize) -> usize {
    [8, 7, 6]
        .into_iter()
        .find(|&r| m.is_multiple_of(r))
        .unwrap_or(8)
}

/// `C = start + A B` (then finished) for the whole product: panel pairs outer, row tiles
/// inner, as `gemm`'s AVX2 loop (a pair of panels is read from L1 or L2 by each tile).
///
/// # Safety
/// The CPU must have AVX-512 F, VL and DQ, AVX2 and FMA; A's elements of the product,
/// B's packed panels, C's and the skip's elements, and the first `n` of the bias and of a
/// normalisation's columns must be in bounds, and C must be row-major (`out.cs == 1`) or
/// column-major (`out.rs == 1`).
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
pub(super) unsafe fn product(arith: Arith, p: Product<'_>, c: &mut [f32]) {
    // SAFETY: `product_of`'s contract is this fn's (the same CPU features, product, bounds
    // and layout of C).
    unsafe {
        match arith {
            Arith::Fused => product_of::<true>(p, c),
            Arith::Separate => product_of::<false>(p, c),
        }
    }
}

/// [`product`] with the arithmetic `F` (fused or not).
///
/// # Safety
/// As [`product`].
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
unsafe fn product_of<const F: bool>(p: Product<'_>, c: &mut [f32]) {
    let (m, n, _) = p.shape;
    let rows = tile_rows(m);
    let panels = n.div_ceil(NR);
    let cp = c.as_mut_ptr();
    let mut q = 0;
    while q < panels {
        let two = panels - q >= 2;
        let mut m0 = 0;
        while m0 < m {
            let r = rows.min(m - m0);
            macro_rules! go {
                ($($r:literal)*) => {
                    match (r, two) {
                        $(
                            // SAFETY: `R` is `r = rows.min(m - m0)`, so `m0 + R <= m`; `two`:
                            // panel q + 1 < panels holds a column; the rest of `tile`'s
                            // contract is this fn's, and `cp` is `c`'s start.
                            ($r, true) => unsafe { tile::<$r, 2, F>(&p, m0, q, cp) },
                        )*
                        $(
                            // SAFETY: `R` is `r = rows.min(m - m0)`, so `m0 + R <= m`; panel
                            // q < panels holds a column; the rest of `tile`'s contract is this
                            // fn's, and `cp` is `c`'s start.
                            ($r, false) => unsafe { tile::<$r, 1, F>(&p, m0, q, cp) },
                        )*
                        _ => unreachable!("tiles have 1 to 8 rows"),
                    }
                };
            }
            go!(1 2 3 4 5 6 7 8);
            m0 += r;
        }
        q += if two { 2 } else { 1 };
    }
}

/// The mask of the first `w` (<= 16) lanes.
fn lanes(w: usize) -> u16 {
    if w >= 16 { u16::MAX } else { (1u16 << w) - 1 }
}

/// The tile of `R` rows from `m0` and `P` panels from panel `q`.
///
/// # Safety
/// As [`product`], with `c` the start of C; `m0 + R <= m`, and the tile's last panel holds
/// at least one column.
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
#[inline]
unsafe fn tile<const R: usize, const P: usize, const F: bool>(
    p: &Product<'_>,
    m0: usize,
    q: usize,
    c: *mut f32,
) {
    // SAFETY: the CPU has the path's features (the contract). Every width is 1 to `NR` (the
    // last panel holds a column), so the tile's elements are C's `(m0 + r, n0 + j NR + x)`,
    // r < R, x < widths[j], in bounds (`m0 + R <= m`); `cp` is `(m0, n0)`'s and the skip's
    // `sk + (m0, n0)` its twin (the skip is at least as long as C), as `start` and the
    // finishes require, and a norm's columns hold n floats, as `norm` requires. `bp` is panel q's start; `chains` reads panels q..q + P's `k * NR`
    // floats (within B's packed panels) and A's elements `(m0 + r, kk)`, kk < k, through
    // `rp[r]`, or `next[r]` equal to it, calling `koff` only with kk < k (within a table's
    // at least k entries, `get_unchecked`).
    unsafe {
        let (_, n, k) = p.shape;
        let n0 = q * NR;
        let widths: [usize; P] = std::array::from_fn(|j| NR.min(n - n0 - j * NR));
        let out = p.out;
        let cp = c.add(m0 * out.rs + n0 * out.cs);
        let mut acc = [[_mm512_setzero_ps(); P]; R];
        start::<R, P>(p, n0, widths, cp, &mut acc);
        let rp: [*const f32; R] =
            std::array::from_fn(|r| p.a.data.as_ptr().wrapping_add(p.a.rows.at(m0 + r)));
        let bp = p.b.as_ptr().add(q * k * NR);
        // Rows at consecutive offsets (a board row's squares, or a 1x1 convolution's):
        // one pointer with constant displacements instead of R pointers, which leaves
        // the loop registers enough not to reload its own state from the stack.
        let consecutive = (1..R).all(|r| rp[r] == rp[0].wrapping_add(r));
        let base = rp[0];
        let next: [*const f32; R] = std::array::from_fn(|r| base.wrapping_add(r));
        match (p.a.ks, consecutive) {
            (Offsets::Stride(s), true) => chains::<R, P, F>(k, next, |kk| kk * s, bp, &mut acc),
            (Offsets::Stride(s), false) => chains::<R, P, F>(k, rp, |kk| kk * s, bp, &mut acc),
            (Offsets::Table(t), true) => {
                chains::<R, P, F>(k, next, |kk| *t.offs.get_unchecked(kk), bp, &mut acc)
            }
            (Offsets::Table(t), false) => {
                chains::<R, P, F>(k, rp, |kk| *t.offs.get_unchecked(kk), bp, &mut acc)
            }
        }
        let then = match p.then {
            Then::Norm(cn) => {
                norm::<R, P>(cn, n0, widths, &mut acc);
                cn.after
            }
            t => t,
        };
        let (fin, skip) = match (p.start, then) {
            (Start::AddSum, _) => (Fin::AddSum, std::ptr::null()),
            (_, Then::Nothing | Then::Norm(_)) => (Fin::Plain, std::ptr::null()),
            (_, Then::Relu) => (Fin::Relu, std::ptr::null()),
            (_, Then::AddRelu(sk)) => (Fin::AddRelu, sk.as_ptr().add(m0 * out.rs + n0 * out.cs)),
        };
        if out.cs == 1 {
            finish_rows::<R, P>(fin, &acc, widths, out.rs, cp, skip);
        } else {
            finish_cols::<R, P>(fin, &acc, widths, out.cs, cp, skip);
        }
    }
}

/// The tile's start values: zero, the bias, or C's elements.
///
/// # Safety
/// As [`tile`], with `cp` at C's element `(m0, n0)` of the tile's `R` rows and `widths[j]`
/// (1 to `NR`) the columns of its panel j (from column `n0 + j NR`).
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
#[inline]
unsafe fn start<const R: usize, const P: usize>(
    p: &Product<'_>,
    n0: usize,
    widths: [usize; P],
    cp: *const f32,
    acc: &mut [[__m512; P]; R],
) {
    // SAFETY: the CPU has the path's features (the contract). Masked loads touch only their
    // mask's lanes: the bias's `n0 + j NR + 0..widths[j]` (below n, within the bias);
    // row-major, `cp + r * rs + j NR` and its `widths[j]` lanes are row m0 + r's columns of
    // panel j; column-major (`rs == 1`), `cp + (j NR + x) * cs` and its R lanes are column
    // n0 + j NR + x's rows m0..m0 + R, x < widths[j]: all C's elements of the tile.
    unsafe {
        let out = p.out;
        match p.start {
            Start::Zero | Start::AddSum => {}
            Start::ColBias(b) => {
                for j in 0..P {
                    let v = _mm512_maskz_loadu_ps(lanes(widths[j]), b.as_ptr().add(n0 + j * NR));
                    for row in acc.iter_mut() {
                        row[j] = v;
                    }
                }
            }
            Start::Keep if out.cs == 1 => {
                for (r, row) in acc.iter_mut().enumerate() {
                    for j in 0..P {
                        let at = cp.add(r * out.rs + j * NR);
                        row[j] = _mm512_maskz_loadu_ps(lanes(widths[j]), at);
                    }
                }
            }
            Start::Keep => {
                // Column-major: each column's R rows are contiguous; transposed into rows.
                let rmask = lanes(R) as u8;
                for j in 0..P {
                    let mut cols = [_mm256_setzero_ps(); NR];
                    for (x, v) in cols.iter_mut().enumerate().take(widths[j]) {
                        *v = _mm256_maskz_loadu_ps(rmask, cp.add((j * NR + x) * out.cs));
                    }
                    let (lo, hi) = (transpose8(&cols[..8]), transpose8(&cols[8..]));
                    for (r, row) in acc.iter_mut().enumerate() {
                        row[j] = _mm512_insertf32x8::<1>(_mm512_castps256_ps512(lo[r]), hi[r]);
                    }
                }
            }
        }
    }
}

/// Adds the `k` terms to the accumulators in ascending k: row r's term k reads
/// `rp[r] + koff(k)`, panel j's row k is at `bp + j k NR + k NR`.
///
/// # Safety
/// The CPU must have the path's features; for r < R and kk < k, `rp[r] + koff(kk)` must be
/// a readable float in `rp[r]`'s allocation (`koff` is called only with kk < k), and `bp`
/// must point to `P * k * NR` readable floats.
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
#[inline]
unsafe fn chains<const R: usize, const P: usize, const F: bool>(
    k: usize,
    rp: [*const f32; R],
    koff: impl Fn(usize) -> usize,
    bp: *const f32,
    acc: &mut [[__m512; P]; R],
) {
    // SAFETY: panel j's row kk is `bp[j k NR + kk NR..][..16]`, below `P * k * NR` (j < P,
    // kk < k), and A's reads are `rp[r] + koff(kk)`, kk < k: both readable by the contract.
    unsafe {
        let stride = k * NR;
        for kk in 0..k {
            let o = koff(kk);
            let b: [__m512; P] =
                std::array::from_fn(|j| _mm512_loadu_ps(bp.add(j * stride + kk * NR)));
            for r in 0..R {
                let av = _mm512_set1_ps(*rp[r].add(o));
                for j in 0..P {
                    acc[r][j] = if F {
                        _mm512_fmadd_ps(av, b[j], acc[r][j])
                    } else {
                        _mm512_add_ps(acc[r][j], _mm512_mul_ps(av, b[j]))
                    };
                }
            }
        }
    }
}

/// The normalisation of every row of the tile, lane by lane: `ColNorm::apply`'s
/// operations, each column's constants in its lane.
///
/// # Safety
/// The CPU must have the path's features; `cn`'s four columns must hold `n0 + j NR +
/// widths[j]` floats for j < P (`gemm` checks n).
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
#[inline]
unsafe fn norm<const R: usize, const P: usize>(
    cn: &ColNorm<'_>,
    n0: usize,
    widths: [usize; P],
    acc: &mut [[__m512; P]; R],
) {
    // SAFETY: each masked load touches only `v[n0 + j NR..][..widths[j]]` of a column of
    // `cn`, in bounds by the contract; the CPU has the path's features.
    unsafe {
        for j in 0..P {
            let mask = lanes(widths[j]);
            let col = |v: &[f32]| _mm512_maskz_loadu_ps(mask, v.as_ptr().add(n0 + j * NR));
            let (mean, inv) = (col(cn.mean), col(cn.inv));
            let (gamma, beta) = (col(cn.gamma), col(cn.beta));
            for row in acc.iter_mut() {
                let t = _mm512_mul_ps(_mm512_sub_ps(row[j], mean), inv);
                row[j] = _mm512_add_ps(_mm512_mul_ps(gamma, t), beta);
            }
        }
    }
}

/// `if x < 0 { 0 } else { x }` in every lane (-0 and NaN kept, as the scalar `relu`).
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
#[inline]
fn relu(x: __m512) -> __m512 {
    let zero = _mm512_setzero_ps();
    _mm512_mask_mov_ps(x, _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, zero), zero)
}

/// A row-major tile's finish: `store`'s operations on sixteen columns at a time.
///
/// # Safety
/// As [`tile`] with a row-major C: `cp` at C's element `(m0, n0)`, `rs` C's row stride,
/// `widths[j]` (1 to `NR`) the columns of panel j; with `Fin::AddRelu`, `skip` at the
/// skip's element of the same index (otherwise it is not read).
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
#[inline]
unsafe fn finish_rows<const R: usize, const P: usize>(
    fin: Fin,
    acc: &[[__m512; P]; R],
    widths: [usize; P],
    rs: usize,
    cp: *mut f32,
    skip: *const f32,
) {
    // SAFETY: `cp + r * rs + j NR` and its `widths[j]` masked lanes (the only ones loaded
    // or stored) are row m0 + r's columns of panel j, C's elements of the tile by the
    // contract; the skip, read only with AddRelu, at the same offsets; the CPU has the
    // path's features.
    unsafe {
        for (r, row) in acc.iter().enumerate() {
            for j in 0..P {
                let mask = lanes(widths[j]);
                let at = r * rs + j * NR;
                let x = row[j];
                let y = match fin {
                    Fin::Plain => x,
                    Fin::Relu => relu(x),
                    Fin::AddRelu => {
                        relu(_mm512_add_ps(x, _mm512_maskz_loadu_ps(mask, skip.add(at))))
                    }
                    Fin::AddSum => _mm512_add_ps(_mm512_maskz_loadu_ps(mask, cp.add(at)), x),
                };
                _mm512_mask_storeu_ps(cp.add(at), mask, y);
            }
        }
    }
}

/// A column-major tile's finish: the tile transposed in registers (eight columns of a
/// panel at a time), each column's `R` contiguous rows finished and stored together.
/// The finish is a constant of each instance ([`cols`]), so a full panel's sixteen
/// columns are stored by straight-line code; a ReLU alone runs on the sixteen-lane rows
/// before the transpose (the same operation on each element, fewer instructions).
///
/// # Safety
/// Called only from [`tile`], whose CPU has the path's features, with its bounds: C
/// column-major (`rs == 1`), `cs` its column stride, `cp` at C's element `(m0, n0)`,
/// `widths[j]` (1 to `NR`) the columns of panel j; with `Fin::AddRelu`, `skip` at the
/// skip's element of the same index (otherwise it is not read).
// Without target features, so that it may be inlined always (into `tile`, which
// has them; the intrinsics are then inlined there).
#[inline(always)]
unsafe fn finish_cols<const R: usize, const P: usize>(
    fin: Fin,
    acc: &[[__m512; P]; R],
    widths: [usize; P],
    cs: usize,
    cp: *mut f32,
    skip: *const f32,
) {
    // SAFETY: the CPU has the path's features (`relu` needs them), and `cols`' contract is
    // this fn's, `ADD_RELU` (the one that reads `skip`) only with `Fin::AddRelu`.
    unsafe {
        match fin {
            Fin::Plain => cols::<R, P, PLAIN>(acc, widths, cs, cp, skip),
            Fin::Relu => {
                let mut relued = *acc;
                for row in relued.iter_mut() {
                    for x in row.iter_mut() {
                        *x = relu(*x);
                    }
                }
                cols::<R, P, PLAIN>(&relued, widths, cs, cp, skip)
            }
            Fin::AddRelu => cols::<R, P, ADD_RELU>(acc, widths, cs, cp, skip),
            Fin::AddSum => cols::<R, P, ADD_SUM>(acc, widths, cs, cp, skip),
        }
    }
}

/// [`cols`]' finishes: store, add the skip then ReLU, add to C's old value.
const PLAIN: u8 = 0;
const ADD_RELU: u8 = 1;
const ADD_SUM: u8 = 2;

/// [`finish_cols`] with the finish `F` ([`PLAIN`], [`ADD_RELU`], [`ADD_SUM`]).
///
/// # Safety
/// As [`finish_cols`], with `skip` read only by `ADD_RELU`.
// Without target features, so that it may be inlined always (into `tile`, which
// has them; the intrinsics are then inlined there).
#[inline(always)]
unsafe fn cols<const R: usize, const P: usize, const F: u8>(
    acc: &[[__m512; P]; R],
    widths: [usize; P],
    cs: usize,
    cp: *mut f32,
    skip: *const f32,
) {
    // SAFETY: the CPU has the path's features (the contract). `cp + o`, `o = (j NR + x) * cs`
    // for x < 16 in a full panel, else x < widths[j], is column n0 + j NR + x's element of
    // row m0, and `column` touches its R rows (`rs == 1`): C's elements of the tile; the
    // skip (`wrapping_add`, read by `ADD_RELU` only) has the same offsets.
    unsafe {
        let rmask = lanes(R) as u8;
        let zero = _mm256_setzero_ps();
        for j in 0..P {
            let mut lo = [zero; 8];
            let mut hi = [zero; 8];
            for r in 0..R {
                lo[r] = _mm512_castps512_ps256(acc[r][j]);
                hi[r] = _mm512_extractf32x8_ps::<1>(acc[r][j]);
            }
            let (lo, hi) = (transpose8(&lo), transpose8(&hi));
            let at = j * NR * cs;
            if widths[j] == NR {
                for (x, &v) in lo.iter().enumerate() {
                    let o = at + x * cs;
                    column::<F>(v, rmask, cp.add(o), skip.wrapping_add(o));
                }
                for (x, &v) in hi.iter().enumerate() {
                    let o = at + (x + 8) * cs;
                    column::<F>(v, rmask, cp.add(o), skip.wrapping_add(o));
                }
            } else {
                for x in 0..widths[j] {
                    let v = if x < 8 { lo[x] } else { hi[x - 8] };
                    let o = at + x * cs;
                    column::<F>(v, rmask, cp.add(o), skip.wrapping_add(o));
                }
            }
        }
    }
}

/// One column's `R` rows (the mask's lanes) of `v`, finished by `F`, stored at `c`.
///
/// # Safety
/// Called only from [`tile`], whose CPU has the path's features, with its bounds: the
/// mask's lanes of `c` (and of `skip` with `ADD_RELU`) are the column's elements of the
/// tile.
// Without target features, so that it may be inlined always (into `tile`, which
// has them; the intrinsics are then inlined there).
#[inline(always)]
unsafe fn column<const F: u8>(v: __m256, rmask: u8, c: *mut f32, skip: *const f32) {
    // SAFETY: the masked loads and store touch only `rmask`'s R lanes of `c` (and `skip`,
    // read with `ADD_RELU` only), the column's elements by the contract; the CPU has the
    // path's features.
    unsafe {
        let y = match F {
            ADD_RELU => {
                let sk = _mm256_maskz_loadu_ps(rmask, skip);
                finished(Fin::AddRelu, v, v, sk)
            }
            ADD_SUM => {
                let old = _mm256_maskz_loadu_ps(rmask, c);
                finished(Fin::AddSum, v, old, v)
            }
            _ => v,
        };
        _mm256_mask_storeu_ps(c, rmask, y);
    }
}
