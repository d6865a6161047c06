//! The one matrix-product kernel of the network engine (docs/network.md, "Kernels"):
//! `C[m][n] = start + sum_k A[m][k] * B[k][n]`, every term added in ascending `k`, with a
//! separate multiply and add or a fused one ([`Arith`]).
//!
//! **Bit-exactness.** Each output element is one chain of operations: its start value, then
//! for k = 0, 1, ... in order `acc = acc + a * b` (two roundings: [`Arith::Separate`]) or
//! `acc = fma(a, b, acc)` (one rounding: [`Arith::Fused`]); Rust never fuses or reassociates
//! float arithmetic on its own. The kernel vectorises *across* outputs (a tile of `MR` rows
//! by `NR` columns held in registers), never along a sum, so the vector width, the tile, the
//! batch the columns belong to and the thread count do not change any element's chain. The
//! scalar, AVX2 and AVX-512 paths run the same chains for either arithmetic; `tests` compares
//! their bits.
//!
//! The B operand comes packed ([`pack`]): panels of `NR` columns, each `[k][NR]`, zero beyond
//! the last column. The networks pack their weights once per parameter version (they are B in
//! every forward product), so a product only streams A and its panels.

/// Columns per panel (two AVX2 vectors).
pub(crate) const NR: usize = 16;
/// Rows per register tile (6 x 16: twelve AVX2 accumulators, the shape of BLIS's Haswell
/// kernel).
const MR: usize = 6;

/// The vector path that runs the kernel.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Simd {
    /// Portable code (the compiler may still use the baseline's SSE2 across outputs; the
    /// fused arithmetic calls `f32::mul_add`, the correctly rounded software fma where the
    /// CPU has none: right, and slow).
    Scalar,
    /// 256-bit AVX2 vectors with FMA3, chosen at run time where the CPU has both.
    Avx2,
    /// 512-bit AVX-512 vectors (F, VL and DQ) with FMA3: 32 registers, so a tile of up to
    /// 8 rows by 32 columns, and masked loads and stores, so every tile (a 7 x 7 board's
    /// 49 squares are 7 tiles of 7 rows) is finished in registers.
    Avx512,
}

impl Simd {
    /// The fastest path this CPU offers.
    pub fn detect() -> Simd {
        #[cfg(target_arch = "x86_64")]
        if Simd::has_avx512() {
            return Simd::Avx512;
        }
        #[cfg(target_arch = "x86_64")]
        if Simd::has_avx2() {
            return Simd::Avx2;
        }
        Simd::Scalar
    }

    /// Every path this CPU can run (tests compare them).
    pub fn available() -> Vec<Simd> {
        let mut v = vec![Simd::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            if Simd::has_avx2() {
                v.push(Simd::Avx2);
            }
            if Simd::has_avx512() {
                v.push(Simd::Avx512);
            }
        }
        v
    }

    /// The path named `name` (`scalar`, `avx2`, `avx512`), if this CPU has it: benches
    /// measure the paths side by side in one binary.
    pub fn named(name: &str) -> Option<Simd> {
        let simd = match name {
            "scalar" => Simd::Scalar,
            "avx2" => Simd::Avx2,
            "avx512" => Simd::Avx512,
            _ => return None,
        };
        Simd::available().contains(&simd).then_some(simd)
    }

    #[cfg(target_arch = "x86_64")]
    fn has_avx2() -> bool {
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
    }

    #[cfg(target_arch = "x86_64")]
    fn has_avx512() -> bool {
        Simd::has_avx2()
            && std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512vl")
            && std::is_x86_feature_detected!("avx512dq")
    }
}

/// How each term joins an element's running sum.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Arith {
    /// `acc + a * b`, rounded after the multiply and after the add: the engine's arithmetic
    /// before `learner.network.arithmetic` existed (docs/network.md, "Kernels"), kept so that
    /// those runs verify.
    Separate,
    /// `fma(a, b, acc)`, rounded once: the arithmetic of ONNX Runtime's and PyTorch's CPU
    /// kernels, and 1.2-1.3x faster here (one instruction a term instead of two).
    #[default]
    Fused,
}

/// The kernel a network runs: its vector path and its arithmetic.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    pub simd: Simd,
    pub arith: Arith,
}

