//! Stochastic MuZero's unit tests (docs/muzero.md, "Stochastic MuZero"): settings, the
//! unroll's chance observations, the gradient of every network by finite differences, the
//! straight-through step, and the same bits at 1 and 2 threads.

use super::model::{MuZero, argmax, diversity, min_max, softmax, straight_through};
use super::tests::{decision, ewn, parse, record, same_bits_at_1_and_2_threads};
use super::train::MuTrainer;
use super::unroll::{MuSample, game_samples};
use crate::game::{Action, Game, Turn};
use crate::game_record::Step;
use crate::games::Ewn;
use crate::rng::stream;

/// A tiny Stochastic MuZero (state 4, hidden layers of 6, C = 3 codes, the diversity term on,
/// so the thread-count test covers it) with unroll `k`.
fn tiny_stochastic(k: u32) -> (Ewn, MuZero<Ewn>) {
    let cfg = parse(&format!(
        "[learner.muzero]\nstate = 4\nrepresentation = [6]\ndynamics = [6]\n\
         prediction = [6]\nunroll_steps = {k}\n[learner.muzero.stochastic]\ncodes = 3\n\
         afterstate_dynamics = [6]\nafterstate_prediction = [6]\nencoder = [6]\n\
         commitment = 0.5\ndiversity = 0.3\n"
    ))
    .unwrap();
    let g = ewn(&cfg);
    let m = MuZero::build(&g, cfg.learner_context(1)).unwrap();
    (g, m)
}

#[test]
fn stochastic_settings_are_validated_with_their_keys() {
    let c = parse("[learner.muzero.stochastic]\n").unwrap();
    let st = super::settings::settings_of(&c.settings.learner).stochastic;
    assert_eq!(st.as_ref().map(|s| (s.codes, s.diversity)), Some((32, 0.0)));
    for (extra, key) in [
        ("codes = 1\n", "learner.muzero.stochastic.codes"),
        ("codes = 2000\n", "learner.muzero.stochastic.codes"),
        (
            "commitment = -1.0\n",
            "learner.muzero.stochastic.commitment",
        ),
        ("diversity = nan\n", "learner.muzero.stochastic.diversity"),
        ("diversity = 101.0\n", "learner.muzero.stochastic.diversity"),
        ("encoder = [0]\n", "learner.muzero.stochastic.encoder"),
        (
            "afterstate_dynamics = [0]\n",
            "learner.muzero.stochastic.afterstate_dynamics",
        ),
        (
            "afterstate_prediction = [70000]\n",
            "learner.muzero.stochastic.afterstate_prediction",
        ),
    ] {
        let e = parse(&format!("[learner.muzero.stochastic]\n{extra}")).unwrap_err();
        assert!(e.contains(key), "{extra}: {e}");
    }
    let e = parse("[learner.muzero.stochastic]\nchance = 3\n").unwrap_err();
    assert!(e.contains("chance"), "{e}");
}

/// Chance is not folded away: each unrolled step k carries the encoder's input of the real
/// observation at step k, the next decision's state after EWN's die (past the end the final
/// state); the rest of the sample is MuZero's.
#[test]
fn stochastic_unroll_carries_the_observations_after_chance() {
    let (g, m) = tiny_stochastic(3);
    let k = 3;
    for game in 0..4 {
        let rec = record(&g, game);
        let states = rec.states(&g).unwrap();
        let ds: Vec<usize> = states
            .iter()
            .zip(&rec.steps)
            .enumerate()
            .filter_map(|(i, (s, st))| match (g.turn(s), st) {
                (Turn::Player(_), Step::Move { .. }) => Some(i),
                _ => None,
            })
            .collect();
        let (mut plain, mut chance) = (Vec::new(), Vec::new());
        game_samples(&g, &m.encoder, (k, false), &rec, &states, &mut plain);
        game_samples(&g, &m.encoder, (k, true), &rec, &states, &mut chance);
        assert_eq!(plain.len(), chance.len());
        let dstates: Vec<_> = ds.iter().map(|&i| states[i]).collect();
        for (j, (p, c)) in plain.iter().zip(&chance).enumerate() {
            assert!(p.chance.is_empty());
            let mut same = c.clone();
            same.chance.clear();
            assert_eq!(p, &same, "MuZero's targets unchanged");
            assert_eq!(c.chance.len(), k);
            for step in 1..=k {
                let i = (j + step).min(ds.len());
                let s = dstates.get(i).copied().unwrap_or(*states.last().unwrap());
                let mut x = vec![0.0; m.encoder.planes().len()];
                m.encoder.encode(&s, &dstates[..i], &mut x);
                assert_eq!(c.chance[step - 1], x, "game {game} sample {j} step {step}");
                if i < ds.len() {
                    // The real observation after chance: the state after the die roll that
                    // followed the previous decision's move.
                    assert!(ds[i] > 0 && matches!(rec.steps[ds[i] - 1], Step::Chance { .. }));
                }
            }
        }
    }
}

