use super::*;
use crate::rng::{stream, uniform_index};

fn planes(c: usize, h: usize, w: usize) -> Planes {
    Planes {
        channels: c,
        height: h,
        width: w,
    }
}

fn archs() -> Vec<Arch> {
    vec![
        Arch::Mlp {
            hidden: vec![12, 8],
        },
        Arch::Mlp { hidden: vec![] },
        Arch::ResNet {
            blocks: 2,
            channels: 4,
        },
    ]
}

fn random_examples(input: Planes, actions: usize, n: usize, seed: u64) -> Vec<Example> {
    let mut rng = stream(seed, "nn-test-examples");
    (0..n)
        .map(|_| {
            let x = (0..input.len())
                .map(|_| match uniform_index(&mut rng, 3) {
                    0 => 0.0,
                    1 => 1.0,
                    _ => 0.37,
                })
                .collect();
            let mut legal: Vec<u16> = (0..actions as u16)
                .filter(|_| uniform_index(&mut rng, 3) > 0)
                .collect();
            if legal.is_empty() {
                legal.push(0);
            }
            let mut target: Vec<f32> = legal
                .iter()
                .map(|_| uniform_index(&mut rng, 5) as f32)
                .collect();
            target[0] += 1.0;
            let t: f32 = target.iter().sum();
            target.iter_mut().for_each(|x| *x /= t);
            Example {
                x,
                legal,
                target,
                z: [0.0, 0.5, 1.0][uniform_index(&mut rng, 3)],
            }
        })
        .collect()
}

/// The loss of one example in f64 from a forward pass.
fn loss(l: &Layout, p: &[f32], e: &Example) -> f64 {
    let mut s = l.scratch();
    let pre = l.forward(p, &e.x, &mut s);
    let mut probs = vec![0.0; e.legal.len()];
    legal_softmax(&s.logits, &e.legal, &mut probs);
    let lp: f64 = probs
        .iter()
        .zip(&e.target)
        .map(|(p, &t)| -f64::from(t) * p.ln())
        .sum();
    let v = f64::from(pre).tanh();
    let t = 2.0 * f64::from(e.z) - 1.0;
    lp + (v - t) * (v - t)
}

