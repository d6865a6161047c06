//! The AVX2 path: the scalar path's chains, eight columns to a register, in tiles of `MR`
//! rows by one panel (`NR` columns), and a lone last row across up to six panels.

use super::{MR, MatA, NR, Offsets, Out, Start, Then};
use std::arch::x86_64::*;

/// The AVX2 tile: the scalar path's chains, eight columns to a register.
///
/// # Safety
/// The CPU must have AVX2 and FMA; `rows` must be 1 to `MR`; A's elements `(m0 + r, kk)`
/// for r < rows, kk < k must be in bounds (so a table of `a.ks` has at least k entries),
/// and so must the panel's first `k * NR` elements. (Row pointers are formed with
/// `wrapping_add`, so with k == 0 A may be empty: they are then never read.)
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
        // SAFETY: rows == 6: `tile_n::<6>`'s contract is this fn's for 6 rows (the same CPU
        // features, A's rows m0..m0 + 6, the panel).
        6 => unsafe { tile_n::<6, F>(k, a, m0, panel, acc) },
        // SAFETY: rows == 5: `tile_n::<5>`'s contract is this fn's for 5 rows (the same CPU
        // features, A's rows m0..m0 + 5, the panel).
        5 => unsafe { tile_n::<5, F>(k, a, m0, panel, acc) },
        // SAFETY: rows == 4: `tile_n::<4>`'s contract is this fn's for 4 rows (the same CPU
        // features, A's rows m0..m0 + 4, the panel).
        4 => unsafe { tile_n::<4, F>(k, a, m0, panel, acc) },
        // SAFETY: rows == 3: `tile_n::<3>`'s contract is this fn's for 3 rows (the same CPU
        // features, A's rows m0..m0 + 3, the panel).
        3 => unsafe { tile_n::<3, F>(k, a, m0, panel, acc) },
        // SAFETY: rows == 2: `tile_n::<2>`'s contract is this fn's for 2 rows (the same CPU
        // features, A's rows m0..m0 + 2, the panel).
        2 => unsafe { tile_n::<2, F>(k, a, m0, panel, acc) },
        // SAFETY: rows == 1 (the contract's 1..=MR less the arms above): `tile_n::<1>`'s
        // contract is this fn's for one row (the same CPU features, A's row m0, the panel).
        _ => unsafe { tile_n::<1, F>(k, a, m0, panel, acc) },
    }
}

/// [`tile`] for `R` (1 to `MR`) rows.
///
/// # Safety
/// As [`tile`] with `rows == R`.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn tile_n<const R: usize, const F: bool>(
    k: usize,
    a: MatA<'_>,
    m0: usize,
    panel: &[f32],
    acc: &mut [[f32; NR]; MR],
) {
    // SAFETY: the row pointers are formed with `wrapping_add` (defined for any offset; with
    // k == 0 A may be empty and they are never read); `rp[r] + koff(kk)` is
    // A's element `(m0 + r, kk)`, in bounds for kk < k, and `koff` is called only with
    // kk < k, within the table's at least k entries (`get_unchecked`); the panel holds
    // `k * NR` floats and the CPU has AVX2 and FMA, as `run` requires.
    unsafe {
        let mut rp = [a.data.as_ptr(); R];
        for (r, p) in rp.iter_mut().enumerate() {
            *p = a.data.as_ptr().wrapping_add(a.rows.at(m0 + r));
        }
        match a.ks {
            Offsets::Stride(s) => run::<R, F>(k, rp, |kk| kk * s, panel, acc),
            Offsets::Table(t) => run::<R, F>(k, rp, |kk| *t.offs.get_unchecked(kk), panel, acc),
        }
    }
}

