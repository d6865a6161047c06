//! The portable path: the chains of every path, one element at a time (the reference the
//! vector paths are compared with bit for bit).

use super::{MR, MatA, NR};

/// One tile: `rows` (<= MR) rows from `m0`, all `NR` columns of the packed panel, each
/// element's terms in ascending k.
pub(super) fn tile<const FUSED: bool>(
    rows: usize,
    k: usize,
    a: MatA<'_>,
    m0: usize,
    panel: &[f32],
    acc: &mut [[f32; NR]; MR],
) {
    for kk in 0..k {
        let b = &panel[kk * NR..kk * NR + NR];
        for (r, row) in acc.iter_mut().enumerate().take(rows) {
            let av = a.at(m0 + r, kk);
            for (x, &bv) in row.iter_mut().zip(b) {
                *x = if FUSED {
                    av.mul_add(bv, *x)
                } else {
                    *x + av * bv
                };
            }
        }
    }
}
