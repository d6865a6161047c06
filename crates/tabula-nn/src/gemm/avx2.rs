//! The AVX2 path: the scalar path's chains, eight columns to a register, in tiles of `MR`
//! rows by one panel (`NR` columns), and a lone last row across up to six panels.

use super::{MR, MatA, NR, Offsets, Out, Start, Then};
use std::arch::x86_64::*;

/// The AVX2 tile: the scalar path's chains, eight columns to a register.
///
/// # Safety
/// The CPU must have AVX2 and FMA; A's elements `(m0 + r, kk)` for r < rows, kk < k and
/// the panel's first `k * NR` elements must be in bounds.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn tile<const F: bool>(
    rows: usize,
    k: usize,
    a: MatA<'_>,
    m0: usize,
    panel: &[f32],
    acc: &mut [[f32; NR]; MR],
) {
    match rows {
        6 => unsafe { tile_n::<6, F>(k, a, m0, panel, acc) },
        5 => unsafe { tile_n::<5, F>(k, a, m0, panel, acc) },
        4 => unsafe { tile_n::<4, F>(k, a, m0, panel, acc) },
        3 => unsafe { tile_n::<3, F>(k, a, m0, panel, acc) },
        2 => unsafe { tile_n::<2, F>(k, a, m0, panel, acc) },
        _ => unsafe { tile_n::<1, F>(k, a, m0, panel, acc) },
    }
}

#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn tile_n<const R: usize, const F: bool>(
    k: usize,
    a: MatA<'_>,
    m0: usize,
    panel: &[f32],
    acc: &mut [[f32; NR]; MR],
) {
    unsafe {
        let mut rp = [a.data.as_ptr(); R];
        for (r, p) in rp.iter_mut().enumerate() {
            *p = a.data.as_ptr().add(a.rows.at(m0 + r));
        }
        match a.ks {
            Offsets::Stride(s) => run::<R, F>(k, rp, |kk| kk * s, panel, acc),
            Offsets::Table(t) => run::<R, F>(k, rp, |kk| *t.offs.get_unchecked(kk), panel, acc),
        }
    }
}

/// The tile's chains: row r's term k reads `rp[r] + koff(k)`.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn run<const R: usize, const F: bool>(
    k: usize,
    rp: [*const f32; R],
    koff: impl Fn(usize) -> usize,
    panel: &[f32],
    acc: &mut [[f32; NR]; MR],
) {
    unsafe {
        let mut c0 = [_mm256_setzero_ps(); R];
        let mut c1 = [_mm256_setzero_ps(); R];
        for r in 0..R {
            c0[r] = _mm256_loadu_ps(acc[r].as_ptr());
            c1[r] = _mm256_loadu_ps(acc[r].as_ptr().add(8));
        }
        chains::<R, F>(k, rp, koff, panel.as_ptr(), &mut c0, &mut c1);
        for r in 0..R {
            _mm256_storeu_ps(acc[r].as_mut_ptr(), c0[r]);
            _mm256_storeu_ps(acc[r].as_mut_ptr().add(8), c1[r]);
        }
    }
}

/// Adds the `k` terms to the accumulators, in ascending k: columns 0..8 in `c0`, 8..16
/// in `c1`.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn chains<const R: usize, const F: bool>(
    k: usize,
    rp: [*const f32; R],
    koff: impl Fn(usize) -> usize,
    mut bp: *const f32,
    c0: &mut [__m256; R],
    c1: &mut [__m256; R],
) {
    unsafe {
        for kk in 0..k {
            let o = koff(kk);
            let b0 = _mm256_loadu_ps(bp);
            let b1 = _mm256_loadu_ps(bp.add(8));
            for r in 0..R {
                let av = _mm256_broadcast_ss(&*rp[r].add(o));
                if F {
                    c0[r] = _mm256_fmadd_ps(av, b0, c0[r]);
                    c1[r] = _mm256_fmadd_ps(av, b1, c1[r]);
                } else {
                    c0[r] = _mm256_add_ps(c0[r], _mm256_mul_ps(av, b0));
                    c1[r] = _mm256_add_ps(c1[r], _mm256_mul_ps(av, b1));
                }
            }
            bp = bp.add(NR);
        }
    }
}

/// One row of A times `panels` panels of B (`k` terms each), continuing the sums in
/// `acc`: each column's chain in ascending k, as in [`tile`].
///
/// # Safety
/// The CPU must have AVX2 and FMA; A's row `row` and `panels` panels of `b` must be in
/// bounds.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn wide_row(
    arith: super::Arith,
    k: usize,
    a: MatA<'_>,
    row: usize,
    b: &[f32],
    panels: usize,
    acc: &mut [[[f32; NR]; 1]; super::WIDE / NR],
) {
    let fused = arith == super::Arith::Fused;
    macro_rules! go {
        ($v:literal) => {
            if fused {
                unsafe { wide::<$v, true>(k, a, row, b, acc) }
            } else {
                unsafe { wide::<$v, false>(k, a, row, b, acc) }
            }
        };
    }
    match panels {
        1 => go!(2),
        2 => go!(4),
        3 => go!(6),
        4 => go!(8),
        5 => go!(10),
        _ => go!(12),
    }
}

