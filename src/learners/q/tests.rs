//! Q-learning's tests: a TD update by hand, the Huber loss, transitions of a played game, the
//! epsilon schedule, Deep Q-Learning's step, a checkpoint read back, and the settings' errors.

use super::records::QCheckpoint;
use super::train::{minibatches, train_network, train_table};
use super::*;
use crate::game::{Player, Turn};
use crate::game_record::Step;
use crate::games::{AnyGame, Checkers};
use crate::nn::huber;
use crate::runs::RunConfig;
use crate::search::{Search, SearchConfig, Uniform};
use crate::selfplay::{Moves, Seats, learner_seat};

fn checkers(v: &str) -> Checkers {
    match v.parse::<AnyGame>().unwrap() {
        AnyGame::Checkers(g) => g,
        _ => unreachable!(),
    }
}

fn spec(name: &str) -> RunConfig {
    let path = format!("{}/runs/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    RunConfig::from_toml(&std::fs::read_to_string(path).unwrap(), "x").unwrap()
}

/// The start, a legal action of it, the state after it and a legal action of that.
fn two_states(
    g: &Checkers,
) -> (
    <Checkers as Game>::State,
    Action,
    <Checkers as Game>::State,
    Vec<Action>,
) {
    let s0 = g.initial_state();
    let mut legal = Vec::new();
    g.legal_actions(&s0, &mut legal);
    legal.sort_unstable();
    let s1 = g.apply(&s0, legal[0]);
    let mut legal1 = Vec::new();
    g.legal_actions(&s1, &mut legal1);
    legal1.sort_unstable();
    (s0, legal[0], s1, legal1)
}

/// Algorithm 1's update by hand: a terminal transition first (Q = 0 + 0.5 (10 - 0) = 5), then
/// one bootstrapping from it (y = 0.5 + 0.9 x 5 = 5, Q = 0.5 x 5 = 2.5); targets of a
/// minibatch are computed before its updates (the same transition twice: both from Q = 0).
#[test]
fn a_td_update_by_hand() {
    let g = checkers("checkers:4x4-1");
    let (s0, a, s1, legal1) = two_states(&g);
    let b = legal1[1];
    let q = QSettings {
        alpha: 0.5,
        gamma: 0.9,
        ..QSettings::default()
    };
    let t0 = Transition {
        state: s0,
        action: a,
        reward: 0.5,
        next: Some((s1, legal1.clone())),
        past: Vec::new(),
        next_past: Vec::new(),
    };
    let t1 = Transition {
        state: s1,
        action: b,
        reward: 10.0,
        next: None,
        past: Vec::new(),
        next_past: Vec::new(),
    };
    let window = [&t0, &t1];
    let mut table = BTreeMap::new();
    let stats = train_table(&g, &q, &mut table, &window, &[vec![1], vec![0]]);
    assert_eq!(table[&g.key(&s1)].q[b as usize], 5.0);
    assert_eq!(table[&g.key(&s0)].q[a as usize], 2.5);
    assert_eq!(table[&g.key(&s0)].updates, 1);
    // |TD errors| 10 and 5; squared halves 50 and 12.5.
    assert_eq!((stats.td_error, stats.loss), (7.5, 31.25));
    assert_eq!((stats.transitions, stats.minibatches), (2, 2));
    // Both copies of t1 in one minibatch target 10 from Q = 5: 5 + 2.5, then 7.5 + 1.25.
    train_table(&g, &q, &mut table, &window, &[vec![1, 1]]);
    assert_eq!(table[&g.key(&s1)].q[b as usize], 8.75);
    // Every other entry of a row stays 0.
    let row = &table[&g.key(&s1)].q;
    assert_eq!(row.iter().filter(|&&x| x != 0.0).count(), 1);
}

#[test]
fn minibatches_wait_for_the_prefill_and_are_a_function_of_the_seed() {
    let q = QSettings {
        batch_size: 4,
        minibatches: 3,
        prefill: 10,
        ..QSettings::default()
    };
    assert!(minibatches(&q, 1, 1, 9).is_empty());
    let m = minibatches(&q, 1, 1, 10);
    assert_eq!(m.len(), 3);
    assert!(m.iter().all(|b| b.len() == 4 && b.iter().all(|&i| i < 10)));
    assert_eq!(m, minibatches(&q, 1, 1, 10));
    assert_ne!(m, minibatches(&q, 1, 2, 10));
}

/// Liu et al.'s eq. 9 at delta 1, and its derivative.
#[test]
fn the_huber_loss_by_hand() {
    assert_eq!(huber(0.5, 1.0), (0.125, 0.5));
    assert_eq!(huber(-1.0, 1.0), (0.5, -1.0));
    assert_eq!(huber(3.0, 1.0), (2.5, 1.0));
    assert_eq!(huber(-3.0, 1.0), (2.5, -1.0));
    assert_eq!(huber(2.0, 0.5), (0.875, 0.5));
}

#[test]
fn epsilon_falls_linearly_then_stays() {
    let q = QSettings::default();
    assert_eq!(q.epsilon(1), 1.0);
    assert!((q.epsilon(51) - 0.55).abs() < 1e-12);
    assert!((q.epsilon(101) - 0.1).abs() < 1e-12);
    assert!((q.epsilon(5000) - 0.1).abs() < 1e-12);
    let now = QSettings {
        epsilon_iterations: 0,
        ..QSettings::default()
    };
    assert_eq!(now.epsilon(1), 0.1);
}

/// A game against the greedy opponent gives one transition per learner move: the shaped
/// reward 0.01 x Psi, the next state the learner's next decision, the last one terminal
/// with the outcome's reward; the outcome reward alone gives only the terminal term.
#[test]
fn transitions_of_a_game_against_the_greedy_player() {
    let g = checkers("checkers:4x4-3");
    let first =
        |_: &<Checkers as Game>::State, _: &[<Checkers as Game>::State], legal: &[Action]| legal[0];
    let seats = Seats {
        moves: Moves::EpsilonGreedy {
            epsilon: 0.5,
            greedy: &first,
        },
        opponent: crate::selfplay::Opponent::Greedy,
        soft: None,
    };
    let mut search = Search::new(SearchConfig::default()).unwrap();
    let mut checked = 0;
    for game in 0..6 {
        let r = crate::selfplay::self_play_game_by(
            &g,
            seats,
            &mut search,
            &mut Uniform,
            crate::rng::GameSlot::new(9, 1, game),
            None,
            None,
        )
        .unwrap();
        let states = r.states(&g).unwrap();
        let seat = learner_seat(game);
        let mine: Vec<usize> = (0..r.steps.len())
            .filter(|&i| g.turn(&states[i]) == Turn::Player(seat))
            .collect();
        let mut out = Vec::new();
        let q = QSettings::default();
        transitions::transitions(&g, &q, &r, &states, 0, &mut out);
        assert_eq!(out.len(), mine.len());
        for (j, (t, &i)) in out.iter().zip(&mine).enumerate() {
            let Step::Move { action, .. } = r.steps[i] else {
                panic!()
            };
            assert_eq!((t.state, t.action), (states[i], action));
            let shaped = 0.01 * f64::from(g.rows_advanced(&states[i], action).unwrap());
            match mine.get(j + 1) {
                Some(&k) => {
                    assert_eq!(t.next.as_ref().unwrap().0, states[k]);
                    assert_eq!(t.reward, shaped);
                }
                None => {
                    assert!(t.next.is_none());
                    let outcome = match r.end.result().score(seat) {
                        1.0 => 10.0,
                        0.0 => -10.0,
                        _ => 0.0,
                    };
                    assert_eq!(t.reward, shaped + outcome);
                    checked += usize::from(outcome != 0.0);
                }
            }
        }
        let outcome_only = QSettings {
            reward: RewardKind::Outcome,
            ..QSettings::default()
        };
        let mut only = Vec::new();
        transitions::transitions(&g, &outcome_only, &r, &states, 0, &mut only);
        let nonzero = only.iter().filter(|t| t.reward != 0.0).count();
        assert!(nonzero <= 1 && only[..only.len() - 1].iter().all(|t| t.reward == 0.0));
    }
    assert!(checked > 0, "no game ended in a win or a loss");
    let _ = Player::P0;
}

/// Deep Q-Learning's step moves Q(S, a) toward its target on the chosen action, and the
/// greedy action follows the Q-values; the same training is the same bits.
#[test]
fn deep_q_learning_fits_a_target() {
    let cfg = spec("checkers-tiny-dqn");
    let g = checkers("checkers:4x4-1");
    let ctx = cfg.learner_context(1);
    let (s0, _, _, _) = two_states(&g);
    let mut legal = Vec::new();
    g.legal_actions(&s0, &mut legal);
    legal.sort_unstable();
    let a = *legal.last().unwrap();
    let t = Transition {
        state: s0,
        action: a,
        reward: 3.0,
        next: None,
        past: Vec::new(),
        next_past: Vec::new(),
    };
    let q = settings_of(ctx.learner);
    let run = || {
        let mut m = <QLearning<Checkers> as Learner<Checkers>>::new(&g, ctx).unwrap();
        let net = m.net.as_mut().unwrap();
        let mut last = TrainStats::default();
        for _ in 0..150 {
            last = train_network(&q, net, 0.05, &[&t], &[vec![0; 8]]);
        }
        (m, last)
    };
    let (m, last) = run();
    let before = <QLearning<Checkers> as Learner<Checkers>>::new(&g, ctx).unwrap();
    let q0 = before.q_values(&g, &s0, &[])[a as usize];
    let q1 = m.q_values(&g, &s0, &[])[a as usize];
    assert!((q0 - 3.0).abs() > 1.0, "{q0}");
    assert!((q1 - 3.0).abs() < 0.1, "{q0} -> {q1}");
    assert!(last.td_error < 0.2 && last.loss < 0.05, "{last:?}");
    assert_eq!(Learner::greedy_action(&m, &g, &s0, &[], &legal), a);
    assert_eq!(m.q_values(&g, &s0, &[]), run().0.q_values(&g, &s0, &[]));
}

/// A table's checkpoint is read back to the same table; its root names no other object.
#[test]
fn a_table_checkpoint_reads_back() {
    let cfg = spec("checkers-tiny-tabular-q");
    let g = checkers("checkers:4x4-1");
    let ctx = cfg.learner_context(1);
    let (s0, a, s1, legal1) = two_states(&g);
    let t = Transition {
        state: s0,
        action: a,
        reward: 1.0,
        next: Some((s1, legal1)),
        past: Vec::new(),
        next_past: Vec::new(),
    };
    let mut m = <QLearning<Checkers> as Learner<Checkers>>::new(&g, ctx).unwrap();
    m.stats = train_table(&g, &m.settings, &mut m.table, &[&t], &[vec![0, 0]]);
    let c = Learner::checkpoint(&m, &g, ctx, 3, None).unwrap();
    assert_eq!(c.objects.len(), 1);
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("t.db")).unwrap();
    store
        .write(|w| {
            c.objects
                .iter()
                .try_for_each(|o| w.put_encoded(o).map(drop))
        })
        .unwrap();
    let back: QCheckpoint<<Checkers as Game>::Key> = store.get(&c.root).unwrap();
    assert_eq!((back.iteration, back.keys.len()), (3, 1));
    let r = <QLearning<Checkers> as Learner<Checkers>>::restore(&g, ctx, &store, Some(&c.root))
        .unwrap();
    assert_eq!(r.table, m.table);
    assert_eq!(r.stats, m.stats);
    assert!(<QLearning<Checkers> as Learner<Checkers>>::stored(&store, &c.root).unwrap());
}