/// The weighted losses of one sample at steps 0..=2 by inference alone, each recurrent
/// application's networks given separately (`gs`, `phis`: steps 1 and 2), the codes fixed
/// (the encoder is not perturbed: its gradient is the straight-through step's, tested
/// below).
fn step_losses(
    h: &MuZero<Ewn>,
    (gs, phis): ([&MuZero<Ewn>; 2], [&MuZero<Ewn>; 2]),
    f: &MuZero<Ewn>,
    s: &MuSample,
    codes: [usize; 2],
) -> [f64; 3] {
    let k = 2.0;
    let mut sc = h.scratch();
    let hs = h.state_len();
    let hn = &h.h;
    hn.layout
        .forward_batch(&hn.params, &hn.weights, &s.x, 1, &mut sc.h);
    let mut state = vec![0.0; hs];
    min_max(&sc.h.logits[..hs], &mut state);
    let mut out = [0.0; 3];
    let mut sigma = Vec::new();
    for (step, o) in out.iter_mut().enumerate() {
        let t = 2.0 * f64::from(s.value[step]) - 1.0;
        let mut l = 0.0;
        if step > 0 {
            let mut after = vec![0.0; hs];
            phis[step - 1].afterstate(&state, s.actions[step - 1], &mut sc, &mut after);
            let q = 2.0 * f.afterstate_predict(&after, &mut sc, &mut sigma) - 1.0;
            l += (q - t) * (q - t) - sigma[codes[step - 1]].max(1e-30).ln();
            let mut next = vec![0.0; hs];
            let r = gs[step - 1].dynamics(&after, codes[step - 1] as Action, &mut sc, &mut next);
            let e = f64::from(r) - f64::from(s.reward[step]);
            l += e * e;
            state = next;
        }
        let v = 2.0 * f.predict(&state, &mut sc) - 1.0;
        let mut p = Vec::new();
        softmax(&sc.f.logits[..f.actions], &mut p);
        let ce: f64 = s.policy[step]
            .iter()
            .map(|&(a, q)| -f64::from(q) * p[a as usize].max(1e-30).ln())
            .sum();
        l += (v - t) * (v - t) + ce;
        *o = if step == 0 { l } else { l / k };
    }
    out
}

/// One sample unrolled K = 2 steps from EWN's first decision, with the real observations
/// after chance, and the encoder's codes of those observations (fixed under the
/// perturbations of the gradient check).
fn gradient_sample(g: &Ewn, m: &MuZero<Ewn>) -> (MuSample, [usize; 2]) {
    let s = decision(g, 0);
    let mut x = vec![0.0; m.encoder.planes().len()];
    m.encoder.encode(&s, &[], &mut x);
    let obs: Vec<Vec<f32>> = (1..=2)
        .map(|o| {
            let mut y = vec![0.0; x.len()];
            m.encoder.encode(&decision(g, o), &[], &mut y);
            y
        })
        .collect();
    let sample = MuSample {
        x,
        actions: vec![1, 2],
        policy: vec![
            vec![(0, 0.25), (1, 0.75)],
            vec![(2, 1.0)],
            vec![(0, 0.5), (3, 0.5)],
        ],
        value: vec![1.0, 0.0, 0.75],
        reward: vec![0.0, 0.5, -1.0],
        chance: obs.clone(),
        first: true,
    };
    let e = &m.chance.as_ref().unwrap().e;
    let codes = [0, 1].map(|i| {
        let mut sc = e.layout.scratch();
        e.layout
            .forward_batch(&e.params, &e.weights, &obs[i], 1, &mut sc);
        argmax(&sc.logits[..3])
    });
    (sample, codes)
}

