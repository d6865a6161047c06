use super::*;
use tabula_core::rng::{stream, uniform_index};

fn planes(c: usize, h: usize, w: usize) -> Planes {
    Planes {
        channels: c,
        height: h,
        width: w,
    }
}

fn res(blocks: usize, channels: usize) -> Arch {
    Arch::ResNet(ResNet::basic(blocks, channels))
}

/// The architectures of every kind: dense and residual, basic and bottleneck blocks, with
/// and without batch normalisation, dense and conv heads; the last two a padded and an
/// unpadded stem with the convolutions' biases kept before batch normalisation (Liu et
/// al.'s net in small; on the 3 x 4 test board the unpadded stem leaves a 1 x 2 trunk).
fn archs() -> Vec<Arch> {
    let conv = Head::Conv {
        policy_channels: 2,
        value_channels: 1,
        value_hidden: 6,
    };
    vec![
        Arch::Mlp {
            hidden: vec![12, 8],
        },
        Arch::Mlp { hidden: vec![] },
        res(2, 4),
        Arch::ResNet(ResNet {
            batch_norm: true,
            ..ResNet::basic(1, 4)
        }),
        Arch::ResNet(ResNet {
            bottleneck: Some(3),
            batch_norm: true,
            head: conv,
            ..ResNet::basic(2, 5)
        }),
        Arch::ResNet(ResNet {
            bottleneck: Some(2),
            head: conv,
            ..ResNet::basic(1, 4)
        }),
        Arch::ResNet(ResNet {
            batch_norm: true,
            conv_bias: true,
            ..ResNet::basic(1, 4)
        }),
        Arch::ResNet(ResNet {
            bottleneck: Some(3),
            batch_norm: true,
            conv_bias: true,
            stem: Stem::Valid,
            head: conv,
            ..ResNet::basic(2, 5)
        }),
    ]
}