/// Bad settings are refused naming the key, the value and what is allowed.
#[test]
fn bad_settings_name_the_key() {
    let base = "variant = \"checkers:4x4-1\"\niterations = 1\n";
    let q = "[learner]\nkind = \"q-learning\"\n";
    let opp = "[selfplay]\nopponent = \"greedy\"\n";
    let cases = [
        (format!("{base}{q}"), "`selfplay.opponent`"),
        (
            format!("{base}[selfplay]\nopponent = \"greedy\"\nmover = \"greedy\"\n{q}"),
            "`selfplay.mover`",
        ),
        (
            format!("{base}{opp}{q}[learner.q]\ngamma = 1.5\n"),
            "`learner.q.gamma`",
        ),
        (
            format!("{base}{opp}{q}[learner.q]\nbatch_size = 0\n"),
            "`learner.q.batch_size`",
        ),
        (
            format!("{base}{opp}{q}[learner.q]\nhuber_delta = 0\n"),
            "`learner.q.huber_delta`",
        ),
        (
            format!("{base}{opp}{q}[learner.network]\nhidden = [8]\n"),
            "`learner.network`",
        ),
        (
            format!("{base}[learner]\nkind = \"network\"\n[learner.q]\ngamma = 0.5\n"),
            "`learner.q`",
        ),
        (
            format!("variant = \"ewn:3x3x3\"\niterations = 1\n{opp}{q}"),
            "`learner.q.reward`",
        ),
    ];
    for (text, wanted) in cases {
        let e = RunConfig::from_toml(&text, "t").unwrap_err().to_string();
        assert!(e.contains(wanted), "{text}: {e}");
    }
    // The outcome reward needs no forward gain; the greedy opponent still needs the heuristic.
    let text = format!(
        "variant = \"ewn:3x3x3\"\niterations = 1\n{opp}{q}[learner.q]\nreward = \"outcome\"\n"
    );
    let e = RunConfig::from_toml(&text, "t").unwrap_err().to_string();
    assert!(e.contains("`selfplay.opponent`"), "{e}");
}