type Perturb = fn(&mut MuZero<Ewn>, usize, f32);

/// The five networks the gradient check perturbs: index into the trainer's gradients, name,
/// and how to move parameter i by e.
fn perturbations() -> [(usize, &'static str, Perturb); 5] {
    [
        (0, "representation", |mm, i, e| {
            mm.h.params[i] += e;
            mm.h.repack();
        }),
        (1, "dynamics", |mm, i, e| {
            mm.g.params[i] += e;
            mm.g.repack();
        }),
        (2, "prediction", |mm, i, e| {
            mm.f.params[i] += e;
            mm.f.repack();
        }),
        (3, "afterstate dynamics", |mm, i, e| {
            let c = mm.chance.as_mut().unwrap();
            c.phi.params[i] += e;
            c.phi.repack();
        }),
        (4, "afterstate prediction", |mm, i, e| {
            let c = mm.chance.as_mut().unwrap();
            c.psi.params[i] += e;
            c.psi.repack();
        }),
    ]
}

/// Every network's training gradient is the paper's loss's, checked by central differences
/// on one sample unrolled K = 2 steps: the unrolled steps weighted 1/K, the gradient halved
/// at the start of the second recurrent step (phi's input s^1); the afterstate value and
/// sigma's cross-entropy against the encoder's code.
#[test]
fn stochastic_gradients_match_finite_differences() {
    let (g, m) = tiny_stochastic(2);
    let (sample, codes) = gradient_sample(&g, &m);
    let mut t = MuTrainer::new(&m);
    let losses = m.gradients(&[&sample], &mut t);
    assert!(losses.q > 0.0 && losses.sigma > 0.0 && losses.commitment > 0.0);
    let grads = t.grads_for_test();
    assert_eq!(grads.len(), 6);
    assert!(grads[5].iter().any(|&x| x != 0.0), "the encoder learns");
    let eps = 1e-3f32;
    let close = |an: f64, fd: f64, what: &str| {
        assert!(
            (an - fd).abs() <= 2e-3 + 3e-2 * an.abs(),
            "{what}: analytic {an}, finite differences {fd}"
        );
    };
    for (j, name, perturb) in perturbations() {
        let mut checked = 0;
        for (i, &an) in grads[j].iter().enumerate() {
            let an = f64::from(an);
            if an.abs() < 1e-3 || checked >= 6 {
                continue;
            }
            let (mut plus, mut minus) = (m.copy_for_test(), m.copy_for_test());
            perturb(&mut plus, i, eps);
            perturb(&mut minus, i, -eps);
            let d = |l: &dyn Fn(&MuZero<Ewn>) -> [f64; 3]| -> [f64; 3] {
                let (a, b) = (l(&plus), l(&minus));
                [0, 1, 2].map(|q| (a[q] - b[q]) / (2.0 * f64::from(eps)))
            };
            let want = match j {
                // h: steps 0 and 1 whole, step 2 through the halved edge.
                0 => {
                    let l = d(&|mm| step_losses(mm, ([&m, &m], [&m, &m]), &m, &sample, codes));
                    l[0] + l[1] + 0.5 * l[2]
                }
                // g and phi: the first application whole for step 1 and halved for step 2,
                // the second whole.
                1 | 3 => {
                    let first = d(&|mm| {
                        let apps = if j == 1 {
                            ([mm, &m], [&m, &m])
                        } else {
                            ([&m, &m], [mm, &m])
                        };
                        step_losses(&m, apps, &m, &sample, codes)
                    });
                    let second = d(&|mm| {
                        let apps = if j == 1 {
                            ([&m, mm], [&m, &m])
                        } else {
                            ([&m, &m], [&m, mm])
                        };
                        step_losses(&m, apps, &m, &sample, codes)
                    });
                    first[1] + 0.5 * first[2] + second[2]
                }
                // f and psi: every step's loss, each weighted.
                _ => d(&|mm| step_losses(&m, ([&m, &m], [&m, &m]), mm, &sample, codes))
                    .iter()
                    .sum(),
            };
            close(an, want, &format!("{name} {i}"));
            checked += 1;
        }
        assert!(checked >= 3, "{name}: {checked}");
    }
}

/// The codebook's straight-through step: the code is the one-hot of the argmax; the
/// encoder's logits get the gradient reaching the code (copied onto c^e = softmax) plus the
/// commitment's, through the softmax: the central differences of <dc, softmax(z)> + w beta
/// ||c - softmax(z)||^2 with the code c held fixed.
#[test]
fn the_straight_through_step_copies_the_codes_gradient() {
    let logits = [0.3f32, -1.2, 0.9, 0.1];
    let dc = [0.5f32, -0.25, 0.125, 1.0];
    let (beta, w) = (0.7, 0.5);
    let mut dl = [0.0f32; 4];
    let (code, commit) = straight_through(&logits, &dc, beta, w, &mut dl);
    assert_eq!(code, 2);
    let surrogate = |z: &[f64]| {
        let zf: Vec<f32> = z.iter().map(|&x| x as f32).collect();
        let mut p = Vec::new();
        softmax(&zf, &mut p);
        let mut l = 0.0;
        for j in 0..4 {
            let c = if j == code { 1.0 } else { 0.0 };
            l += f64::from(dc[j]) * p[j] + w * beta * (c - p[j]) * (c - p[j]);
        }
        l
    };
    let z: Vec<f64> = logits.iter().map(|&x| f64::from(x)).collect();
    let mut p = Vec::new();
    softmax(&logits, &mut p);
    let want_commit: f64 = (0..4)
        .map(|j| {
            let c = if j == code { 1.0 } else { 0.0 };
            (c - p[j]) * (c - p[j])
        })
        .sum();
    assert!((commit - want_commit).abs() < 1e-9);
    for j in 0..4 {
        let eps = 1e-3;
        let (mut a, mut b) = (z.clone(), z.clone());
        a[j] += eps;
        b[j] -= eps;
        let fd = (surrogate(&a) - surrogate(&b)) / (2.0 * eps);
        assert!(
            (f64::from(dl[j]) - fd).abs() < 1e-4,
            "logit {j}: {} vs {fd}",
            dl[j]
        );
    }
}

/// The search with learned chance (PUCT with either chance rule, and Gumbel) and a training
/// step of all six networks give the same bits at 1 and 2 threads.
#[test]
fn the_stochastic_search_and_training_are_the_same_bits_at_any_thread_count() {
    let (g, m) = tiny_stochastic(3);
    same_bits_at_1_and_2_threads(
        &g,
        m,
        true,
        &[
            "algorithm = \"puct\"\nchance = \"sample\"\nsimulations = 32\n",
            "algorithm = \"puct\"\nchance = \"proportional\"\nsimulations = 32\n",
            "algorithm = \"gumbel\"\nchance = \"sample\"\nsimulations = 32\n",
        ],
    );
}

/// The learned game's afterstates are chance nodes over the C codes with the learned sigma
/// of psi(phi(s, a)), computed when first reached (after their parent is evaluated, as a
/// search reaches them); a code leads to the decision
/// state g(as, c), the other player to move, valued f(g(as, c)).
#[test]
fn the_learned_game_has_chance_nodes_with_the_learned_sigma() {
    use super::learned::{ChanceTable, LearnedEval, LearnedGame};
    use crate::search::Evaluator;
    let (g, m) = tiny_stochastic(2);
    let s = decision(&g, 2);
    let Turn::Player(p) = g.turn(&s) else {
        unreachable!()
    };
    let mut legal = Vec::new();
    g.legal_actions(&s, &mut legal);
    let sigmas = ChanceTable::shared(m.chance.as_ref().unwrap());
    let lg = LearnedGame::new(g.num_actions(), legal.clone(), Some(sigmas.clone()));
    let mut eval = LearnedEval::new(&m, &s, &[]).with_sigmas(sigmas);
    let root = LearnedGame::root(p);
    let mut priors = vec![0.0; legal.len()];
    let mut rng = stream(5, "eval");
    eval.evaluate(&lg, &root, &[], &legal, &mut priors, &mut rng);
    let mut sc = m.scratch();
    let mut h0 = vec![0.0; m.state_len()];
    m.represent(&s, &[], &mut sc, &mut h0);
    let mut outs = Vec::new();
    for &a in &legal {
        let after = lg.apply(&root, a);
        assert_eq!(lg.turn(&after), Turn::Chance);
        lg.chance_outcomes(&after, &mut outs);
        let mut as_ = vec![0.0; m.state_len()];
        m.afterstate(&h0, a, &mut sc, &mut as_);
        let mut sigma = Vec::new();
        m.afterstate_predict(&as_, &mut sc, &mut sigma);
        let probs: Vec<f64> = outs.iter().map(|o| o.prob).collect();
        assert_eq!(probs, sigma, "action {a}");
        assert_eq!(outs.len(), 3);
        for o in &outs {
            let next = lg.apply_chance(&after, o.outcome);
            assert_eq!(lg.turn(&next), Turn::Player(p.other()));
            let all: Vec<Action> = (0..g.num_actions() as Action).collect();
            let mut pr = vec![0.0; all.len()];
            let v = eval.evaluate(&lg, &next, &[], &all, &mut pr, &mut rng);
            let mut st = vec![0.0; m.state_len()];
            m.dynamics(&as_, o.outcome as Action, &mut sc, &mut st);
            assert_eq!(v, m.predict(&st, &mut sc));
        }
    }
}

/// The diversity loss: delta (1 - H(mean softmax) / log C) over the rows, its gradient
/// (times `scale`) added to every row's logits, against central differences; a minibatch
/// whose rows all favour one code scores higher than one spread over the codes.
#[test]
fn the_diversity_loss_gradient_matches_finite_differences() {
    let (codes, delta, scale) = (4usize, 0.8, 3.0);
    let logits = [
        0.3f32, -1.2, 0.9, 0.1, 1.5, 0.2, -0.4, 0.0, -0.3, 0.6, 0.25, -1.0,
    ];
    let mut dl = vec![0.5f32; logits.len()];
    let loss = diversity(&logits, codes, delta, scale, &mut dl);
    let value = |z: &[f32]| diversity(z, codes, 1.0, 0.0, &mut vec![0.0; z.len()]);
    assert!((loss - value(&logits)).abs() < 1e-12);
    for i in 0..logits.len() {
        let eps = 1e-3f32;
        let (mut a, mut b) = (logits, logits);
        a[i] += eps;
        b[i] -= eps;
        let step = f64::from(a[i]) - f64::from(b[i]);
        let fd = scale * delta * (value(&a) - value(&b)) / step;
        let got = f64::from(dl[i]) - 0.5;
        assert!((got - fd).abs() < 1e-4, "logit {i}: {got} vs {fd}");
    }
    let collapsed = [2.0f32, 0.0, 0.0, 0.0, 2.5, 0.1, 0.0, 0.0];
    let spread = [2.0f32, 0.0, 0.0, 0.0, 0.0, 2.5, 0.1, 0.0];
    assert!(value(&collapsed) > value(&spread) + 0.1);
    assert!(value(&spread) >= 0.0 && value(&collapsed) <= 1.0);
}
