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
    pub(crate) fn available() -> Vec<Simd> {
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
    pub(crate) ks: Offsets<'a>,
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
    check((m, n, k), a, b, start, then, c.len(), out);
    #[cfg(target_arch = "x86_64")]
    if kernel.simd == Simd::Avx512 && (out.cs == 1 || out.rs == 1) {
        let product = avx512::Product {
            shape: (m, n, k),
            a,
            b,
            start,
            then,
            out,
        };
        // SAFETY: `Simd::Avx512` is only chosen where the CPU has AVX-512 F, VL and DQ, AVX2
        // and FMA (`Simd::available`); `check` keeps A, B, C, the skip
        // and the bias in bounds for every element of the product.
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
    // Row tiles outer, panels inner: a tile's rows of A are read from L1/L2 once per panel.
    // (Copying each tile of A into a contiguous block first was measured 1.7-2.6x slower
    // on the convolutions of docs/network.md's table.)
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
                // SAFETY: `Simd::Avx2` is only chosen where the CPU has AVX2 and FMA; `check`'s
                // asserts keep A, the panel, C and the skip in bounds for a full tile.
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

/// `gemm`'s bounds: every element of A, B, C, the skip and the normalisation that the product
/// reads or writes is in bounds, and the finishing is one the kernels know. The kernels'
/// `unsafe` code rests on these asserts.
fn check(
    (m, n, k): (usize, usize, usize),
    a: MatA<'_>,
    b: &[f32],
    start: Start<'_>,
    then: Then<'_>,
    c_len: usize,
    out: Out,
) {
    if k > 0 {
        let last = a.rows.last(m) + a.ks.last(k);
        assert!(last < a.data.len(), "gemm: A too short");
    }
    assert!(b.len() >= packed_len(k, n), "gemm: B too short");
    // Every path reads the bias's first `n` columns (the AVX2 path's full tiles by 8-lane
    // loads of `b[n0..n0 + 16]`, n0 + 16 <= n, which index only the first element): checked
    // here once for all of them.
    if let Start::ColBias(bias) = start {
        assert!(bias.len() >= n, "gemm: bias too short");
    }
    assert!(
        (m - 1) * out.rs + (n - 1) * out.cs < c_len,
        "gemm: C too short"
    );
    match then {
        Then::AddRelu(skip) => assert!(skip.len() >= c_len, "gemm: skip too short"),
        Then::Norm(cn) => {
            let cols = [cn.mean, cn.inv, cn.gamma, cn.beta];
            assert!(cols.iter().all(|v| v.len() >= n), "gemm: norm too short");
            match cn.after {
                Then::AddRelu(skip) => assert!(skip.len() >= c_len, "gemm: skip too short"),
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
        (_, false) => scalar::tile::<false>(rows, k, a, m0, panel, acc),
        (_, true) => scalar::tile::<true>(rows, k, a, m0, panel, acc),
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod scalar;

#[cfg(test)]
mod tests;
