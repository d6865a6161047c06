use super::model::{MuZero, min_max};
use super::train::MuTrainer;
use super::unroll::{MuSample, game_samples};
use crate::game::{Action, Game, Turn};
use crate::game_record::{GameRecord, Step};
use crate::games::{AnyGame, Ewn};
use crate::learners::Learner;
use crate::rng::{GameSlot, stream};
use crate::runs::RunConfig;
use crate::search::{Search, SearchConfig, Uniform};

pub(super) const BASE: &str = "variant = \"ewn:3x3x3\"\nseed = 1\niterations = 2\n\
                    games_per_iteration = 10\nwindow = 2\n[learner]\nkind = \"muzero\"\n";

pub(super) fn parse(extra: &str) -> Result<RunConfig, String> {
    RunConfig::from_toml(&format!("{BASE}{extra}"), "x").map_err(|e| e.to_string())
}

pub(super) fn ewn(cfg: &RunConfig) -> Ewn {
    let AnyGame::Ewn(g) = &cfg.game else {
        panic!("{:?}", cfg.game)
    };
    g.clone()
}

/// A tiny model (state 4, one hidden layer of 6 in each network) with unroll `k`.
pub(super) fn tiny(k: u32) -> (Ewn, MuZero<Ewn>) {
    let cfg = parse(&format!(
        "[learner.muzero]\nstate = 4\nrepresentation = [6]\ndynamics = [6]\n\
         prediction = [6]\nunroll_steps = {k}\n"
    ))
    .unwrap();
    let g = ewn(&cfg);
    let m = MuZero::build(&g, cfg.learner_context(1)).unwrap();
    (g, m)
}

/// A self-play game of EWN searched with uniform priors (8 simulations).
pub(super) fn record(g: &Ewn, game: u32) -> GameRecord {
    let config = SearchConfig {
        simulations: crate::search::Simulations::fixed(8),
        ..SearchConfig::default()
    };
    let mut search = Search::<Ewn>::new(config).unwrap();
    let slot = GameSlot::new(7, 1, game);
    crate::selfplay::self_play_game(g, &mut search, &mut Uniform, slot, None, None).unwrap()
}

/// The first decision state, chance taking its `o`-th outcome (or its last) on the way.
pub(super) fn decision(g: &Ewn, o: usize) -> <Ewn as Game>::State {
    let mut s = g.initial_state();
    let mut outs = Vec::new();
    while g.turn(&s) == Turn::Chance {
        g.chance_outcomes(&s, &mut outs);
        s = g.apply_chance(&s, outs[o.min(outs.len() - 1)].outcome);
    }
    s
}

#[test]
fn settings_parse_and_bad_keys_are_named() {
    let c = parse("").unwrap();
    assert_eq!(
        super::settings::settings_of(&c.settings.learner).unroll_steps,
        5
    );
    for (extra, key) in [
        (
            "[learner.muzero]\nunroll_steps = 0\n",
            "learner.muzero.unroll_steps",
        ),
        ("[learner.muzero]\nstate = 0\n", "learner.muzero.state"),
        (
            "[learner.muzero]\nvalue_target = \"n-step\"\n",
            "learner.muzero.value_target",
        ),
        ("[learner.muzero]\nlr = [[2, 0.1]]\n", "learner.muzero.lr"),
        (
            "[learner.muzero]\nbatch_size = 0\n",
            "learner.muzero.batch_size",
        ),
        (
            "[learner.muzero]\nreplay_games = 21\n",
            "learner.muzero.replay_games",
        ),
        (
            "[learner.muzero]\ndynamics = [0]\n",
            "learner.muzero.dynamics",
        ),
    ] {
        let e = parse(extra).unwrap_err();
        assert!(e.contains(key), "{extra}: {e}");
    }
    let e = parse("[learner.muzero]\nhidden = [3]\n").unwrap_err();
    assert!(e.contains("hidden"), "{e}");
    // The table belongs to MuZero only.
    let e = RunConfig::from_toml(
        "variant = \"ewn:3x3x3\"\niterations = 1\n[learner.muzero]\nstate = 3\n",
        "x",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("learner.muzero"), "{e}");
}