/// Offsets along one axis of A: `i * stride`, or a table's `i`-th entry. A table carries
/// its largest entry, so that `gemm`'s bounds check does not scan it on every call (the scan
/// was 1-2% of a 3x3 net's inference); only [`Table::first`] (and tests' `Offsets::table`)
/// build one, from the entries themselves, so the kernels' bounds rest on no caller's word.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Offsets<'a> {
    Stride(usize),
    Table(TableRef<'a>),
}

/// A table's entries and the largest of them (fields private to this module).
#[derive(Copy, Clone, Debug)]
pub(crate) struct TableRef<'a> {
    offs: &'a [usize],
    max: usize,
}

impl<'a> Offsets<'a> {
    /// A table and its largest entry, found here.
    #[cfg(test)]
    pub(crate) fn table(t: &'a [usize]) -> Offsets<'a> {
        let max = t.iter().copied().max().unwrap_or(0);
        Offsets::Table(TableRef { offs: t, max })
    }

    #[inline(always)]
    fn at(&self, i: usize) -> usize {
        match *self {
            Offsets::Stride(s) => i * s,
            Offsets::Table(t) => t.offs[i],
        }
    }

    /// The largest offset of the first `n` (n > 0).
    fn last(&self, n: usize) -> usize {
        match *self {
            Offsets::Stride(s) => (n - 1) * s,
            Offsets::Table(t) if n == t.offs.len() => t.max,
            Offsets::Table(t) => t.offs[..n].iter().copied().max().unwrap_or(0),
        }
    }
}

/// An offset table kept with the largest entry of each of its prefixes, so that a product
/// reading through its first `n` entries is bounds-checked without scanning them (the
/// convolutions' square and term tables, `engine::Bordered`).
#[derive(Clone, Debug)]
pub(crate) struct Table {
    offs: Vec<usize>,
    /// `max[n - 1]`: the largest of the first `n` offsets.
    max: Vec<usize>,
}

impl Table {
    pub(crate) fn new(offs: Vec<usize>) -> Table {
        let max = offs
            .iter()
            .scan(0, |m, &o| {
                *m = o.max(*m);
                Some(*m)
            })
            .collect();
        Table { offs, max }
    }

    /// The first `n` offsets (n > 0), as a product reads them.
    pub(crate) fn first(&self, n: usize) -> Offsets<'_> {
        Offsets::Table(TableRef {
            offs: &self.offs[..n],
            max: self.max[n - 1],
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.offs.len()
    }
}

/// A matrix read in place: element `(m, k)` at `data[rows.at(m) + ks.at(k)]`. Strided views
/// cover row- and column-major matrices; tables let a convolution read its input planes
/// (held between zero borders) as the im2col matrix without building it.
#[derive(Copy, Clone, Debug)]
pub(crate) struct MatA<'a> {
    pub data: &'a [f32],
    pub rows: Offsets<'a>,
    pub ks: Offsets<'a>,
}

impl<'a> MatA<'a> {
    /// Element `(m, k)` at `data[m * rs + k * ks]`.
    pub(crate) fn strided(data: &'a [f32], rs: usize, ks: usize) -> MatA<'a> {
        MatA {
            data,
            rows: Offsets::Stride(rs),
            ks: Offsets::Stride(ks),
        }
    }

    /// The transpose: element `(k, m)` of the result is `(m, k)` of this one.
    pub(crate) fn transposed(self) -> MatA<'a> {
        MatA {
            rows: self.ks,
            ks: self.rows,
            ..self
        }
    }

    #[inline(always)]
    fn at(&self, m: usize, k: usize) -> f32 {
        self.data[self.rows.at(m) + self.ks.at(k)]
    }
}

/// Where output element `(m, n)` lives in C: `m * rs + n * cs`.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Out {
    pub rs: usize,
    pub cs: usize,
}

impl Out {
    /// A row-major matrix of `cols` columns.
    pub(crate) fn rows(cols: usize) -> Out {
        Out { rs: cols, cs: 1 }
    }

    /// Column-major: a `[column][row]` layout with `rows` rows (a convolution's output
    /// `[channel][square]` with squares as rows).
    pub(crate) fn cols(rows: usize) -> Out {
        Out { rs: 1, cs: rows }
    }
}

/// Packed panels whose first element sits on a 64-byte boundary (a cache line). Every
/// panel row is `NR` floats (64 bytes) and every product's panels start a whole number of
/// rows in, so no vector load of B spans two lines. (A `Vec<f32>` of this size is 16-byte
/// aligned: every 64-byte load of a panel then touched two lines.)
#[derive(Debug, Default)]
pub(crate) struct Panels {
    buf: Vec<f32>,
    at: usize,
    len: usize,
}