/// [`wide_row`] over `V` vectors (`V / 2` panels).
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn wide<const V: usize, const F: bool>(
    k: usize,
    a: MatA<'_>,
    row: usize,
    b: &[f32],
    acc: &mut [[[f32; NR]; 1]; super::WIDE / NR],
) {
    unsafe {
        let ap = a.data.as_ptr().add(a.rows.at(row));
        let mut c = [_mm256_setzero_ps(); V];
        for (v, x) in c.iter_mut().enumerate() {
            *x = _mm256_loadu_ps(acc[v / 2][0].as_ptr().add(v % 2 * 8));
        }
        let bp = b.as_ptr();
        for kk in 0..k {
            let av = _mm256_broadcast_ss(&*ap.add(a.ks.at(kk)));
            for (v, x) in c.iter_mut().enumerate() {
                let bv = _mm256_loadu_ps(bp.add(v / 2 * k * NR + kk * NR + v % 2 * 8));
                *x = if F {
                    _mm256_fmadd_ps(av, bv, *x)
                } else {
                    _mm256_add_ps(*x, _mm256_mul_ps(av, bv))
                };
            }
        }
        for (v, x) in c.iter().enumerate() {
            _mm256_storeu_ps(acc[v / 2][0].as_mut_ptr().add(v % 2 * 8), *x);
        }
    }
}

/// A full tile (`MR` rows, `NR` columns) whose C rows or columns are contiguous.
pub(super) struct Full<'a> {
    pub k: usize,
    pub a: MatA<'a>,
    pub m0: usize,
    pub n0: usize,
    pub panel: &'a [f32],
    pub start: Start<'a>,
    pub then: Then<'a>,
    pub out: Out,
}

/// A full tile from start value to stored result without leaving the registers: the
/// same chains as [`tile`] and the same finishing operations as `store`, each a vector
/// of the scalar path's operation (IEEE add, multiply and compare are the same in every
/// lane), so the bits are the scalar path's. A column-major C (a convolution's
/// `[channel][square]`) is written by transposing the tile in registers: a column's six
/// rows are contiguous there.
///
/// # Safety
/// The CPU must have AVX2 and FMA; A's elements `(m0 + r, kk)`, the panel's `k * NR`
/// floats, C's and the skip's elements of the tile must be in bounds.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn full<const F: bool>(t: Full<'_>, c: &mut [f32]) {
    unsafe {
        let Full {
            k,
            a,
            m0,
            n0,
            panel,
            start,
            then,
            out,
        } = t;
        let mut rp = [a.data.as_ptr(); MR];
        for (r, p) in rp.iter_mut().enumerate() {
            *p = a.data.as_ptr().add(a.rows.at(m0 + r));
        }
        let cp = c.as_mut_ptr().add(m0 * out.rs + n0 * out.cs);
        let rows_major = out.cs == 1;
        let (mut c0, mut c1) = ([_mm256_setzero_ps(); MR], [_mm256_setzero_ps(); MR]);
        match start {
            Start::Zero | Start::AddSum => {}
            Start::ColBias(b) => {
                let (b0, b1) = (_mm256_loadu_ps(&b[n0]), _mm256_loadu_ps(&b[n0 + 8]));
                c0 = [b0; MR];
                c1 = [b1; MR];
            }
            Start::Keep if rows_major => {
                for r in 0..MR {
                    c0[r] = _mm256_loadu_ps(cp.add(r * out.rs));
                    c1[r] = _mm256_loadu_ps(cp.add(r * out.rs + 8));
                }
            }
            Start::Keep => {
                let mut cols = [_mm256_setzero_ps(); NR];
                for (j, v) in cols.iter_mut().enumerate() {
                    *v = load6(cp.add(j * out.cs));
                }
                let (lo, hi) = (transpose8(&cols[..8]), transpose8(&cols[8..]));
                c0.copy_from_slice(&lo[..MR]);
                c1.copy_from_slice(&hi[..MR]);
            }
        }
        let bp = panel.as_ptr();
        match a.ks {
            Offsets::Stride(s) => chains::<MR, F>(k, rp, |kk| kk * s, bp, &mut c0, &mut c1),
            Offsets::Table(tb) => {
                chains::<MR, F>(k, rp, |kk| *tb.offs.get_unchecked(kk), bp, &mut c0, &mut c1)
            }
        }
        // `store`'s cases: `old + x` for AddSum, else x, relu(x) or relu(x + skip).
        let (fin, skip) = match (start, then) {
            (Start::AddSum, _) => (Fin::AddSum, std::ptr::null()),
            (_, Then::Nothing) => (Fin::Plain, std::ptr::null()),
            (_, Then::Relu) => (Fin::Relu, std::ptr::null()),
            (_, Then::AddRelu(sk)) => (Fin::AddRelu, sk.as_ptr().add(m0 * out.rs + n0 * out.cs)),
            (_, Then::Norm(_)) => unreachable!("`gemm` runs no full AVX2 tile with a norm"),
        };
        if rows_major {
            for r in 0..MR {
                let at = r * out.rs;
                finish::<false>(fin, c0[r], cp.add(at), skip.wrapping_add(at));
                finish::<false>(fin, c1[r], cp.add(at + 8), skip.wrapping_add(at + 8));
            }
        } else {
            let mut rows = [_mm256_setzero_ps(); 8];
            rows[..MR].copy_from_slice(&c0);
            let lo = transpose8(&rows);
            rows[..MR].copy_from_slice(&c1);
            let hi = transpose8(&rows);
            for j in 0..NR {
                let x = if j < 8 { lo[j] } else { hi[j - 8] };
                let at = j * out.cs;
                finish::<true>(fin, x, cp.add(at), skip.wrapping_add(at));
            }
        }
    }
}