/// The unroll follows the player's decisions (chance steps are no actions), sides alternate,
/// and past the end the steps are absorbing: the outcome for the step's side as value, no
/// policy, the last move's reward on the step after it and 0 after that.
#[test]
fn unroll_targets_fold_chance_and_absorb_past_the_end() {
    let (g, m) = tiny(3);
    let k = 3;
    for game in 0..6 {
        let rec = record(&g, game);
        let states = rec.states(&g).unwrap();
        let result = rec.end.result();
        // The decisions in order: (state, action).
        let ds: Vec<(usize, Action)> = states
            .iter()
            .zip(&rec.steps)
            .enumerate()
            .filter_map(|(i, (s, st))| match (g.turn(s), st) {
                (Turn::Player(_), Step::Move { action, .. }) => Some((i, *action)),
                _ => None,
            })
            .collect();
        assert!(rec.steps.iter().any(|s| matches!(s, Step::Chance { .. })));
        let mut out: Vec<MuSample> = Vec::new();
        game_samples(&g, &m.encoder, (k, false), &rec, &states, &mut out);
        assert_eq!(out.len(), ds.len(), "one sample per searched decision");
        assert!(out[0].first && out[1..].iter().all(|s| !s.first));
        for (j, s) in out.iter().enumerate() {
            let Turn::Player(p) = g.turn(&states[ds[j].0]) else {
                unreachable!()
            };
            assert_eq!(s.actions.len(), k);
            for step in 0..=k {
                let side = if step % 2 == 0 { p } else { p.other() };
                assert_eq!(s.value[step], result.score(side) as f32);
                let real = j + step < ds.len();
                assert_eq!(s.policy[step].is_empty(), !real, "policy at {j}+{step}");
                if step < k && real {
                    assert_eq!(s.actions[step], ds[j + step].1, "the player's actions only");
                }
                let last = step > 0 && j + step == ds.len();
                let r = if last {
                    2.0 * result.score(side.other()) as f32 - 1.0
                } else {
                    0.0
                };
                assert_eq!(s.reward[step], r, "reward at {j}+{step}");
            }
            let total: f32 = s.policy[0].iter().map(|x| x.1).sum();
            assert!((total - 1.0).abs() < 1e-5);
        }
        // The samples are a function of the record.
        let mut again = Vec::new();
        game_samples(&g, &m.encoder, (k, false), &rec, &states, &mut again);
        assert_eq!(out, again);
    }
}

/// The weighted losses of one sample at each step, computed by inference alone, with the
/// dynamics' parameters of each application given separately (`g1` at step 1, `g2` at
/// step 2): for the finite differences.
fn step_losses(h: &MuZero<Ewn>, gs: [&MuZero<Ewn>; 2], f: &MuZero<Ewn>, s: &MuSample) -> [f64; 3] {
    let k = 2.0;
    let mut sc = h.scratch();
    let hs = h.state_len();
    let hn = &h.h;
    hn.layout
        .forward_batch(&hn.params, &hn.weights, &s.x, 1, &mut sc.h);
    let mut state = vec![0.0; hs];
    min_max(&sc.h.logits[..hs], &mut state);
    let mut out = [0.0; 3];
    for (step, o) in out.iter_mut().enumerate() {
        let mut r = 0.0;
        if step > 0 {
            let mut next = vec![0.0; hs];
            r = f64::from(gs[step - 1].dynamics(&state, s.actions[step - 1], &mut sc, &mut next));
            state = next;
        }
        let u = f.predict(&state, &mut sc);
        let v = 2.0 * u - 1.0;
        let t = 2.0 * f64::from(s.value[step]) - 1.0;
        let logits: Vec<f64> = sc.f.logits[..f.actions]
            .iter()
            .map(|&x| f64::from(x))
            .collect();
        let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = logits.iter().map(|x| (x - max).exp()).sum();
        let ce: f64 = s.policy[step]
            .iter()
            .map(|&(a, p)| -f64::from(p) * ((logits[a as usize] - max) - z.ln()))
            .sum();
        let mut l = (v - t) * (v - t) + ce;
        if step > 0 {
            let e = r - f64::from(s.reward[step]);
            l += e * e;
        }
        *o = if step == 0 { l } else { l / k };
    }
    out
}