impl Panels {
    /// Makes room for `len` floats (at least), zero where new.
    pub(crate) fn grow(&mut self, len: usize) {
        if len > self.len {
            self.set_len(len);
        }
    }

    /// Exactly `len` floats, the first `len.min(old)` kept, the rest zero.
    pub(crate) fn set_len(&mut self, len: usize) {
        if len == self.len {
            return;
        }
        const LINE: usize = 64 / std::mem::size_of::<f32>();
        let mut buf = vec![0.0f32; len + LINE - 1];
        let at = buf.as_ptr().align_offset(64).min(LINE - 1);
        let keep = len.min(self.len);
        buf[at..at + keep].copy_from_slice(&self[..keep]);
        *self = Panels { buf, at, len };
    }
}

impl Clone for Panels {
    /// A copy aligned in its own allocation (a cloned `Vec` may sit elsewhere mod 64).
    fn clone(&self) -> Panels {
        let mut c = Panels::default();
        c.set_len(self.len);
        c.copy_from_slice(self);
        c
    }
}

impl std::ops::Deref for Panels {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        &self.buf[self.at..self.at + self.len]
    }
}

impl std::ops::DerefMut for Panels {
    fn deref_mut(&mut self) -> &mut [f32] {
        &mut self.buf[self.at..self.at + self.len]
    }
}

/// Floats of the packed panels of a `k x n` matrix.
pub(crate) fn packed_len(k: usize, n: usize) -> usize {
    n.div_ceil(NR) * k * NR
}

/// Packs the `k x n` matrix B into panels of `NR` columns, panel after panel, each
/// `[k][NR]`: `fill(n0, panel)` writes columns `n0..n0 + NR` (zeros past `n`).
pub(crate) fn pack(k: usize, n: usize, into: &mut [f32], mut fill: impl FnMut(usize, &mut [f32])) {
    for p in 0..n.div_ceil(NR) {
        fill(p * NR, &mut into[p * k * NR..(p + 1) * k * NR]);
    }
}

/// An output element's start value, and what happens to the finished sum.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Start<'a> {
    /// `0 + terms`.
    Zero,
    /// `C + terms` (the sum continues the element in C).
    Keep,
    /// `C + (0 + terms)`: a separate sum added to C once at the end.
    AddSum,
    /// `bias[n] + terms`.
    ColBias(&'a [f32]),
}

/// Applied to a finished element before it is stored (not with `AddSum`).
#[derive(Copy, Clone, Debug)]
pub(crate) enum Then<'a> {
    Nothing,
    /// `max(x, 0)` as `if x < 0 { 0 } else { x }`.
    Relu,
    /// `relu(x + skip[i])` with `i` the element's index in C.
    AddRelu(&'a [f32]),
    /// Batch normalisation at inference, then its `after` (not itself a `Norm`): the
    /// convolution and its normalisation as one product, whose elements are those of the
    /// two run one after the other (the same operations in the same order).
    Norm(&'a ColNorm<'a>),
}

/// Batch normalisation at inference over the columns (channels): column n's element x
/// becomes `gamma[n] * ((x - mean[n]) * inv[n]) + beta[n]` (`engine::norm_forward`'s
/// operations), then `after`.
#[derive(Copy, Clone, Debug)]
pub(crate) struct ColNorm<'a> {
    pub mean: &'a [f32],
    pub inv: &'a [f32],
    pub gamma: &'a [f32],
    pub beta: &'a [f32],
    pub after: Then<'a>,
}

impl ColNorm<'_> {
    #[inline(always)]
    fn apply(&self, n: usize, x: f32) -> f32 {
        self.gamma[n] * ((x - self.mean[n]) * self.inv[n]) + self.beta[n]
    }
}

#[inline(always)]
fn relu(x: f32) -> f32 {
    if x < 0.0 { 0.0 } else { x }
}