/// A basic net with an unpadded stem.
fn res_valid(blocks: usize, channels: usize) -> Arch {
    Arch::ResNet(ResNet {
        stem: Stem::Valid,
        ..ResNet::basic(blocks, channels)
    })
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

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// The gradient of a batch (the chunks' vectors added in order) and its summed loss.
fn grad_of(l: &Layout, p: &[f32], examples: &[Example]) -> (Vec<f32>, f64) {
    let mut t = Trainer::new(l);
    l.pack(p, true, &mut t.w);
    let refs: Vec<&Example> = examples.iter().collect();
    let parts = batch_grad(l, p, &refs, &mut t);
    let mut g = vec![0.0f32; l.params()];
    for gc in &t.gs[..parts.len()] {
        for (x, &y) in g.iter_mut().zip(gc) {
            *x += y;
        }
    }
    (g, parts.iter().map(|(a, b)| a + b).sum())
}

/// The analytic gradient matches central finite differences of the batch's loss on every
/// architecture and both value heads (batch normalisation's batch statistics included;
/// running statistics have no gradient).
#[test]
fn gradients_match_finite_differences() {
    let input = planes(2, 3, 4);
    let heads = [ValueHead::Tanh, ValueHead::Sigmoid];
    for (k, arch) in archs().into_iter().enumerate() {
        // Both value heads (their losses differ), alternating over the architectures.
        let l = Layout::new(&arch, input, 5).with_value_head(heads[k % 2]);
        // The biases off zero: a unit whose inputs are all zero (a small trunk's value
        // plane after its normalisation and ReLU) would otherwise sit exactly on its ReLU's
        // kink, where every step's central difference is half the one-sided slope.
        let mut p = l.init(&mut stream(3, "nn-test-init"));
        let mut rng = stream(3, "nn-test-jitter");
        for x in &mut p {
            *x += (uniform_index(&mut rng, 101) as f32 - 50.0) / 1000.0;
        }
        let examples = random_examples(input, 5, 3, 1);
        let (g, _) = grad_of(&l, &p, &examples);
        let frozen = l.frozen();
        let mut rng = stream(9, "nn-test-probe");
        let mut probed = 0;
        while probed < 40 {
            let j = uniform_index(&mut rng, l.params());
            if frozen.iter().any(|&(at, len)| (at..at + len).contains(&j)) {
                continue;
            }
            probed += 1;
            // A step can cross a ReLU's kink (with batch normalisation every value of a
            // channel moves): the gradient must match at one of three steps.
            let analytic = f64::from(g[j]);
            let numerics: Vec<f64> = [1e-2f32, 3e-3, 1e-3]
                .iter()
                .map(|&h| {
                    let mut q = p.clone();
                    q[j] = p[j] + h;
                    let up = grad_of(&l, &q, &examples).1;
                    q[j] = p[j] - h;
                    let down = grad_of(&l, &q, &examples).1;
                    (up - down) / (2.0 * f64::from(h))
                })
                .collect();
            assert!(
                numerics
                    .iter()
                    .any(|n| (n - analytic).abs() < 2e-2 * (1.0 + n.abs())),
                "{arch:?} param {j}: numeric {numerics:?} analytic {analytic}"
            );
        }
    }
}

/// The value heads' scales and losses: tanh reads (v + 1) / 2 and is trained against
/// 2z - 1, sigmoid is the [0, 1] value trained against z; both give 1/2 at 0, and each
/// loss's derivative is its slope.
#[test]
fn value_heads_read_and_train_on_their_scales() {
    for pre in [-3.0f32, -0.5, 0.0, 0.25, 2.0] {
        let x = f64::from(pre);
        assert_eq!(ValueHead::Tanh.unit(pre), (x.tanh() + 1.0) / 2.0);
        assert!((ValueHead::Sigmoid.unit(pre) - 1.0 / (1.0 + (-x).exp())).abs() < 1e-15);
        for z in [0.0f32, 0.5, 1.0] {
            let (lt, _) = ValueHead::Tanh.loss(pre, z);
            assert!((lt - (x.tanh() - (2.0 * f64::from(z) - 1.0)).powi(2)).abs() < 1e-12);
            let (ls, _) = ValueHead::Sigmoid.loss(pre, z);
            let v = ValueHead::Sigmoid.unit(pre);
            assert!((ls - (v - f64::from(z)).powi(2)).abs() < 1e-12);
            for head in [ValueHead::Tanh, ValueHead::Sigmoid] {
                let h = 1e-3f32;
                let slope = (head.loss(pre + h, z).0 - head.loss(pre - h, z).0) / (2e-3);
                let d = head.loss(pre, z).1;
                assert!(
                    (slope - d).abs() < 1e-4 * (1.0 + d.abs()),
                    "{head:?} {pre} {z}"
                );
            }
        }
    }
    assert_eq!(ValueHead::Tanh.unit(0.0), 0.5);
    assert_eq!(ValueHead::Sigmoid.unit(0.0), 0.5);
}

/// More shapes of the old architectures: boards with a side of 1 and 2, odd channel
/// counts, a wide MLP.
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
        (res(2, 4), planes(2, 3, 4), 5),
        (res(1, 5), planes(3, 1, 7), 9),
        (res(2, 17), planes(2, 6, 7), 7),
        (res(1, 3), planes(1, 2, 2), 3),
        // 25 squares: four tiles and a lone row, run across the panels (`gemm::wide_row`).
        (res(1, 17), planes(2, 5, 5), 7),
        // Unpadded stems: trunks of 1 x 2, 1 x 1, 3 x 3 and 4 x 5 squares (the last a
        // 7-squares-wide board's stem over 20 rows: three tiles and two rows).
        (res_valid(2, 4), planes(2, 3, 4), 5),
        (res_valid(1, 3), planes(3, 3, 3), 4),
        (res_valid(1, 17), planes(2, 5, 5), 7),
        (res_valid(2, 6), planes(3, 6, 7), 7),
        // conv_bias changes nothing without batch normalisation.
        (
            Arch::ResNet(ResNet {
                conv_bias: true,
                ..ResNet::basic(1, 5)
            }),
            planes(2, 6, 7),
            7,
        ),
    ]
}