/// What `store` does to a finished element.
#[derive(Copy, Clone, PartialEq, Eq)]
pub(super) enum Fin {
    Plain,
    Relu,
    AddRelu,
    AddSum,
}

/// The finished value of eight elements whose old values (and skips) are `old`, `skip`.
#[target_feature(enable = "avx2,fma")]
#[inline]
pub(super) fn finished(fin: Fin, x: __m256, old: __m256, skip: __m256) -> __m256 {
    match fin {
        Fin::Plain => x,
        Fin::Relu => relu(x),
        Fin::AddRelu => relu(_mm256_add_ps(x, skip)),
        Fin::AddSum => _mm256_add_ps(old, x),
    }
}

/// Finishes eight contiguous elements of C at `c` (their skips at `skip`) from `x`, or
/// with `SIX` the first six from lanes 0..6.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn finish<const SIX: bool>(fin: Fin, x: __m256, c: *mut f32, skip: *const f32) {
    unsafe {
        let zero = _mm256_setzero_ps();
        let old = if fin == Fin::AddSum {
            load::<SIX>(c)
        } else {
            zero
        };
        let sk = if fin == Fin::AddRelu {
            load::<SIX>(skip)
        } else {
            zero
        };
        let y = finished(fin, x, old, sk);
        if SIX {
            store6(c, y)
        } else {
            _mm256_storeu_ps(c, y)
        }
    }
}

/// Eight floats from `p`, or with `SIX` six ([`load6`]).
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn load<const SIX: bool>(p: *const f32) -> __m256 {
    unsafe { if SIX { load6(p) } else { _mm256_loadu_ps(p) } }
}

/// `if x < 0 { 0 } else { x }` in every lane (-0 and NaN kept, as the scalar `relu`).
#[target_feature(enable = "avx2,fma")]
#[inline]
fn relu(x: __m256) -> __m256 {
    let neg = _mm256_cmp_ps::<_CMP_LT_OQ>(x, _mm256_setzero_ps());
    _mm256_andnot_ps(neg, x)
}

/// Six floats from `p` in lanes 0..6, zeros in 6 and 7 (reads exactly six).
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn load6(p: *const f32) -> __m256 {
    unsafe {
        let lo = _mm_loadu_ps(p);
        let hi = _mm_castsi128_ps(_mm_loadl_epi64(p.add(4) as *const __m128i));
        _mm256_set_m128(hi, lo)
    }
}

/// Lanes 0..6 of `v` to `p` (writes exactly six).
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn store6(p: *mut f32, v: __m256) {
    unsafe {
        _mm_storeu_ps(p, _mm256_castps256_ps128(v));
        _mm_storel_epi64(
            p.add(4) as *mut __m128i,
            _mm_castps_si128(_mm256_extractf128_ps::<1>(v)),
        );
    }
}

/// The 8 x 8 transpose of `r[..8]`: lane j of row i becomes lane i of row j.
#[target_feature(enable = "avx2,fma")]
#[inline]
pub(super) unsafe fn transpose8(r: &[__m256]) -> [__m256; 8] {
    let t0 = _mm256_unpacklo_ps(r[0], r[1]);
    let t1 = _mm256_unpackhi_ps(r[0], r[1]);
    let t2 = _mm256_unpacklo_ps(r[2], r[3]);
    let t3 = _mm256_unpackhi_ps(r[2], r[3]);
    let t4 = _mm256_unpacklo_ps(r[4], r[5]);
    let t5 = _mm256_unpackhi_ps(r[4], r[5]);
    let t6 = _mm256_unpacklo_ps(r[6], r[7]);
    let t7 = _mm256_unpackhi_ps(r[6], r[7]);
    // s_q: columns q and q + 4 of rows 0..4 (s0..s3) or rows 4..8 (s4..s7).
    let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
    let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
    let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
    let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
    [
        _mm256_permute2f128_ps::<0x20>(s0, s4),
        _mm256_permute2f128_ps::<0x20>(s1, s5),
        _mm256_permute2f128_ps::<0x20>(s2, s6),
        _mm256_permute2f128_ps::<0x20>(s3, s7),
        _mm256_permute2f128_ps::<0x31>(s0, s4),
        _mm256_permute2f128_ps::<0x31>(s1, s5),
        _mm256_permute2f128_ps::<0x31>(s2, s6),
        _mm256_permute2f128_ps::<0x31>(s3, s7),
    ]
}