/// The analytic gradient matches central finite differences on every architecture.
#[test]
fn gradients_match_finite_differences() {
    let input = planes(2, 3, 4);
    for arch in archs() {
        let l = Layout::new(&arch, input, 5);
        let p = l.init(&mut stream(3, "nn-test-init"));
        let examples = random_examples(input, 5, 3, 1);
        for e in &examples {
            let mut g = vec![0.0f32; l.params()];
            let mut s = l.scratch();
            let mut w = Weights::default();
            l.pack(&p, true, &mut w);
            chunk_grad(&l, &p, &w, &[e], &mut s, &mut g, &mut Vec::new());
            let mut rng = stream(9, "nn-test-probe");
            for _ in 0..40 {
                let j = uniform_index(&mut rng, l.params());
                let h = 1e-2f32;
                let mut q = p.clone();
                q[j] = p[j] + h;
                let up = loss(&l, &q, e);
                q[j] = p[j] - h;
                let down = loss(&l, &q, e);
                let numeric = (up - down) / (2.0 * f64::from(h));
                let analytic = f64::from(g[j]);
                let tol = 2e-2 * (1.0 + numeric.abs());
                assert!(
                    (numeric - analytic).abs() < tol,
                    "{arch:?} param {j}: numeric {numeric} analytic {analytic}"
                );
            }
        }
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// More shapes than `archs`: boards with a side of 1 and 2, odd channel counts, a wide MLP.
fn wide_cases() -> Vec<(Arch, Planes, usize)> {
    vec![
        (
            Arch::Mlp {
                hidden: vec![12, 8],
            },
            planes(2, 3, 4),
            5,
        ),
        (Arch::Mlp { hidden: vec![] }, planes(2, 3, 4), 5),
        (
            Arch::Mlp {
                hidden: vec![37, 19],
            },
            planes(3, 6, 7),
            7,
        ),
        (
            Arch::ResNet {
                blocks: 2,
                channels: 4,
            },
            planes(2, 3, 4),
            5,
        ),
        (
            Arch::ResNet {
                blocks: 1,
                channels: 5,
            },
            planes(3, 1, 7),
            9,
        ),
        (
            Arch::ResNet {
                blocks: 2,
                channels: 17,
            },
            planes(2, 6, 7),
            7,
        ),
        (
            Arch::ResNet {
                blocks: 1,
                channels: 3,
            },
            planes(1, 2, 2),
            3,
        ),
    ]
}

/// The batched engine gives every position the bits of the old engine (one position at a
/// time, axpy loops: `reference.rs`), alone and at every place of batches of 1, 2, 7 and 64,
/// on every vector path this CPU has.
#[test]
fn outputs_match_the_old_engine_in_any_batch_on_every_path() {
    for (arch, input, na) in wide_cases() {
        let base = Layout::new(&arch, input, na);
        let p = base.init(&mut stream(4, "nn-test-init"));
        let old = reference::Old::new(&base);
        let examples = random_examples(input, na, 65, 2);
        let want: Vec<(Vec<u32>, u32)> = examples
            .iter()
            .map(|e| {
                let mut s = old.scratch();
                let v = old.forward(&p, &e.x, &mut s);
                (bits(&s.logits), v.to_bits())
            })
            .collect();
        for simd in Simd::available() {
            let l = base.clone().with_simd(simd);
            let mut s = l.scratch();
            for (k, e) in examples.iter().enumerate() {
                let v = l.forward(&p, &e.x, &mut s);
                assert_eq!(
                    (bits(&s.logits[..na]), v.to_bits()),
                    want[k],
                    "{arch:?} {simd:?} alone"
                );
            }
            for batch in [1, 2, 7, 64] {
                for start in [0, 1] {
                    let x: Vec<f32> = examples[start..start + batch]
                        .iter()
                        .flat_map(|e| e.x.iter().copied())
                        .collect();
                    l.forward_batch(&p, &l.weights(&p), &x, batch, &mut s);
                    for k in 0..batch {
                        let got = (bits(&s.logits[k * na..(k + 1) * na]), s.values[k].to_bits());
                        assert_eq!(
                            got,
                            want[start + k],
                            "{arch:?} {simd:?} batch {batch} at {k}"
                        );
                    }
                }
            }
        }
    }
}

/// A chunk's gradient is the old engine's, example after example, to the bit, on every
/// vector path.
#[test]
fn gradients_match_the_old_engine_on_every_path() {
    for (arch, input, na) in wide_cases() {
        let base = Layout::new(&arch, input, na);
        let p = base.init(&mut stream(7, "nn-test-init"));
        let old = reference::Old::new(&base);
        let examples = random_examples(input, na, 16, 5);
        let mut want = vec![0.0f32; base.params()];
        let mut s = old.scratch();
        for e in &examples {
            let pre = old.forward(&p, &e.x, &mut s);
            let mut probs = vec![0.0f64; e.legal.len()];
            legal_softmax(&s.logits, &e.legal, &mut probs);
            let mut dl = vec![0.0f32; na];
            for ((&a, &pa), &t) in e.legal.iter().zip(&probs).zip(&e.target) {
                dl[a as usize] = (pa - f64::from(t)) as f32;
            }
            let v = f64::from(pre).tanh();
            let dv = (2.0 * (v - (2.0 * f64::from(e.z) - 1.0)) * (1.0 - v * v)) as f32;
            old.backward(&p, &mut s, &dl, dv, &mut want);
        }
        let refs: Vec<&Example> = examples.iter().collect();
        for simd in Simd::available() {
            let l = base.clone().with_simd(simd);
            let mut g = vec![0.0f32; l.params()];
            let mut w = Weights::default();
            l.pack(&p, true, &mut w);
            chunk_grad(&l, &p, &w, &refs, &mut l.scratch(), &mut g, &mut Vec::new());
            assert_eq!(bits(&g), bits(&want), "{arch:?} {simd:?}");
        }
    }
}

fn train_bits(threads: usize, cfg: OptimConfig) -> (Vec<u32>, Losses) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let input = planes(2, 3, 4);
        let l = Layout::new(
            &Arch::ResNet {
                blocks: 1,
                channels: 3,
            },
            input,
            5,
        );
        let mut p = l.init(&mut stream(5, "nn-test-init"));
        let mut opt = OptimState::new(&cfg, l.params());
        let examples = random_examples(input, 5, 100, 3);
        let refs: Vec<&Example> = examples.iter().collect();
        let mut rng = stream(6, "nn-test-batches");
        let mut last = Losses::default();
        for _ in 0..5 {
            let batch: Vec<usize> = (0..50).map(|_| uniform_index(&mut rng, 100)).collect();
            last = train_step(&l, &mut p, &mut opt, &cfg, 0.05, &refs, &batch);
        }
        (p.iter().map(|x| x.to_bits()).collect(), last)
    })
}

const SGD: OptimConfig = OptimConfig::Sgd {
    momentum: 0.9,
    nesterov: true,
    weight_decay: 1e-4,
};
const ADAM: OptimConfig = OptimConfig::Adam {
    beta1: 0.9,
    beta2: 0.999,
    eps: 1e-8,
    weight_decay: 0.0,
};