/// The batched engine gives every position the bits of the old engine (one position at a
/// time, axpy loops: `reference.rs`), alone and at every place of batches of 1, 2, 7 and 64,
/// on every vector path this CPU has.
#[test]
fn outputs_match_the_old_engine_in_any_batch_on_every_path() {
    for (arch, input, na) in wide_cases() {
        // The old engine multiplied and added separately.
        let base = Layout::new(&arch, input, na).with_arith(Arith::Separate);
        let p = base.init(&mut stream(4, "nn-test-init"));
        let old = reference::Old::new(&arch, input, na);
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

/// Parameters of `l` from `seed`, the running statistics moved away from (0, 1) so that
/// they matter.
fn params_with_statistics(l: &Layout, seed: u64) -> Vec<f32> {
    let mut p = l.init(&mut stream(seed, "nn-test-init"));
    for (at, len) in l.frozen() {
        for (k, x) in p[at..at + len].iter_mut().enumerate() {
            *x = 0.5 + 0.1 * k as f32;
        }
    }
    p
}

/// Each example's logits and value bits, evaluated alone.
fn alone_bits(l: &Layout, p: &[f32], examples: &[Example]) -> Vec<(Vec<u32>, u32)> {
    let mut s = l.scratch();
    let na = l.actions();
    examples
        .iter()
        .map(|e| {
            let v = l.forward(p, &e.x, &mut s);
            (bits(&s.logits[..na]), v.to_bits())
        })
        .collect()
}

/// Evaluates each `(start, batch)` slice of `examples` as one batch and checks every
/// position's bits against `want` (alone).
fn assert_batches_match(
    l: &Layout,
    p: &[f32],
    examples: &[Example],
    want: &[(Vec<u32>, u32)],
    s: &mut Scratch,
    cases: &[(usize, usize)],
    what: &str,
) {
    for &(start, batch) in cases {
        let x: Vec<f32> = examples[start..start + batch]
            .iter()
            .flat_map(|e| e.x.iter().copied())
            .collect();
        l.forward_batch(p, &l.weights(p), &x, batch, s);
        let na = l.actions();
        for k in 0..batch {
            let got = (bits(&s.logits[k * na..(k + 1) * na]), s.values[k].to_bits());
            assert_eq!(got, want[start + k], "{what} batch {batch} at {k}");
        }
    }
}

/// A large inference batch goes through the trunk a chunk at a time and through the heads
/// a group of chunks at a time (`engine::Heads`): with chunks of 1, 3 and 5 positions, and
/// batches spanning several groups, every position gets the bits it gets alone.
#[test]
fn chunks_and_groups_give_the_bits_of_one_position() {
    let input = planes(2, 3, 4);
    for arch in archs() {
        let l = Layout::new(&arch, input, 5);
        let p = params_with_statistics(&l, 5);
        let examples = random_examples(input, 5, 150, 3);
        let want = alone_bits(&l, &p, &examples);
        for chunk in [1, 3, 5] {
            let mut s = l.scratch();
            s.set_infer_chunk(chunk);
            let cases = [(1, 2), (0, 70), (2, 148)];
            let what = format!("{arch:?} chunk {chunk}");
            assert_batches_match(&l, &p, &examples, &want, &mut s, &cases, &what);
        }
    }
}

/// Every architecture's inference gives a position the same bits alone, at any place of
/// any batch, on every vector path, in either arithmetic (batch normalisation reads its
/// running statistics), with each convolution and its normalisation run as one product
/// and, for `want`, one after the other.
#[test]
fn outputs_do_not_depend_on_the_batch_or_the_path() {
    let input = planes(2, 3, 4);
    for (arch, arith) in archs()
        .into_iter()
        .flat_map(|a| [(a.clone(), Arith::Separate), (a, Arith::Fused)])
    {
        let base = Layout::new(&arch, input, 5).with_arith(arith);
        let p = params_with_statistics(&base, 4);
        let examples = random_examples(input, 5, 40, 2);
        let want = alone_bits(&base.clone().with_fused_norm(false), &p, &examples);
        let mut s = base.scratch();
        for simd in Simd::available() {
            let l = base.clone().with_simd(simd);
            let cases = [(0, 1), (3, 7), (0, 33), (1, 39)];
            let what = format!("{arch:?} {arith:?} {simd:?}");
            assert_batches_match(&l, &p, &examples, &want, &mut s, &cases, &what);
        }
    }
}

/// With fused arithmetic too, a chunk's gradient is the same bits on every vector path, and
/// differs from the separate arithmetic's (the setting reaches the kernels).
#[test]
fn fused_gradients_are_the_same_on_every_path() {
    let input = planes(2, 3, 4);
    for arch in archs() {
        let base = Layout::new(&arch, input, 5);
        let p = base.init(&mut stream(7, "nn-test-init"));
        let examples = random_examples(input, 5, CHUNK + 3, 5);
        let want = grad_of(&base.clone().with_simd(Simd::Scalar), &p, &examples).0;
        for simd in Simd::available() {
            let (g, _) = grad_of(&base.clone().with_simd(simd), &p, &examples);
            assert_eq!(bits(&g), bits(&want), "{arch:?} {simd:?}");
        }
        let separate = grad_of(&base.clone().with_arith(Arith::Separate), &p, &examples).0;
        assert_ne!(bits(&separate), bits(&want), "{arch:?}");
    }
}

/// A chunk's gradient is the old engine's, example after example, to the bit, on every
/// vector path.
#[test]
fn gradients_match_the_old_engine_on_every_path() {
    for (arch, input, na) in wide_cases() {
        let base = Layout::new(&arch, input, na).with_arith(Arith::Separate);
        let p = base.init(&mut stream(7, "nn-test-init"));
        let old = reference::Old::new(&arch, input, na);
        let examples = random_examples(input, na, CHUNK, 5);
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
        for simd in Simd::available() {
            let l = base.clone().with_simd(simd);
            let (g, _) = grad_of(&l, &p, &examples);
            assert_eq!(bits(&g), bits(&want), "{arch:?} {simd:?}");
        }
    }
}

fn train_bits(threads: usize, cfg: OptimConfig, arch: &Arch) -> (Vec<u32>, Losses) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let input = planes(2, 3, 4);
        let l = Layout::new(arch, input, 5);
        let mut p = l.init(&mut stream(5, "nn-test-init"));
        let mut opt = OptimState::new(&cfg, l.params());
        let examples = random_examples(input, 5, 100, 3);
        let refs: Vec<&Example> = examples.iter().collect();
        let mut rng = stream(6, "nn-test-batches");
        let mut last = Losses::default();
        let mut t = Trainer::new(&l);
        for _ in 0..5 {
            let batch: Vec<usize> = (0..50).map(|_| uniform_index(&mut rng, 100)).collect();
            last = train_step(&l, &mut p, &mut opt, &cfg, 0.05, &refs, &batch, &mut t);
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

/// Training steps give the same bits on one thread and on several, on every architecture.
#[test]
fn training_is_bit_identical_on_any_thread_count() {
    for arch in archs() {
        for cfg in [SGD, ADAM] {
            let one = train_bits(1, cfg, &arch);
            assert_eq!(one, train_bits(2, cfg, &arch), "{arch:?}");
            assert_eq!(one, train_bits(3, cfg, &arch), "{arch:?}");
        }
    }
}

/// A net of more parameters than two of the optimiser's pieces (the gradient's sum over
/// chunks and the update then run in parallel ranges) trains to the same bits on one thread
/// and on several.
#[test]
fn long_parameter_vectors_train_the_same_on_any_thread_count() {
    let arch = Arch::Mlp {
        hidden: vec![512, 64],
    };
    let l = Layout::new(&arch, planes(2, 3, 4), 5);
    assert!(l.params() > 2 * crate::optim::SPLIT, "{}", l.params());
    for cfg in [SGD, ADAM] {
        let one = train_bits(1, cfg, &arch);
        assert_eq!(one, train_bits(2, cfg, &arch));
        assert_eq!(one, train_bits(3, cfg, &arch));
    }
}

/// A training step moves batch normalisation's running statistics by the momentum towards
/// the batch's (PyTorch's rule: the variance's unbiased estimate), and the optimiser leaves
/// them otherwise alone.
#[test]
fn running_statistics_follow_the_batch() {
    let input = planes(2, 3, 4);
    let arch = Arch::ResNet(ResNet {
        batch_norm: true,
        ..ResNet::basic(0, 3)
    });
    let l = Layout::new(&arch, input, 5);
    let mut p = l.init(&mut stream(5, "nn-test-init"));
    let examples = random_examples(input, 5, 20, 3);
    let refs: Vec<&Example> = examples.iter().collect();
    // The stem's output before normalisation, by hand: channel 0 over the batch (a
    // training-mode pass writes it; inference runs the stem and its normalisation as one).
    let conv = match l.graph.ops[0].layer {
        graph::Layer::Conv(c) => c,
        _ => unreachable!(),
    };
    let mut s = l.scratch();
    let w = l.weights(&p);
    let pre: Vec<f64> = examples
        .iter()
        .flat_map(|e| {
            l.run_forward(&p, &w, &e.x, 1, &mut s, engine::Mode::Train);
            s.bufs[1][..12].to_vec()
        })
        .map(f64::from)
        .collect();
    let mean = pre.iter().sum::<f64>() / pre.len() as f64;
    let var = pre.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (pre.len() - 1) as f64;
    let (at, _) = l.frozen()[0];
    assert_eq!(
        at,
        conv.w + conv.cout * conv.cin * 9 + 2 * conv.cout,
        "mean after gamma, beta"
    );
    let mut opt = OptimState::new(&SGD, l.params());
    let batch: Vec<usize> = (0..20).collect();
    train_step(
        &l,
        &mut p,
        &mut opt,
        &SGD,
        0.05,
        &refs,
        &batch,
        &mut Trainer::new(&l),
    );
    assert!(
        (f64::from(p[at]) - 0.1 * mean).abs() < 1e-5,
        "{} vs {}",
        p[at],
        0.1 * mean
    );
    let rv = f64::from(p[at + 3]);
    assert!(
        (rv - (0.9 + 0.1 * var)).abs() < 1e-5,
        "{rv} vs {}",
        0.9 + 0.1 * var
    );
}

/// Training on a fixed set lowers its loss.
#[test]
fn training_fits_a_small_set() {
    let input = planes(2, 3, 4);
    for (arch, cfg, lr) in [
        (Arch::Mlp { hidden: vec![32] }, SGD, 0.05),
        (res(1, 8), ADAM, 0.003),
        (archs()[4].clone(), ADAM, 0.003),
    ] {
        let l = Layout::new(&arch, input, 5);
        let mut p = l.init(&mut stream(5, "nn-test-init"));
        let mut opt = OptimState::new(&cfg, l.params());
        let examples = random_examples(input, 5, 16, 4);
        let refs: Vec<&Example> = examples.iter().collect();
        let batch: Vec<usize> = (0..16).collect();
        let mut t = Trainer::new(&l);
        let first = train_step(&l, &mut p, &mut opt, &cfg, lr, &refs, &batch, &mut t);
        let mut last = first;
        for _ in 0..300 {
            last = train_step(&l, &mut p, &mut opt, &cfg, lr, &refs, &batch, &mut t);
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
    // One thread: the rates are of one core, timed by the thread's CPU time (work on other
    // threads would not count).
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    pool.install(engine_speed_on_one_thread);
}

/// This thread's CPU time in seconds, so that other processes on the machine do not count.
fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Items per second of thread CPU time: `f` (`n` items a call) repeated for half a second.
fn rate(n: usize, f: &mut dyn FnMut()) -> f64 {
    let t = thread_cpu_seconds();
    let mut reps = 0;
    while thread_cpu_seconds() - t < 0.5 {
        f();
        reps += 1;
    }
    (reps * n) as f64 / (thread_cpu_seconds() - t)
}

/// One convolution-sized product on every kernel the CPU has.
fn gemm_speed() {
    let (m, n, k) = (42, 64, 576);
    let a = vec![0.5f32; m * k];
    let b = vec![0.25f32; gemm::packed_len(k, n)];
    let mut c = vec![0.0f32; m * n];
    let kernels = Simd::available()
        .into_iter()
        .flat_map(|simd| [Arith::Separate, Arith::Fused].map(|arith| Kernel { simd, arith }));
    for kernel in kernels {
        let r = rate(1, &mut || {
            let a = gemm::MatA::strided(&a, 1, m);
            let out = gemm::Out::cols(m);
            gemm::gemm(
                kernel,
                (m, n, k),
                a,
                &b,
                gemm::Start::Zero,
                gemm::Then::Relu,
                &mut c,
                out,
            );
        });
        println!(
            "gemm {m}x{n}x{k} {kernel:?}: {:.1} GFLOP/s",
            r * (2 * m * n * k) as f64 * 1e-9
        );
    }
}

fn engine_speed_on_one_thread() {
    let cases = [
        (
            "c4 mlp64x64",
            Arch::Mlp {
                hidden: vec![64, 64],
            },
            planes(2, 6, 7),
            7,
        ),
        ("c4 res2x16", res(2, 16), planes(2, 6, 7), 7),
        ("c4 res6x64", res(6, 64), planes(2, 6, 7), 7),
        ("7x7 res9x32", res(9, 32), planes(3, 7, 7), 294),
    ];
    gemm_speed();
    for (name, arch, input, na) in cases {
        let base = Layout::new(&arch, input, na);
        let p = base.init(&mut stream(4, "nn-test-init"));
        let old = reference::Old::new(&arch, input, na);
        let ex = random_examples(input, na, 64, 2);
        let x: Vec<f32> = ex.iter().flat_map(|e| e.x.iter().copied()).collect();
        let mut so = old.scratch();
        let old_inf = rate(64, &mut || {
            for e in &ex {
                old.forward(&p, &e.x, &mut so);
            }
        });
        let refs: Vec<&Example> = ex[..16].iter().collect();
        let mut g = vec![0.0f32; base.params()];
        let old_train = rate(16, &mut || {
            for e in &refs {
                let pre = old.forward(&p, &e.x, &mut so);
                let dl = vec![0.01f32; na];
                old.backward(&p, &mut so, &dl, pre * 0.1, &mut g);
            }
        });
        println!("{name}: old inference {old_inf:.0}/s, old gradient {old_train:.0}/s");
        for arith in [Arith::Separate, Arith::Fused] {
            let l = base.clone().with_arith(arith);
            let mut s = l.scratch();
            let w = l.weights(&p);
            let b1 = rate(1, &mut || l.forward_batch(&p, &w, &ex[0].x, 1, &mut s));
            let b64 = rate(64, &mut || l.forward_batch(&p, &w, &x, 64, &mut s));
            let mut t = Trainer::new(&l);
            l.pack(&p, true, &mut t.w);
            let new_train = rate(16, &mut || {
                batch_grad(&l, &p, &refs, &mut t);
            });
            println!(
                "  {arith:?}: inference b1 {b1:.0}/s b64 {b64:.0}/s ({:.1}x old); \
                 gradient {new_train:.0}/s ({:.1}x old)",
                b64 / old_inf,
                new_train / old_train
            );
        }
    }
}

/// FNV-1a over the bits of `v`, chained from `h`.
fn fnv(mut h: u64, v: &[f32]) -> u64 {
    for x in v {
        for b in x.to_bits().to_le_bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    h
}

/// Each architecture's parameter count and a hash of the bits of its initial parameters,
/// its outputs on a few positions, its gradient, and one training step.
fn arch_fingerprint(arch: &Arch, input: Planes) -> (usize, u64) {
    let l = Layout::new(arch, input, 5);
    let mut p = params_with_statistics(&l, 11);
    let examples = random_examples(input, 5, 20, 12);
    let mut h = fnv(0xcbf2_9ce4_8422_2325, &p);
    let mut s = l.scratch();
    for e in &examples {
        let v = l.forward(&p, &e.x, &mut s);
        h = fnv(h, &s.logits[..5]);
        h = fnv(h, &[v]);
    }
    h = fnv(h, &grad_of(&l, &p, &examples).0);
    let mut opt = OptimState::new(&ADAM, l.params());
    let refs: Vec<&Example> = examples.iter().collect();
    let batch: Vec<usize> = (0..20).collect();
    let mut t = Trainer::new(&l);
    train_step(&l, &mut p, &mut opt, &ADAM, 0.01, &refs, &batch, &mut t);
    (l.params(), fnv(h, &p))
}

/// The architectures that predate the valid stem and the convolution biases before batch
/// normalisation keep their parameter counts and their bits (pinned before those options
/// existed): old checkpoints load and runs verify.
#[test]
fn old_architectures_keep_their_counts_and_bits() {
    let got: Vec<(usize, u64)> = archs()[..6]
        .iter()
        .map(|a| arch_fingerprint(a, planes(2, 3, 4)))
        .collect();
    let pinned = [
        (458, 16172812526417474599),
        (150, 17615431130860010391),
        (962, 15085912280820925080),
        (702, 534077073421262694),
        (657, 17359801657556243058),
        (361, 16714933841236268219),
    ];
    assert_eq!(got, pinned);
}

/// Liu et al.'s network on Chinese Checkers' 7 x 7 x 7 planes and 294 actions has the
/// paper's 247,386 trainable values, layer by layer as counted from the authors' released
/// model: stem 4,224, nine blocks of 13,696, policy head 118,966, value head 932 (batch
/// normalisation's scale and shift counted, its running statistics not).
#[test]
fn liu_net_has_247386_trainable_values() {
    let l = Layout::new(&Arch::ResNet(ResNet::liu()), planes(7, 7, 7), 294);
    assert_eq!(l.trainable(), 247_386);
    assert_eq!(4_224 + 9 * 13_696 + 118_966 + 932, 247_386);
    // Running mean and variance of every normalised channel: 64 (stem), 9 x (32 + 32 + 64),
    // 16 (policy), 1 (value).
    assert_eq!(l.params() - l.trainable(), 2 * (64 + 9 * 128 + 16 + 1));
    // The parts: the stem (a 3x3 over 7 planes with bias, and its normalisation) and one
    // block, from the graph's ranges.
    let upto = |name: &str| {
        let i = l.graph.names.iter().position(|n| n == name).unwrap();
        match l.graph.ops[i].layer {
            graph::Layer::Conv(c) => c.w,
            graph::Layer::Dense(d) => d.w,
            graph::Layer::Norm(n) => n.gamma,
        }
    };
    let trainable_in = |a: usize, b: usize| {
        let frozen: usize = l
            .frozen()
            .iter()
            .filter(|&&(at, _)| (a..b).contains(&at))
            .map(|&(_, len)| len)
            .sum();
        b - a - frozen
    };
    assert_eq!(trainable_in(0, upto("blocks.0.conv1")), 4_224);
    let (b0, b1) = (upto("blocks.0.conv1"), upto("blocks.1.conv1"));
    assert_eq!(trainable_in(b0, b1), 13_696);
    let (p0, v0) = (upto("policy.conv"), upto("value.conv"));
    assert_eq!(trainable_in(p0, v0), 118_966);
    assert_eq!(trainable_in(v0, l.params()), 932);
    // The trunk runs on the 5 x 5 interior: the policy layer reads 16 x 25 features.
    let fc = l.graph.names.iter().position(|n| n == "policy.fc").unwrap();
    match l.graph.ops[fc].layer {
        graph::Layer::Dense(d) => assert_eq!((d.n_in, d.n_out), (400, 294)),
        _ => panic!("policy.fc is dense"),
    }
}

/// An unpadded stem needs a board of 3 x 3 or more: a smaller one is refused with a message
/// that says so; 3 x 3 itself runs (a 1 x 1 trunk).
#[test]
fn a_valid_stem_on_a_small_board_is_refused() {
    let arch = res_valid(1, 3);
    for (h, w) in [(2, 5), (5, 2), (1, 1)] {
        let e = Layout::try_new(&arch, planes(2, h, w), 4).unwrap_err();
        assert_eq!(
            e,
            ShapeError::ValidStemTooSmall {
                height: h,
                width: w
            }
        );
        let text = e.to_string();
        assert!(
            text.contains(&format!("{h} x {w}")) && text.contains("same"),
            "{text}"
        );
    }
    let l = Layout::try_new(&arch, planes(2, 3, 3), 4).unwrap();
    let p = l.init(&mut stream(1, "nn-test-init"));
    let mut s = l.scratch();
    let v = l.forward(&p, &[0.5; 18], &mut s);
    assert!(v.is_finite());
    // The padded stem runs on any board.
    assert!(Layout::try_new(&res(1, 3), planes(2, 1, 2), 4).is_ok());
}

/// The full Liu et al. network on its 7 x 7 x 7 planes: a position's inference bits are the
/// same alone and at any place of batches of 1, 7 and 33, on every vector path, with its
/// convolutions and normalisations fused or not; a gradient is the same bits on every path;
/// training steps the same bits on one thread and on three.
#[test]
fn liu_net_gives_the_same_bits_everywhere() {
    let input = planes(7, 7, 7);
    let arch = Arch::ResNet(ResNet::liu());
    let base = Layout::new(&arch, input, 294);
    let p = params_with_statistics(&base, 8);
    let examples = random_examples(input, 294, 40, 9);
    let want = alone_bits(&base.clone().with_fused_norm(false), &p, &examples);
    for simd in Simd::available() {
        for fuse in [true, false] {
            let l = base.clone().with_simd(simd).with_fused_norm(fuse);
            let mut s = l.scratch();
            let cases = [(0, 1), (3, 7), (1, 33)];
            let what = format!("liu {simd:?} fused {fuse}");
            assert_batches_match(&l, &p, &examples, &want, &mut s, &cases, &what);
        }
    }
    let batch = &examples[..CHUNK + 3];
    let g = grad_of(&base.clone().with_simd(Simd::Scalar), &p, batch).0;
    for simd in Simd::available() {
        let got = grad_of(&base.clone().with_simd(simd), &p, batch).0;
        assert_eq!(bits(&got), bits(&g), "liu {simd:?}");
    }
    let train = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut q = p.clone();
            let mut opt = OptimState::new(&SGD, base.params());
            let refs: Vec<&Example> = examples.iter().collect();
            let mut t = Trainer::new(&base);
            let batch: Vec<usize> = (0..35).collect();
            for _ in 0..2 {
                train_step(&base, &mut q, &mut opt, &SGD, 0.01, &refs, &batch, &mut t);
            }
            bits(&q)
        })
    };
    let one = train(1);
    assert_ne!(one, bits(&p), "the step moved the parameters");
    assert_eq!(one, train(3));
}

/// Every residual net's inference gives, to the bit, what a naive pass written from the
/// architecture alone gives (`reference::resnet_infer`: its own parameter offsets, one
/// element at a time): padded and unpadded stems, biases before batch normalisation or
/// not, basic and bottleneck blocks, dense and conv heads, on both arithmetics and every
/// vector path, alone and in a batch, with convolutions and normalisations fused or not;
/// Liu et al.'s full net on its 7 x 7 x 7 planes too.
#[test]
fn resnet_outputs_match_the_naive_reference() {
    let mut cases: Vec<(ResNet, Planes, usize)> = archs()
        .into_iter()
        .filter_map(|a| match a {
            Arch::ResNet(r) => Some((r, planes(2, 3, 4), 5)),
            Arch::Mlp { .. } => None,
        })
        .collect();
    // A trunk of several squares after the unpadded stem (3 x 4 on a 5 x 6 board).
    let (liu_small, _, _) = cases.last().cloned().unwrap();
    cases.push((liu_small, planes(3, 5, 6), 7));
    cases.push((ResNet::liu(), planes(7, 7, 7), 294));
    for (r, input, na) in cases {
        let arch = Arch::ResNet(r.clone());
        for arith in [Arith::Separate, Arith::Fused] {
            let base = Layout::new(&arch, input, na).with_arith(arith);
            let mut p = params_with_statistics(&base, 13);
            // Biases off zero, so that a misplaced one shows.
            let mut rng = stream(13, "nn-test-jitter");
            for x in &mut p {
                *x += (uniform_index(&mut rng, 101) as f32 - 50.0) / 1000.0;
            }
            let examples = random_examples(input, na, 9, 14);
            let fma = arith == Arith::Fused;
            let want: Vec<(Vec<u32>, u32)> = examples
                .iter()
                .map(|e| {
                    let (l, v) = reference::resnet_infer(&r, input, na, &p, &e.x, fma);
                    (bits(&l), v.to_bits())
                })
                .collect();
            for simd in Simd::available() {
                for fuse in [true, false] {
                    let l = base.clone().with_simd(simd).with_fused_norm(fuse);
                    let mut s = l.scratch();
                    let what = format!("{r:?} {arith:?} {simd:?} fused {fuse}");
                    assert_eq!(alone_bits(&l, &p, &examples), want, "{what}");
                    assert_batches_match(&l, &p, &examples, &want, &mut s, &[(0, 9)], &what);
                }
            }
        }
    }
}

/// The inputs' gradient of a chained network's backward pass
/// ([`Layout::backward_to_input`], MuZero's) matches central differences of a linear
/// function of the outputs, on MLPs and a padded residual net (no batch normalisation: its
/// batch statistics couple the positions), for a batch over two chunks; and the valid stem,
/// which has no input gradient, is refused.
#[test]
fn input_gradients_match_finite_differences() {
    let cases = [
        (Arch::Mlp { hidden: vec![7, 5] }, planes(3, 2, 2)),
        (Arch::Mlp { hidden: vec![] }, planes(5, 1, 1)),
        (res(1, 3), planes(2, 3, 3)),
    ];
    for (arch, input) in cases {
        let (actions, n) = (4, CHUNK + 3);
        let l = Layout::new(&arch, input, actions);
        let p = l.init(&mut stream(5, "input-grad"));
        let mut rng = stream(6, "input-grad-x");
        let x: Vec<f32> = (0..n * input.len())
            .map(|_| (uniform_index(&mut rng, 1000) as f32 / 500.0) - 1.0)
            .collect();
        // The loss: sum over positions of c . logits + d * value.
        let c: Vec<f32> = (0..n * actions)
            .map(|i| ((i % 7) as f32 - 3.0) / 4.0)
            .collect();
        let d: Vec<f32> = (0..n).map(|i| ((i % 5) as f32 - 2.0) / 3.0).collect();
        let loss = |x: &[f32]| {
            let mut s = l.scratch();
            l.forward_batch(&p, &l.weights(&p), x, n, &mut s);
            let lp: f64 = (s.logits[..n * actions].iter().zip(&c))
                .map(|(&a, &b)| f64::from(a) * f64::from(b))
                .sum();
            let lv: f64 = (s.values[..n].iter().zip(&d))
                .map(|(&a, &b)| f64::from(a) * f64::from(b))
                .sum();
            lp + lv
        };
        let mut w = Weights::default();
        l.pack(&p, true, &mut w);
        let mut s = l.scratch();
        l.forward_train(&p, &w, &x, n, &mut s);
        let mut gs = vec![vec![0.0f32; l.params()]; Layout::grad_chunks(n)];
        let mut dx = vec![0.0f32; n * input.len()];
        assert!(l.backward_to_input(&w, &mut s, n, (&c, &d), &mut gs, &mut dx));
        let fd = |i: usize, eps: f32| {
            let (mut plus, mut minus) = (x.clone(), x.clone());
            plus[i] += eps;
            minus[i] -= eps;
            (loss(&plus) - loss(&minus)) / (2.0 * f64::from(eps))
        };
        for i in (0..x.len()).step_by(5) {
            let an = f64::from(dx[i]);
            // A ReLU's kink inside one step spoils that difference: either step may match.
            let ok = [1e-3, 2e-4].map(|eps| (an - fd(i, eps)).abs() <= 2e-3 + 1e-2 * an.abs());
            assert!(
                ok.contains(&true),
                "{arch:?} input {i}: analytic {an}, finite differences {} and {}",
                fd(i, 1e-3),
                fd(i, 2e-4)
            );
        }
    }
    let valid = Layout::new(&res_valid(1, 3), planes(2, 3, 3), 4);
    assert!(!valid.input_gradient());
}