/// The tile's chains: row r's term k reads `rp[r] + koff(k)`.
///
/// # Safety
/// The CPU must have AVX2 and FMA; for r < R and kk < k, `rp[r] + koff(kk)` must be a
/// readable float in `rp[r]`'s allocation (`koff` is called only with kk < k), and `panel`
/// must hold at least `k * NR` floats.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn run<const R: usize, const F: bool>(
    k: usize,
    rp: [*const f32; R],
    koff: impl Fn(usize) -> usize,
    panel: &[f32],
    acc: &mut [[f32; NR]; MR],
) {
    // SAFETY: `acc[r]` (an index the compiler checks) is `NR` = 16 floats, so the loads and
    // stores of eight at offsets 0 and 8 stay within it; `chains`' contract is this fn's, with
    // `panel.as_ptr()` pointing to the panel's `k * NR` floats.
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
///
/// # Safety
/// The CPU must have AVX2 and FMA; for r < R and kk < k, `rp[r] + koff(kk)` must be a
/// readable float in `rp[r]`'s allocation (`koff` is called only with kk < k), and `bp`
/// must point to `k * NR` readable floats.
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
    // SAFETY: term kk reads B's floats `kk * NR..kk * NR + 16` (`bp` advances `NR` a term)
    // and `rp[r] + koff(kk)`, kk < k: the contract's `k * NR` floats at `bp` and readable
    // floats of A; the CPU has AVX2 and FMA.
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
/// The CPU must have AVX2 and FMA; `panels` must be 1 to `WIDE / NR`; A's elements
/// `(row, kk)`, kk < k, must be in bounds (the row pointer is formed with `wrapping_add`,
/// so with k == 0 A may be empty); `b` must hold `panels` panels
/// (`panels * k * NR` floats).
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
                // SAFETY: `$v / 2` is `panels` (6 in the last arm: the contract's largest), so
                // `wide`'s contract is this fn's (features, A's row, `$v / 2` panels of `b`).
                unsafe { wide::<$v, true>(k, a, row, b, acc) }
            } else {
                // SAFETY: `$v / 2` is `panels` (6 in the last arm: the contract's largest), so
                // `wide`'s contract is this fn's (features, A's row, `$v / 2` panels of `b`).
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
///
/// # Safety
/// As [`wide_row`] with `panels == V / 2`.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn wide<const V: usize, const F: bool>(
    k: usize,
    a: MatA<'_>,
    row: usize,
    b: &[f32],
    acc: &mut [[[f32; NR]; 1]; super::WIDE / NR],
) {
    // SAFETY: `ap` is formed with `wrapping_add` (defined for any offset, never read when
    // k == 0), and `ap + a.ks.at(kk)` is A's element `(row, kk)`, in bounds for kk < k; `acc[v / 2][0]` (an index
    // the compiler checks) is 16 floats, read and written eight at offsets 0 and 8; B's read
    // `v / 2 * k * NR + kk * NR + v % 2 * 8` (eight floats) ends before `V / 2 * k * NR`
    // (v < V, kk < k), within `b`'s `V / 2` panels; the CPU has AVX2 and FMA.
    unsafe {
        let ap = a.data.as_ptr().wrapping_add(a.rows.at(row));
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
    pub(crate) m0: usize,
    pub n0: usize,
    pub(crate) panel: &'a [f32],
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
/// The CPU must have AVX2 and FMA; A's elements `(m0 + r, kk)`, r < MR, kk < k, the
/// panel's `k * NR` floats, C's and the skip's elements of the tile (rows `m0..m0 + MR`,
/// columns `n0..n0 + NR`) and, with `Start::ColBias(b)`, `b[n0..n0 + NR]` must be in bounds;
/// row pointers are formed with `wrapping_add` (with k == 0 A may be empty: they are never
/// read); C must be row-major (`out.cs == 1`) or column-major
/// (`out.rs == 1`).
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn full<const F: bool>(t: Full<'_>, c: &mut [f32]) {
    // SAFETY: the CPU has AVX2 and FMA (the contract). A: the row pointers are formed with
    // `wrapping_add` (defined for any offset), and `chains` reads only A's elements `(m0 + r, kk)`, kk < k, its table
    // unchecked at kk < k (within its at least k entries), and the panel's `k * NR` floats.
    // C: `cp` is C's element `(m0, n0)`; row-major, `cp + r * out.rs + 0..16` is row m0 + r's
    // columns n0..n0 + 16; column-major (`out.rs == 1`, else `rows_major`), `load6` and
    // `finish::<true>` at `cp + j * out.cs` touch column n0 + j's rows m0..m0 + 6: all the
    // tile's elements. The skip (only AddRelu reads it) has the same offsets, in bounds as
    // C's; the bias loads read `b[n0..n0 + 16]`.
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
            *p = a.data.as_ptr().wrapping_add(a.rows.at(m0 + r));
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
///
/// # Safety
/// The CPU must have AVX2 and FMA; `c` must point to eight (with `SIX`, six) floats to
/// write, readable too with `Fin::AddSum`; with `Fin::AddRelu`, `skip` must point to as
/// many readable floats (otherwise it is not read).
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn finish<const SIX: bool>(fin: Fin, x: __m256, c: *mut f32, skip: *const f32) {
    // SAFETY: `c` is read (AddSum) and written, `skip` read (AddRelu only), eight or six
    // floats each: those the contract makes readable and writable.
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
///
/// # Safety
/// The CPU must have AVX2 and FMA; `p` must point to eight (with `SIX`, six) readable floats.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn load<const SIX: bool>(p: *const f32) -> __m256 {
    // SAFETY: each branch reads the floats the contract makes readable: six (`load6`'s
    // contract) or eight (an unaligned load).
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
///
/// # Safety
/// The CPU must have AVX2 and FMA; `p` must point to six readable floats.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn load6(p: *const f32) -> __m256 {
    // SAFETY: the unaligned 128-bit load reads `p[0..4]` and the 64-bit `loadl` (no
    // alignment needed) `p[4..6]`: the six floats the contract makes readable.
    unsafe {
        let lo = _mm_loadu_ps(p);
        let hi = _mm_castsi128_ps(_mm_loadl_epi64(p.add(4) as *const __m128i));
        _mm256_set_m128(hi, lo)
    }
}

/// Lanes 0..6 of `v` to `p` (writes exactly six).
///
/// # Safety
/// The CPU must have AVX2 and FMA; `p` must point to six writable floats.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn store6(p: *mut f32, v: __m256) {
    // SAFETY: the unaligned 128-bit store writes `p[0..4]` and the 64-bit `storel` (no
    // alignment needed) `p[4..6]`: the six floats the contract makes writable.
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