/// `C = start + A B` over `m x n` outputs and `k` terms, with B packed by [`pack`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm(
    kernel: Kernel,
    (m, n, k): (usize, usize, usize),
    a: MatA<'_>,
    b: &[f32],
    start: Start<'_>,
    then: Then<'_>,
    c: &mut [f32],
    out: Out,
) {
    if m == 0 || n == 0 {
        return;
    }
    if k > 0 {
        let last = a.rows.last(m) + a.ks.last(k);
        assert!(last < a.data.len(), "gemm: A too short");
    }
    assert!(b.len() >= packed_len(k, n), "gemm: B too short");
    assert!(
        (m - 1) * out.rs + (n - 1) * out.cs < c.len(),
        "gemm: C too short"
    );
    // Row tiles outer, panels inner: a tile's rows of A are read from L1/L2 once per panel.
    // (Copying each tile of A into a contiguous block first was measured 1.7-2.6x slower
    // on the convolutions of docs/network.md's table.)
    match then {
        Then::AddRelu(skip) => assert!(skip.len() >= c.len(), "gemm: skip too short"),
        Then::Norm(cn) => {
            let cols = [cn.mean, cn.inv, cn.gamma, cn.beta];
            assert!(cols.iter().all(|v| v.len() >= n), "gemm: norm too short");
            match cn.after {
                Then::AddRelu(skip) => assert!(skip.len() >= c.len(), "gemm: skip too short"),
                Then::Norm(_) => panic!("gemm: a norm after a norm"),
                _ => {}
            }
            assert!(
                !matches!(start, Start::AddSum),
                "gemm: a norm after a separate sum"
            );
        }
        _ => {}
    }
    #[cfg(target_arch = "x86_64")]
    if kernel.simd == Simd::Avx512 && (out.cs == 1 || out.rs == 1) {
        if let Start::ColBias(bias) = start {
            assert!(bias.len() >= n, "gemm: bias too short");
        }
        let product = avx512::Product {
            shape: (m, n, k),
            a,
            b,
            start,
            then,
            out,
        };
        // SAFETY: `Simd::Avx512` is only chosen where the CPU has AVX-512 F, VL and DQ, AVX2
        // and FMA (`Simd::available`); the asserts above keep A, B, C, the skip and the bias
        // in bounds for every element of the product.
        unsafe { avx512::product(kernel.arith, product, c) };
        return;
    }
    // The AVX-512 path's products of another layout run the AVX2 path (the same bits).
    let kernel = match kernel.simd {
        Simd::Avx512 => Kernel {
            simd: Simd::Avx2,
            ..kernel
        },
        _ => kernel,
    };
    // A last row alone (a 7 x 7 board's 49 squares are 8 tiles and one row) runs across
    // all panels at once: one row of a panel has two chains, too few to hide the adds'
    // latency, while a row across six panels has twelve.
    let wide_tail = kernel.simd == Simd::Avx2 && m % MR == 1 && n > NR;
    let m_tiles = if wide_tail { m - 1 } else { m };
    if wide_tail {
        wide_row(kernel, (m - 1, n, k), a, b, start, then, c, out);
    }
    let panels = n.div_ceil(NR);
    for p in 0..panels {
        let panel = &b[p * k * NR..(p + 1) * k * NR];
        let n0 = p * NR;
        let w = NR.min(n - n0);
        let mut m0 = 0;
        while m0 < m_tiles {
            let rows = MR.min(m_tiles - m0);
            #[cfg(target_arch = "x86_64")]
            let normed = matches!(then, Then::Norm(_));
            if kernel.simd == Simd::Avx2
                && rows == MR
                && w == NR
                && (out.cs == 1 || out.rs == 1)
                && !normed
            {
                let tile = avx2::Full {
                    k,
                    a,
                    m0,
                    n0,
                    panel,
                    start,
                    then,
                    out,
                };
                // SAFETY: `Simd::Avx2` is only chosen where the CPU has AVX2 and FMA; the
                // asserts above keep A, the panel, C and the skip in bounds for a full tile.
                unsafe {
                    match kernel.arith {
                        Arith::Fused => avx2::full::<true>(tile, c),
                        Arith::Separate => avx2::full::<false>(tile, c),
                    }
                }
                m0 += rows;
                continue;
            }
            let mut acc = [[0.0f32; NR]; MR];
            load(&mut acc[..rows], m0, n0, w, start, c, out);
            run_tile(kernel, rows, k, a, m0, panel, &mut acc);
            store(&acc[..rows], m0, n0, w, start, then, c, out);
            m0 += rows;
        }
    }
}

