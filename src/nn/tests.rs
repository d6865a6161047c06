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
            let mut dl = vec![0.0f32; 5];
            example_grad(&l, &p, e, &mut s, &mut g, &mut dl);
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

/// A position's outputs are the same bits alone and at every place of any batch (a batch is
/// the same code run position by position, whatever scratch came before).
#[test]
fn outputs_do_not_depend_on_the_batch() {
    let input = planes(2, 3, 4);
    for arch in archs() {
        let l = Layout::new(&arch, input, 5);
        let p = l.init(&mut stream(4, "nn-test-init"));
        let examples = random_examples(input, 5, 65, 2);
        let alone: Vec<(Vec<u32>, u32)> = examples
            .iter()
            .map(|e| {
                let mut s = l.scratch();
                let v = l.forward(&p, &e.x, &mut s);
                (s.logits.iter().map(|x| x.to_bits()).collect(), v.to_bits())
            })
            .collect();
        for batch in [1, 2, 7, 64] {
            let mut s = l.scratch();
            for start in [0, 1] {
                for (k, e) in examples[start..start + batch].iter().enumerate() {
                    let v = l.forward(&p, &e.x, &mut s);
                    let bits: Vec<u32> = s.logits.iter().map(|x| x.to_bits()).collect();
                    assert_eq!(
                        (bits, v.to_bits()),
                        alone[start + k],
                        "{arch:?} batch {batch}"
                    );
                }
            }
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