/// Training steps give the same bits on one thread and on several.
#[test]
fn training_is_bit_identical_on_any_thread_count() {
    for cfg in [SGD, ADAM] {
        let one = train_bits(1, cfg);
        assert_eq!(one, train_bits(2, cfg));
        assert_eq!(one, train_bits(3, cfg));
    }
}

/// Training on a fixed set lowers its loss.
#[test]
fn training_fits_a_small_set() {
    let input = planes(2, 3, 4);
    for (arch, cfg, lr) in [
        (Arch::Mlp { hidden: vec![32] }, SGD, 0.05),
        (
            Arch::ResNet {
                blocks: 1,
                channels: 8,
            },
            ADAM,
            0.003,
        ),
    ] {
        let l = Layout::new(&arch, input, 5);
        let mut p = l.init(&mut stream(5, "nn-test-init"));
        let mut opt = OptimState::new(&cfg, l.params());
        let examples = random_examples(input, 5, 16, 4);
        let refs: Vec<&Example> = examples.iter().collect();
        let batch: Vec<usize> = (0..16).collect();
        let first = train_step(&l, &mut p, &mut opt, &cfg, lr, &refs, &batch);
        let mut last = first;
        for _ in 0..300 {
            last = train_step(&l, &mut p, &mut opt, &cfg, lr, &refs, &batch);
        }
        assert!(
            last.value < 0.5 * first.value && last.policy < first.policy,
            "{arch:?}: {first:?} -> {last:?}"
        );
    }
}

/// Positions (or samples) per second of the old and the new engine side by side, one thread
/// (`cargo test --release --lib nn::tests::engine_speed -- --ignored --nocapture`). Prints;
/// asserts nothing about time (benches/ has the criterion benches).
#[test]
#[ignore]
fn engine_speed() {
    use std::time::Instant;
    let cases = [
        (
            "c4 mlp64x64",
            Arch::Mlp {
                hidden: vec![64, 64],
            },
            planes(2, 6, 7),
            7,
        ),
        (
            "c4 res2x16",
            Arch::ResNet {
                blocks: 2,
                channels: 16,
            },
            planes(2, 6, 7),
            7,
        ),
        (
            "c4 res6x64",
            Arch::ResNet {
                blocks: 6,
                channels: 64,
            },
            planes(2, 6, 7),
            7,
        ),
        (
            "7x7 res9x32",
            Arch::ResNet {
                blocks: 9,
                channels: 32,
            },
            planes(3, 7, 7),
            294,
        ),
    ];
    let rate = |n: usize, f: &mut dyn FnMut()| {
        let t = Instant::now();
        let mut reps = 0;
        while t.elapsed().as_secs_f64() < 0.5 {
            f();
            reps += 1;
        }
        (reps * n) as f64 / t.elapsed().as_secs_f64()
    };
    for (name, arch, input, na) in cases {
        let l = Layout::new(&arch, input, na);
        let p = l.init(&mut stream(4, "nn-test-init"));
        let old = reference::Old::new(&l);
        let ex = random_examples(input, na, 64, 2);
        let x: Vec<f32> = ex.iter().flat_map(|e| e.x.iter().copied()).collect();
        let mut so = old.scratch();
        let old_inf = rate(64, &mut || {
            for e in &ex {
                old.forward(&p, &e.x, &mut so);
            }
        });
        let mut s = l.scratch();
        let b1 = rate(1, &mut || {
            l.forward(&p, &ex[0].x, &mut s);
        });
        let w = l.weights(&p);
        let b1 = rate(1, &mut || l.forward_batch(&p, &w, &ex[0].x, 1, &mut s)).max(b1);
        let b64 = rate(64, &mut || l.forward_batch(&p, &w, &x, 64, &mut s));
        let mut wb = Weights::default();
        l.pack(&p, true, &mut wb);
        let refs: Vec<&Example> = ex[..16].iter().collect();
        let mut g = vec![0.0f32; l.params()];
        let old_train = rate(16, &mut || {
            for e in &refs {
                let pre = old.forward(&p, &e.x, &mut so);
                let dl = vec![0.01f32; na];
                old.backward(&p, &mut so, &dl, pre * 0.1, &mut g);
            }
        });
        let new_train = rate(16, &mut || {
            chunk_grad(&l, &p, &wb, &refs, &mut s, &mut g, &mut Vec::new());
        });
        println!(
            "{name}: inference old {old_inf:.0}/s, new b1 {b1:.0}/s b64 {b64:.0}/s ({:.1}x); \
             gradient old {old_train:.0}/s new {new_train:.0}/s ({:.1}x)",
            b64 / old_inf,
            new_train / old_train
        );
    }
}