/// Row `row` of C over all `n` columns, up to `WIDE` columns (whole panels) at a time:
/// start values and finishing as [`load`] and [`store`] do them, the chains as the AVX2
/// tile's (each element's terms in ascending k).
#[allow(clippy::too_many_arguments)]
fn wide_row(
    kernel: Kernel,
    (row, n, k): (usize, usize, usize),
    a: MatA<'_>,
    b: &[f32],
    start: Start<'_>,
    then: Then<'_>,
    c: &mut [f32],
    out: Out,
) {
    const PANELS: usize = WIDE / NR;
    let mut n0 = 0;
    while n0 < n {
        let cols = WIDE.min(n - n0);
        let panels = cols.div_ceil(NR);
        let mut acc = [[[0.0f32; NR]; 1]; PANELS];
        for (p, tile) in acc[..panels].iter_mut().enumerate() {
            let w = NR.min(cols - p * NR);
            load(tile, row, n0 + p * NR, w, start, c, out);
        }
        let b = &b[n0 / NR * k * NR..(n0 / NR + panels) * k * NR];
        #[cfg(target_arch = "x86_64")]
        // SAFETY: only called with `Simd::Avx2` (the CPU has AVX2 and FMA); `gemm` checked
        // A's row and B's panels.
        unsafe {
            avx2::wide_row(kernel.arith, k, a, row, b, panels, &mut acc)
        };
        for (p, tile) in acc[..panels].iter().enumerate() {
            let w = NR.min(cols - p * NR);
            store(tile, row, n0 + p * NR, w, start, then, c, out);
        }
        n0 += cols;
    }
}

/// Columns of one [`wide_row`] pass: six panels, twelve accumulators.
const WIDE: usize = 6 * NR;