/// The training gradient is the paper's: the loss's gradient with the unrolled steps
/// weighted 1/K, and the gradient entering s^1 from the second dynamics halved (the
/// pseudocode's `scale_gradient(hidden_state, 0.5)`), checked by central differences on
/// one sample unrolled K = 2 steps.
#[test]
fn gradients_match_finite_differences_with_the_papers_scalings() {
    let (g, m) = tiny(2);
    let s = decision(&g, 0);
    let mut x = vec![0.0; m.encoder.planes().len()];
    m.encoder.encode(&s, &[], &mut x);
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
        chance: Vec::new(),
        first: true,
    };
    let mut t = MuTrainer::new(&m);
    m.gradients(&[&sample], &mut t);
    let grads = t.grads_for_test();
    let eps = 1e-3f32;
    let fd = |perturb: &dyn Fn(&mut MuZero<Ewn>, f32), which: &dyn Fn(&MuZero<Ewn>) -> f64| {
        let mut plus = m.copy_for_test();
        perturb(&mut plus, eps);
        let mut minus = m.copy_for_test();
        perturb(&mut minus, -eps);
        (which(&plus) - which(&minus)) / (2.0 * f64::from(eps))
    };
    let close = |an: f64, fd: f64, what: &str| {
        assert!(
            (an - fd).abs() <= 2e-3 + 3e-2 * an.abs(),
            "{what}: analytic {an}, finite differences {fd}"
        );
    };
    let mut checked = [0usize; 3];
    // The representation: steps 0 and 1 whole, step 2 through the halved edge.
    for (i, &an) in grads[0].iter().enumerate() {
        let an = f64::from(an);
        if an.abs() < 1e-3 || checked[0] >= 6 {
            continue;
        }
        let p = |mm: &mut MuZero<Ewn>, e: f32| {
            mm.h.params[i] += e;
            mm.h.repack();
        };
        let l = |mm: &MuZero<Ewn>| step_losses(mm, [mm, mm], mm, &sample);
        let (a, b, c) = (
            fd(&p, &|mm| l(mm)[0]),
            fd(&p, &|mm| l(mm)[1]),
            fd(&p, &|mm| l(mm)[2]),
        );
        close(an, a + b + 0.5 * c, &format!("representation {i}"));
        checked[0] += 1;
    }
    // The dynamics: its second application whole; its first whole for step 1, halved for
    // step 2.
    for (i, &an) in grads[1].iter().enumerate() {
        let an = f64::from(an);
        if an.abs() < 1e-3 || checked[1] >= 6 {
            continue;
        }
        let p = |mm: &mut MuZero<Ewn>, e: f32| {
            mm.g.params[i] += e;
            mm.g.repack();
        };
        let first = |mm: &MuZero<Ewn>| step_losses(&m, [mm, &m], &m, &sample);
        let second = |mm: &MuZero<Ewn>| step_losses(&m, [&m, mm], &m, &sample);
        let want = fd(&p, &|mm| first(mm)[1])
            + 0.5 * fd(&p, &|mm| first(mm)[2])
            + fd(&p, &|mm| second(mm)[2]);
        close(an, want, &format!("dynamics {i}"));
        checked[1] += 1;
    }
    // The prediction: every step's loss, each weighted.
    for (i, &an) in grads[2].iter().enumerate() {
        let an = f64::from(an);
        if an.abs() < 1e-3 || checked[2] >= 6 {
            continue;
        }
        let p = |mm: &mut MuZero<Ewn>, e: f32| {
            mm.f.params[i] += e;
            mm.f.repack();
        };
        let want = fd(&p, &|mm| {
            step_losses(&m, [&m, &m], mm, &sample).iter().sum()
        });
        close(an, want, &format!("prediction {i}"));
        checked[2] += 1;
    }
    assert!(checked.iter().all(|&c| c >= 3), "{checked:?}");
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// The learned game's search (PUCT and Gumbel) and a training step give the same bits at 1
/// and 2 threads.
#[test]
fn the_learned_search_and_training_are_the_same_bits_at_any_thread_count() {
    let (g, m) = tiny(3);
    same_bits_at_1_and_2_threads(
        &g,
        m,
        false,
        &[
            "algorithm = \"puct\"\nsimulations = 24\n",
            "algorithm = \"gumbel\"\nsimulations = 24\n",
        ],
    );
}

/// A training step of every network on a batch of 40 samples (three chunks) from 4 games
/// unrolled 3 steps, and the searches `configs` (TOML `[search]` tables) in the learned model
/// from a decision state, each at 1 and 2 threads: the same bits. Each search's root is
/// masked to the real legal actions, and the learner's `plan` is the same search.
pub(super) fn same_bits_at_1_and_2_threads(
    g: &Ewn,
    mut m: MuZero<Ewn>,
    stochastic: bool,
    configs: &[&str],
) {
    let mut samples = Vec::new();
    for game in 0..4 {
        let rec = record(g, game);
        let states = rec.states(g).unwrap();
        game_samples(g, &m.encoder, (3, stochastic), &rec, &states, &mut samples);
    }
    let batch: Vec<&MuSample> = samples.iter().cycle().take(40).collect();
    let step = |m: &mut MuZero<Ewn>| {
        let mut t = MuTrainer::new(m);
        m.train_step(&batch, 0.05, &mut t);
        m.nets()
            .iter()
            .flat_map(|n| n.params.iter().map(|x| x.to_bits()))
            .collect::<Vec<_>>()
    };
    let mut a = m.copy_for_test();
    let one = pool(1).install(|| step(&mut a));
    let two = pool(2).install(|| step(&mut m));
    assert_eq!(one, two);
    let s = decision(g, 1);
    for text in configs {
        let config: SearchConfig = toml::from_str(text).unwrap();
        let run = || {
            let mut rng = stream(3, "plan");
            m.plan(g, config, (&s, &[]), 0, &mut rng).unwrap()
        };
        let (r1, r2) = (pool(1).install(run), pool(2).install(run));
        assert_eq!(r1, r2, "{text}");
        let mut legal = Vec::new();
        g.legal_actions(&s, &mut legal);
        assert_eq!(r1.actions, legal, "masked at the root");
        assert!(r1.visits.iter().sum::<u32>() > 0);
    }
    // The learner's plan is the same search.
    let config: SearchConfig = toml::from_str("simulations = 16\n").unwrap();
    let mut rng = stream(3, "plan");
    let via = Learner::plan(&m, g, config, (&s, &[]), 0, &mut rng)
        .unwrap()
        .unwrap();
    let mut rng = stream(3, "plan");
    assert_eq!(via, m.plan(g, config, (&s, &[]), 0, &mut rng).unwrap());
}
