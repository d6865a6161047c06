use super::*;
use tabula_core::rng::{stream, uniform_index};

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