fn load(
    acc: &mut [[f32; NR]],
    m0: usize,
    n0: usize,
    w: usize,
    start: Start<'_>,
    c: &[f32],
    out: Out,
) {
    for (r, row) in acc.iter_mut().enumerate() {
        let base = (m0 + r) * out.rs + n0 * out.cs;
        match start {
            Start::Zero | Start::AddSum => {}
            Start::Keep if out.cs == 1 => row[..w].copy_from_slice(&c[base..base + w]),
            Start::Keep => {
                for (j, x) in row[..w].iter_mut().enumerate() {
                    *x = c[base + j * out.cs];
                }
            }
            Start::ColBias(b) => row[..w].copy_from_slice(&b[n0..n0 + w]),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn store(
    acc: &[[f32; NR]],
    m0: usize,
    n0: usize,
    w: usize,
    start: Start<'_>,
    then: Then<'_>,
    c: &mut [f32],
    out: Out,
) {
    // One loop per case, so that no element pays for the choice.
    let tile = (acc, m0, n0, w, out);
    match (start, then) {
        (Start::AddSum, _) => store_each(tile, c, |old, _, x| old + x),
        (_, Then::Nothing) => store_each(tile, c, |_, _, x| x),
        (_, Then::Relu) => store_each(tile, c, |_, _, x| relu(x)),
        (_, Then::AddRelu(skip)) => store_each(tile, c, |_, at, x| relu(x + skip[at])),
        (_, Then::Norm(cn)) => store_norm(tile, cn, c),
    }
}

/// `store` with a normalisation: column n's element normalised, then `cn.after`.
fn store_norm(
    (acc, m0, n0, w, out): (&[[f32; NR]], usize, usize, usize, Out),
    cn: &ColNorm<'_>,
    c: &mut [f32],
) {
    for (r, row) in acc.iter().enumerate() {
        for (j, &x) in row[..w].iter().enumerate() {
            let at = (m0 + r) * out.rs + (n0 + j) * out.cs;
            let y = cn.apply(n0 + j, x);
            c[at] = match cn.after {
                Then::Nothing | Then::Norm(_) => y,
                Then::Relu => relu(y),
                Then::AddRelu(skip) => relu(y + skip[at]),
            };
        }
    }
}

/// `c[at] = f(c[at], at, x)` for each element `x` of the tile at its place `at` in C.
#[inline(always)]
fn store_each(
    (acc, m0, n0, w, out): (&[[f32; NR]], usize, usize, usize, Out),
    c: &mut [f32],
    f: impl Fn(f32, usize, f32) -> f32,
) {
    for (r, row) in acc.iter().enumerate() {
        let base = (m0 + r) * out.rs + n0 * out.cs;
        if out.cs == 1 {
            // A row of the tile is contiguous in C: one loop the compiler vectorises.
            let dst = &mut c[base..base + w];
            for (j, (d, &x)) in dst.iter_mut().zip(&row[..w]).enumerate() {
                *d = f(*d, base + j, x);
            }
        } else {
            for (j, &x) in row[..w].iter().enumerate() {
                let at = base + j * out.cs;
                c[at] = f(c[at], at, x);
            }
        }
    }
}

/// One tile: `rows` (<= MR) rows from `m0`, all `NR` columns of the packed panel.
fn run_tile(
    kernel: Kernel,
    rows: usize,
    k: usize,
    a: MatA<'_>,
    m0: usize,
    panel: &[f32],
    acc: &mut [[f32; NR]; MR],
) {
    let fused = kernel.arith == Arith::Fused;
    match (kernel.simd, fused) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Simd::Avx2` is only chosen where the CPU has AVX2 and FMA
        // (`Simd::detect`); `gemm` checked that A's and the panel's indices are in bounds.
        (Simd::Avx2, false) => unsafe { avx2::tile::<false>(rows, k, a, m0, panel, acc) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        (Simd::Avx2, true) => unsafe { avx2::tile::<true>(rows, k, a, m0, panel, acc) },
        (_, false) => tile_scalar::<false>(rows, k, a, m0, panel, acc),
        (_, true) => tile_scalar::<true>(rows, k, a, m0, panel, acc),
    }
}

fn tile_scalar<const FUSED: bool>(
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

#[cfg(target_arch = "x86_64")]
mod avx2 {
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
                (_, Then::AddRelu(sk)) => {
                    (Fin::AddRelu, sk.as_ptr().add(m0 * out.rs + n0 * out.cs))
                }
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
}

/// The AVX-512 path: the scalar path's chains, sixteen columns to a register, in tiles of up
/// to 8 rows by two panels (32 columns: sixteen of the 32 registers accumulate), every tile
/// finished in registers. The rows of a tile are the first of 8, 7 and 6 that divides the
/// product's rows (a 7 x 7 board's 49 squares are 7 tiles of 7, a 3x3 convolution's 288
/// weight-gradient rows 36 tiles of 8), so no product ends in a lone row; partial tiles (rows
/// or columns) use masked loads and stores, which touch no element outside the product.
#[cfg(target_arch = "x86_64")]
mod avx512 {
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
    /// B's packed panels, C's and the skip's elements, and the bias's first `n` must be in
    /// bounds, and C must be row-major (`out.cs == 1`) or column-major (`out.rs == 1`).
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
    pub(super) unsafe fn product(arith: Arith, p: Product<'_>, c: &mut [f32]) {
        unsafe {
            match arith {
                Arith::Fused => product_of::<true>(p, c),
                Arith::Separate => product_of::<false>(p, c),
            }
        }
    }

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
                            $(($r, true) => unsafe { tile::<$r, 2, F>(&p, m0, q, cp) },)*
                            $(($r, false) => unsafe { tile::<$r, 1, F>(&p, m0, q, cp) },)*
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
    /// As [`product`]; `m0 + R <= m`, and the tile's last panel holds at least one column.
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
    #[inline]
    unsafe fn tile<const R: usize, const P: usize, const F: bool>(
        p: &Product<'_>,
        m0: usize,
        q: usize,
        c: *mut f32,
    ) {
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
                (_, Then::AddRelu(sk)) => {
                    (Fin::AddRelu, sk.as_ptr().add(m0 * out.rs + n0 * out.cs))
                }
            };
            if out.cs == 1 {
                finish_rows::<R, P>(fin, &acc, widths, out.rs, cp, skip);
            } else {
                finish_cols::<R, P>(fin, &acc, widths, out.cs, cp, skip);
            }
        }
    }

    /// The tile's start values: zero, the bias, or C's elements.
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
    #[inline]
    unsafe fn start<const R: usize, const P: usize>(
        p: &Product<'_>,
        n0: usize,
        widths: [usize; P],
        cp: *const f32,
        acc: &mut [[__m512; P]; R],
    ) {
        unsafe {
            let out = p.out;
            match p.start {
                Start::Zero | Start::AddSum => {}
                Start::ColBias(b) => {
                    for j in 0..P {
                        let v =
                            _mm512_maskz_loadu_ps(lanes(widths[j]), b.as_ptr().add(n0 + j * NR));
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
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
    #[inline]
    unsafe fn chains<const R: usize, const P: usize, const F: bool>(
        k: usize,
        rp: [*const f32; R],
        koff: impl Fn(usize) -> usize,
        bp: *const f32,
        acc: &mut [[__m512; P]; R],
    ) {
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
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
    #[inline]
    unsafe fn norm<const R: usize, const P: usize>(
        cn: &ColNorm<'_>,
        n0: usize,
        widths: [usize; P],
        acc: &mut [[__m512; P]; R],
    ) {
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
    /// Called only from [`tile`], whose CPU has the path's features, with its bounds.
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
    /// Called only from [`tile`], whose CPU has the path's features, with its bounds.
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
    /// Called only from [`tile`], whose CPU has the path's features, with its bounds.
    // Without target features, so that it may be inlined always (into `tile`, which
    // has them; the intrinsics are then inlined there).
    #[inline(always)]
    unsafe fn column<const F: u8>(v: __m256, rmask: u8, c: *mut f32, skip: *const f32) {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{stream, uniform_index};

    fn random(n: usize, seed: u64) -> Vec<f32> {
        let mut rng = stream(seed, "gemm-test");
        (0..n)
            .map(|_| match uniform_index(&mut rng, 4) {
                0 => 0.0,
                1 => -1.25,
                _ => uniform_index(&mut rng, 1000) as f32 / 97.0 - 5.0,
            })
            .collect()
    }

    /// The reference: each element's chain written out one term at a time.
    fn reference(
        arith: Arith,
        (m, n, k): (usize, usize, usize),
        a: &[f32],
        b: &[f32],
        start: &str,
        bias: &[f32],
        c: &mut [f32],
    ) {
        for i in 0..m {
            for j in 0..n {
                let mut acc = match start {
                    "zero" | "addsum" => 0.0f32,
                    "keep" => c[i * n + j],
                    _ => bias[j],
                };
                for kk in 0..k {
                    let (x, y) = (a[i * k + kk], b[kk * n + j]);
                    acc = match arith {
                        Arith::Separate => acc + x * y,
                        Arith::Fused => x.mul_add(y, acc),
                    };
                }
                c[i * n + j] = if start == "addsum" {
                    c[i * n + j] + acc
                } else {
                    acc
                };
            }
        }
    }

    /// Every path gives every element the reference chain's bits, for either arithmetic,
    /// whatever the shape (tails of rows and columns included); the two arithmetics differ.
    #[test]
    fn every_path_matches_the_reference_bits() {
        let mut differ = false;
        for arith in [Arith::Separate, Arith::Fused] {
            differ |= paths_match_the_reference(arith);
        }
        assert!(
            differ,
            "fused and separate arithmetic gave the same bits everywhere"
        );
    }

    /// Whether `arith`'s results differ from the other arithmetic's anywhere.
    fn paths_match_the_reference(arith: Arith) -> bool {
        let other = match arith {
            Arith::Separate => Arith::Fused,
            Arith::Fused => Arith::Separate,
        };
        let mut differ = false;
        for (m, n, k) in [
            (1, 1, 1),
            (4, 16, 3),
            (5, 17, 9),
            (7, 33, 50),
            (9, 3, 0),
            (3, 40, 288),
            (13, 48, 20),
            (7, 100, 5),
            // The AVX-512 path's tile rows (8, 7, 6) and its partial tiles.
            (49, 32, 27),
            (42, 64, 7),
            (16, 20, 3),
            (15, 50, 4),
            // One row across many panels (a dense head at batch 1).
            (1, 300, 37),
            (1, 70, 5),
        ] {
            let a = random(m * k, 1);
            let b = random(k * n, 2);
            let bias = random(m.max(n), 3);
            let c0 = random(m * n, 4);
            let skip = random(m * n, 5);
            for start in ["zero", "keep", "addsum", "col"] {
                let thens = ["nothing", "relu", "addrelu"];
                for then in thens
                    .into_iter()
                    .chain(["norm-nothing", "norm-relu", "norm-addrelu"])
                {
                    if start == "addsum" && then != "nothing" {
                        continue;
                    }
                    let mut want = c0.clone();
                    reference(arith, (m, n, k), &a, &b, start, &bias, &mut want);
                    let mut theirs = c0.clone();
                    reference(other, (m, n, k), &a, &b, start, &bias, &mut theirs);
                    differ |= want != theirs;
                    let norm = norm_columns(n);
                    for (at, (x, s)) in want.iter_mut().zip(&skip).enumerate() {
                        if let Some(after) = then.strip_prefix("norm-") {
                            *x = norm.apply(at % n, *x);
                            *x = finished(after, *x, *s);
                        } else {
                            *x = finished(then, *x, *s);
                        }
                    }
                    let case = Case {
                        arith,
                        shape: (m, n, k),
                        start,
                        then,
                    };
                    every_path_matches(case, &a, &b, &bias, &skip, &c0, &want);
                }
            }
        }
        differ
    }

    /// The finishing operation `then` of an element `x` whose skip is `s`.
    fn finished(then: &str, x: f32, s: f32) -> f32 {
        match then {
            "relu" => relu(x),
            "addrelu" => relu(x + s),
            _ => x,
        }
    }

    /// Normalisation constants for `n` columns (variances as `inv`, some of them tiny).
    fn norm_columns(n: usize) -> ColNorm<'static> {
        let leak = |v: Vec<f32>| -> &'static [f32] { Vec::leak(v) };
        let inv = random(n, 8).iter().map(|v| v.abs() + 0.01).collect();
        ColNorm {
            mean: leak(random(n, 6)),
            inv: leak(inv),
            gamma: leak(random(n, 7)),
            beta: leak(random(n, 9)),
            after: Then::Nothing,
        }
    }

    struct Case<'a> {
        arith: Arith,
        shape: (usize, usize, usize),
        start: &'a str,
        then: &'a str,
    }

    /// Every vector path, A strided and through tables, C row- and column-major, gives
    /// `want` (row-major) from `c0` (row-major).
    fn every_path_matches(
        case: Case<'_>,
        a: &[f32],
        b: &[f32],
        bias: &[f32],
        skip: &[f32],
        c0: &[f32],
        want: &[f32],
    ) {
        let Case {
            arith,
            shape: (m, n, k),
            start,
            then,
        } = case;
        let mut bp = vec![0.0; packed_len(k, n)];
        pack(k, n, &mut bp, |n0: usize, p: &mut [f32]| {
            for kk in 0..k {
                for j in 0..NR {
                    p[kk * NR + j] = if n0 + j < n { b[kk * n + n0 + j] } else { 0.0 };
                }
            }
        });
        // The same matrix strided and through offset tables, row- and column-major (rows at
        // consecutive offsets: the AVX-512 tile's one-pointer case).
        let rows: Vec<usize> = (0..m).map(|i| i * k).collect();
        let ks: Vec<usize> = (0..k).collect();
        let strided = MatA::strided(a, k, 1);
        let tables = MatA {
            data: a,
            rows: Offsets::table(&rows),
            ks: Offsets::table(&ks),
        };
        let at: Vec<f32> = (0..m * k).map(|x| a[(x % m) * k + x / m]).collect();
        let (rows_t, ks_t): (Vec<usize>, Vec<usize>) =
            ((0..m).collect(), (0..k).map(|kk| kk * m).collect());
        let strided_t = MatA::strided(&at, 1, m);
        let tables_t = MatA {
            data: &at,
            rows: Offsets::table(&rows_t),
            ks: Offsets::table(&ks_t),
        };
        // Column-major: element (i, j) at j * m + i.
        let transpose =
            |v: &[f32]| -> Vec<f32> { (0..m * n).map(|at| v[(at % m) * n + at / m]).collect() };
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for simd in Simd::available() {
            for a in [strided, tables, strided_t, tables_t] {
                for col_major in [false, true] {
                    let (out, mut c, sk) = if col_major {
                        (Out::cols(m), transpose(c0), transpose(skip))
                    } else {
                        (Out::rows(n), c0.to_vec(), skip.to_vec())
                    };
                    let s = match start {
                        "zero" => Start::Zero,
                        "keep" => Start::Keep,
                        "addsum" => Start::AddSum,
                        _ => Start::ColBias(bias),
                    };
                    let after = |then: &str| match then {
                        "relu" => Then::Relu,
                        "addrelu" => Then::AddRelu(&sk),
                        _ => Then::Nothing,
                    };
                    let norm = then.strip_prefix("norm-").map(|t| ColNorm {
                        after: after(t),
                        ..norm_columns(n)
                    });
                    let t = match &norm {
                        Some(cn) => Then::Norm(cn),
                        None => after(then),
                    };
                    let kernel = Kernel { simd, arith };
                    gemm(kernel, (m, n, k), a, &bp, s, t, &mut c, out);
                    let got = if col_major {
                        (0..m * n).map(|at| c[(at % n) * m + at / n]).collect()
                    } else {
                        c
                    };
                    assert_eq!(
                        bits(&got),
                        bits(want),
                        "{simd:?} {arith:?} {start} {then} col-major {col_major} {m}x{n}x{k}"
                    );
                }
            }
        }
    }
}
