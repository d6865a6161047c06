use super::settings::game_name;
use super::*;
use crate::eval::WinRate;
use crate::eval::reference::ReferenceEval;
use crate::game::{Game, GameResult};
use crate::game_record::{GameEnd, GameRecord};
use crate::games::Abilities;
use crate::learners::Learner;
use crate::nn::{Arith, ValueHead};
use crate::rng::{stream_fmt, uniform_index};
use crate::runs::RunConfig;
use rand::RngExt;

const BASE: &str = "variant = \"ewn:3x3x3\"\nseed = 1\niterations = 2\n\
                    games_per_iteration = 10\nwindow = 2\n[learner]\nkind = \"network\"\n";

fn parse(extra: &str) -> Result<RunConfig, String> {
    RunConfig::from_toml(&format!("{BASE}{extra}"), "x").map_err(|e| e.to_string())
}

#[test]
fn settings_default_to_the_2023_study_and_parse() {
    let c = parse("").unwrap();
    // A new run's kernels fuse each multiply and add; a record without the key (every
    // run stored before it) means separate ones.
    let fused = NetworkSettings {
        arithmetic: Some(ArithKind::Fused),
        ..NetworkSettings::default()
    };
    assert_eq!(settings_of(&c.settings.learner), fused);
    assert_eq!(fused.arith(), Arith::Fused);
    assert_eq!(NetworkSettings::default().arith(), Arith::Separate);
    let c = parse("[learner.network]\narithmetic = \"separate\"\n").unwrap();
    assert_eq!(settings_of(&c.settings.learner).arith(), Arith::Separate);
    let e = parse("[learner.network]\narithmetic = \"fma\"\n").unwrap_err();
    assert!(e.contains("arithmetic") && e.contains("fused"), "{e}");
    // The value head: tanh by default (left out of the record), sigmoid on request.
    assert_eq!(NetworkSettings::default().value_head, ValueHeadKind::Tanh);
    let c = parse("[learner.network]\nvalue_head = \"sigmoid\"\n").unwrap();
    let n = settings_of(&c.settings.learner);
    assert_eq!(n.value_head.head(), ValueHead::Sigmoid);
    let json = serde_json::to_value(&n).unwrap();
    assert_eq!(json["value_head"], "sigmoid");
    let json = serde_json::to_value(NetworkSettings::default()).unwrap();
    assert!(json.get("value_head").is_none(), "{json}");
    let e = parse("[learner.network]\nvalue_head = \"relu\"\n").unwrap_err();
    assert!(e.contains("value_head") && e.contains("sigmoid"), "{e}");
    let c = parse(
        "[learner.network]\narch = \"resnet\"\nblocks = 3\nchannels = 8\n\
         optimizer = \"adam\"\nlr = [[1, 0.1], [2, 0.01]]\nreplay_games = 20\n",
    )
    .unwrap();
    let n = settings_of(&c.settings.learner);
    assert_eq!((n.arch, n.blocks, n.channels), (ArchKind::ResNet, 3, 8));
    assert_eq!((n.lr_at(1), n.lr_at(2), n.lr_at(9)), (0.1, 0.01, 0.01));
    // Tabular runs' settings do not name the network (their hashes do not move).
    let t = RunConfig::from_toml("variant = \"ewn:3x3x3\"\niterations = 1\n", "x").unwrap();
    let json = serde_json::to_string(&t.settings).unwrap();
    assert!(!json.contains("network"), "{json}");
}

/// The literature spec of Liu et al.'s pipeline (`runs/checkers-liu.toml`) is valid, reads
/// their 7 x 7 x 7 input, and its network has their 247,386 trainable values (batch norm's
/// scale and shift counted, its running statistics not); with tabula's earlier reading (the
/// position's 3 planes, a padded stem, no convolution biases, AlphaGo Zero's head sizes) it
/// had 168,767 values, running statistics included.
#[test]
fn the_liu_spec_parses_and_its_network_has_the_reported_size() {
    let text = include_str!("../../../runs/checkers-liu.toml");
    let cfg = RunConfig::from_toml(text, "t").unwrap();
    assert_eq!(cfg.iterations, 200);
    let crate::games::AnyGame::Checkers(g) = &cfg.game else {
        panic!("{:?}", cfg.game)
    };
    let net = Network::build(g, cfg.learner_context(1)).unwrap();
    let input = net.layout().input();
    assert_eq!((input.channels, input.height, input.width), (7, 7, 7));
    assert_eq!(net.layout().trainable(), 247_386);
    let earlier = text
        .replace("input = \"liu\"", "input = \"position\"")
        .replace("stem = \"valid\"", "stem = \"same\"")
        .replace("conv_bias = true", "conv_bias = false")
        .replace("policy_channels = 16", "policy_channels = 2")
        .replace("value_hidden = 32", "value_hidden = 256");
    let cfg = RunConfig::from_toml(&earlier, "t").unwrap();
    let net = Network::build(g, cfg.learner_context(1)).unwrap();
    assert_eq!(net.parameters(), 168_767);
}

#[test]
fn the_tiny_spec_parses() {
    let c = RunConfig::from_toml(include_str!("../../../runs/network-tiny.toml"), "x").unwrap();
    assert_eq!(c.game.variant(), "ewn:3x3x3");
    let n = settings_of(&c.settings.learner);
    assert_eq!((n.arch, n.hidden.clone()), (ArchKind::Mlp, vec![32]));
}

const CHECKERS: &str = "variant = \"checkers:5x5-3\"\nseed = 1\niterations = 2\n\
                        games_per_iteration = 10\nwindow = 2\neval.wr_p = false\n\
                        eval.errors = false\n[learner]\nkind = \"network\"\n";

fn checkers_config(extra: &str) -> RunConfig {
    RunConfig::from_toml(&format!("{CHECKERS}[learner.network]\n{extra}\n"), "x").unwrap()
}

/// A game of `g` as a self-play record: every move "searched", one visit on the move
/// played (as the greedy mover's records), ending as the rules end it.
fn random_record(g: &crate::games::Checkers, i: u32) -> GameRecord {
    use crate::game::Turn;
    use crate::game_record::{SearchStats, Step};

    let mut rng = stream_fmt(11, format_args!("record({i})"));
    let (mut s, mut legal, mut steps) = (g.initial_state(), Vec::new(), Vec::new());
    let mut features = Vec::new();
    let result = loop {
        match g.turn(&s) {
            Turn::Terminal(r) => break r,
            Turn::Player(_) => {
                g.legal_actions(&s, &mut legal);
                // In even games mostly the greedy move of largest forward gain (they
                // end), else a uniform one (odd games run into the move limit).
                g.greedy_features(&s, &legal, &mut features);
                let k = if i.is_multiple_of(2) && rng.random::<f64>() < 0.7 {
                    (0..legal.len()).max_by_key(|&k| features[k].0).unwrap()
                } else {
                    uniform_index(&mut rng, legal.len())
                };
                let mut visits = vec![0; legal.len()];
                visits[k] = 1;
                steps.push(Step::Move {
                    action: legal[k],
                    search: Some(SearchStats {
                        visits,
                        target: None,
                        full: true,
                    }),
                });
                s = g.apply(&s, legal[k]);
            }
            Turn::Chance => unreachable!("Chinese Checkers has no chance"),
        }
    };
    GameRecord {
        variant: g.variant(),
        seed: 5,
        stream: format!("self-play(1,{i})"),
        players: ["self-play".into(), "self-play".into()],
        start: None,
        steps,
        end: GameEnd::Finished(result),
    }
}

type Net = Network<crate::games::Checkers>;

fn samples_of(c: &RunConfig, g: &crate::games::Checkers, r: &GameRecord) -> Vec<NetSample> {
    let mut out = Vec::new();
    let states = r.states(g).unwrap();
    <Net as Learner<_>>::samples(g, c.learner_context(1), r, &states, &mut out).unwrap();
    out
}

/// A sample's bits: planes, legal actions, target, outcome, whether first.
type SampleBits = (Vec<u32>, Vec<u16>, Vec<u32>, u32, bool);

fn bits(v: &[NetSample]) -> Vec<SampleBits> {
    v.iter()
        .map(|s| {
            let e = &s.example;
            (
                e.x.iter().map(|x| x.to_bits()).collect(),
                e.legal.clone(),
                e.target.iter().map(|x| x.to_bits()).collect(),
                e.z.to_bits(),
                s.first,
            )
        })
        .collect()
}

fn checkers() -> crate::games::Checkers {
    match "checkers:5x5-3,max_plies=60".parse().unwrap() {
        crate::games::AnyGame::Checkers(g) => g,
        _ => unreachable!(),
    }
}

/// `retain = F`: a sample is kept by a draw from the record's own stream, so the kept set
/// is the same every time; F = 1 keeps every sample; over many samples the kept fraction
/// is near F; the first kept sample of a game is marked first.
#[test]
fn retained_samples_are_a_function_of_the_record() {
    let g = checkers();
    let all_cfg = checkers_config("");
    let cfg = checkers_config("retain = 0.25");
    let half = checkers_config("retain = 0.5");
    let (mut total, mut kept) = (0usize, 0usize);
    for i in 0..60 {
        let r = random_record(&g, i);
        let all = samples_of(&all_cfg, &g, &r);
        assert_eq!(all.len(), r.steps.len());
        let some = samples_of(&cfg, &g, &r);
        assert_eq!(bits(&some), bits(&samples_of(&cfg, &g, &r)), "game {i}");
        // A smaller fraction keeps a subset of a larger one's samples (same draws).
        let more: Vec<_> = bits(&samples_of(&half, &g, &r))
            .into_iter()
            .map(|b| (b.0, b.1, b.2, b.3))
            .collect();
        for b in bits(&some) {
            assert!(more.contains(&(b.0, b.1, b.2, b.3)), "game {i}");
        }
        // The kept samples are a subsequence of all, the first of them marked first.
        let all_bits = bits(&all);
        let mut at = 0;
        for (k, b) in bits(&some).into_iter().enumerate() {
            let (x, legal, target, z, first) = b;
            assert_eq!(first, k == 0);
            let pos = all_bits[at..]
                .iter()
                .position(|a| (&a.0, &a.1, &a.2, a.3) == (&x, &legal, &target, z))
                .expect("a kept sample is one of the game's samples");
            at += pos + 1;
        }
        total += all.len();
        kept += some.len();
    }
    let f = kept as f64 / total as f64;
    assert!(total > 2000 && (0.2..0.3).contains(&f), "{kept} of {total}");
}

/// `augment = "mirror"`: each kept sample is followed by its image: the planes of the
/// mirrored state (each plane reflected), its legal actions ascending with their
/// preimages' targets, the same outcome.
#[test]
fn mirror_augmentation_adds_each_samples_image() {
    let g = checkers();
    let plain = checkers_config("");
    let cfg = checkers_config("augment = \"mirror\"\nretain = 0.5");
    let half = checkers_config("retain = 0.5");
    let m = g.mirror().unwrap();
    let n = g.side();
    for i in 0..5 {
        let r = random_record(&g, i);
        let kept = samples_of(&half, &g, &r);
        let both = samples_of(&cfg, &g, &r);
        assert_eq!(both.len(), 2 * kept.len());
        assert!(samples_of(&plain, &g, &r).len() > kept.len());
        for (k, pair) in both.chunks(2).enumerate() {
            let (a, b) = (&pair[0].example, &pair[1].example);
            assert_eq!(bits(&[pair[0].clone()]), bits(&[kept[k].clone()]));
            assert!(!pair[1].first);
            assert_eq!(a.z, b.z);
            assert!(b.legal.is_sorted());
            // Planes: square (r, c) of the image is square (n-1-c, n-1-r) of the sample.
            for ch in 0..3 {
                for r in 0..n {
                    for c in 0..n {
                        let at = |r: usize, c: usize| ch * n * n + r * n + c;
                        assert_eq!(b.x[at(n - 1 - c, n - 1 - r)], a.x[at(r, c)]);
                    }
                }
            }
            let nn = (n * n) as u16;
            // (Chinese Checkers' action image does not depend on the state.)
            for (&act, &t) in a.legal.iter().zip(&a.target) {
                let j = b
                    .legal
                    .binary_search(&(m.action)(&g, &g.initial_state(), act));
                assert_eq!(b.target[j.unwrap()], t);
                assert_eq!(act / nn, b.legal[j.unwrap()] / nn, "same checker");
            }
        }
    }
    // Refused on a game without a mirror image, naming the game.
    let e = parse("[learner.network]\naugment = \"mirror\"\n").unwrap_err();
    assert!(
        e.contains("learner.network.augment") && e.contains("Ewn"),
        "{e}"
    );
    assert_eq!(game_name::<crate::games::Go9>(), "Go");
    let e = parse("[learner.network]\naugment = \"rotate\"\n").unwrap_err();
    assert!(e.contains("augment") && e.contains("mirror"), "{e}");
}

/// `skip_draws`: a drawn game gives no samples; a decided one all of them.
#[test]
fn drawn_games_can_be_skipped() {
    let g = checkers();
    let skip = checkers_config("skip_draws = true");
    let keep = checkers_config("");
    let (mut draws, mut wins) = (0, 0);
    for i in 0..40 {
        let r = random_record(&g, i);
        let n = samples_of(&skip, &g, &r).len();
        if r.end.result() == GameResult::Draw {
            draws += 1;
            assert_eq!(n, 0);
            assert!(!samples_of(&keep, &g, &r).is_empty());
        } else {
            wins += 1;
            assert_eq!(n, r.steps.len());
        }
    }
    assert!(draws > 0 && wins > 0, "{draws} draws, {wins} wins");
}

/// `train_epochs = E`: E passes over the buffer, each sample once a pass; the same bits
/// twice; another iteration's permutation gives other weights. Both keys at once are
/// refused, naming both.
#[test]
fn training_passes_are_deterministic() {
    let g = checkers();
    let cfg = checkers_config("train_epochs = 2\nbatch_size = 7\nhidden = [8]");
    let window: Vec<NetSample> = (0..3)
        .flat_map(|i| samples_of(&cfg, &g, &random_record(&g, i)))
        .collect();
    let refs: Vec<&NetSample> = window.iter().collect();
    let train = |iteration: u32| {
        let mut net = <Net as Learner<_>>::new(&g, cfg.learner_context(4)).unwrap();
        let r = net.train(cfg.learner_context(4), iteration, &refs);
        (
            r.samples,
            net.params.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        )
    };
    let (samples, a) = train(1);
    assert_eq!(samples, 2 * window.len() as u64);
    assert_eq!(train(1).1, a);
    assert_ne!(train(2).1, a);
    let untrained = <Net as Learner<_>>::new(&g, cfg.learner_context(4)).unwrap();
    assert_ne!(
        untrained
            .params
            .iter()
            .map(|x| x.to_bits())
            .collect::<Vec<_>>(),
        a
    );
    let e = RunConfig::from_toml(
        &format!("{CHECKERS}[learner.network]\ntrain_epochs = 2\ntrain_steps = 10\n"),
        "x",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("train_steps") && e.contains("train_epochs"),
        "{e}"
    );
}

/// The new keys are left out of the settings record at their defaults (earlier runs
/// keep their hashes) and written when set.
#[test]
fn data_settings_are_left_out_at_their_defaults() {
    let json = serde_json::to_value(NetworkSettings::default()).unwrap();
    for key in ["retain", "augment", "skip_draws", "train_epochs"] {
        assert!(json.get(key).is_none(), "{key}: {json}");
    }
    let c =
        checkers_config("retain = 0.04\naugment = \"mirror\"\nskip_draws = true\ntrain_epochs = 2");
    let json = serde_json::to_value(settings_of(&c.settings.learner)).unwrap();
    assert_eq!(json["retain"], 0.04);
    assert_eq!(json["augment"], "mirror");
    assert_eq!(json["skip_draws"], true);
    assert_eq!(json["train_epochs"], 2);
}

#[test]
fn bad_settings_name_the_key() {
    let cases = [
        ("arch = \"transformer\"", "arch"),
        ("hidden = [0]", "learner.network.hidden"),
        ("channels = 0", "learner.network.channels"),
        ("bottleneck = 9999", "learner.network.bottleneck"),
        ("value_hidden = 8", "learner.network.value_hidden"),
        ("batch_norm = true", "learner.network.batch_norm"),
        ("blocks = 99", "learner.network.blocks"),
        ("optimizer = \"lbfgs\"", "optimizer"),
        ("lr = []", "learner.network.lr"),
        ("lr = [[2, 0.1]]", "learner.network.lr"),
        ("lr = [[1, 0.1], [1, 0.01]]", "learner.network.lr[1]"),
        ("lr = [[1, -0.1]]", "learner.network.lr[0]"),
        ("momentum = 1.0", "learner.network.momentum"),
        ("adam_beta2 = -0.5", "learner.network.adam_beta2"),
        ("adam_eps = 0.0", "learner.network.adam_eps"),
        ("adam_eps = 5e-324", "learner.network.adam_eps"),
        ("lr = [[1, 1e300]]", "learner.network.lr[0]"),
        ("weight_decay = 1e300", "learner.network.weight_decay"),
        ("weight_decay = -1.0", "learner.network.weight_decay"),
        ("batch_size = 0", "learner.network.batch_size"),
        ("train_steps = 2000000", "learner.network.train_steps"),
        ("train_epochs = 0", "learner.network.train_epochs"),
        ("train_epochs = 1001", "learner.network.train_epochs"),
        ("retain = 0.0", "learner.network.retain"),
        ("retain = 1.5", "learner.network.retain"),
        ("retain = nan", "learner.network.retain"),
        ("replay_games = 0", "learner.network.replay_games"),
        ("replay_games = 21", "learner.network.replay_games"),
        ("bogus = 1", "bogus"),
    ];
    for (line, key) in cases {
        let e = parse(&format!("[learner.network]\n{line}\n")).unwrap_err();
        assert!(e.contains(key), "{line}: {e}");
    }
    let e = RunConfig::from_toml(
        "variant = \"ewn:3x3x3\"\niterations = 1\n[learner.network]\nhidden = [4]\n",
        "x",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("learner.network") && e.contains("kind"), "{e}");
}

/// An evaluation without reference metrics has the bytes of the layout before them (the
/// heads of earlier runs stay), and both kinds read back as written.
#[test]
fn evaluations_without_reference_metrics_keep_their_bytes() {
    let e = plain_evaluation();
    // The layout before them: the eight fields one after another (postcard writes a
    // struct as a tuple).
    let before = postcard::to_stdvec(&first_eight_fields()).unwrap();
    assert_eq!(postcard::to_stdvec(&e).unwrap(), before);
    assert_eq!(
        postcard::from_bytes::<NetworkEvaluation>(&before).unwrap(),
        e
    );
    let with = with_reference();
    let bytes = postcard::to_stdvec(&with).unwrap();
    assert!(bytes.len() > before.len());
    assert_eq!(
        postcard::from_bytes::<NetworkEvaluation>(&bytes).unwrap(),
        with
    );
    // Without the search player's scores, the reference metrics keep the bytes of their
    // first layout (two fields, no third), so earlier heads stay.
    let r = with.reference.as_ref().unwrap();
    let first_layout = postcard::to_stdvec(&(first_eight_fields(), (&r.solver, &r.c4))).unwrap();
    assert_eq!(bytes, first_layout);
    // With them: a third field, read back as written.
    let searched = with_search_scores();
    let more = postcard::to_stdvec(&searched).unwrap();
    assert!(more.starts_with(&bytes) && more.len() > bytes.len());
    assert_eq!(
        postcard::from_bytes::<NetworkEvaluation>(&more).unwrap(),
        searched
    );
}

/// The reference metrics of an evaluation read as the learner's metric values, by name.
#[test]
fn reference_metrics_are_metric_values() {
    let searched = with_search_scores();
    let values = <Network<crate::games::Ewn> as Learner<_>>::metric_values(&searched);
    assert_eq!(
        crate::eval::metric(&values, "c4_search_best_move_l3_r1"),
        Some(0.9)
    );
    assert_eq!(
        crate::eval::metric(&values, "c4_search_best_move"),
        Some(0.9)
    );
    let values = <Network<crate::games::Ewn> as Learner<_>>::metric_values(&with_reference());
    assert_eq!(values.len(), NETWORK_METRICS.len());
    assert_eq!(crate::eval::metric(&values, "wr_solver_10x"), Some(0.375));
    assert_eq!(
        crate::eval::metric(&values, "c4_best_move_l3_r1"),
        Some(0.7)
    );
    assert_eq!(crate::eval::metric(&values, "wr_solver_1x"), None);
}

/// An evaluation without reference metrics or gating.
fn plain_evaluation() -> NetworkEvaluation {
    NetworkEvaluation {
        iteration: 3,
        wr_p: None,
        err_p: Some(0.1),
        mae_v: Some(0.2),
        seen: 9,
        loss_policy: 1.5,
        loss_value: 0.25,
        buffer: 7,
        reference: None,
        gate: None,
    }
}

/// [`plain_evaluation`]'s eight fields as a tuple: the layout before the reference metrics.
#[allow(clippy::type_complexity)]
fn first_eight_fields() -> (
    u32,
    Option<WinRate>,
    Option<f64>,
    Option<f64>,
    u64,
    f64,
    f64,
    u64,
) {
    (3, None, Some(0.1), Some(0.2), 9, 1.5, 0.25, 7)
}

/// [`plain_evaluation`] with solver and Connect Four scores (no search player's).
fn with_reference() -> NetworkEvaluation {
    NetworkEvaluation {
        reference: Some(ReferenceEval {
            solver: vec![crate::eval::reference::SolverScore {
                multiplier: 10,
                games: 4,
                wins: 1,
                draws: 1,
                score: 0.375,
                ci95: 0.4,
                auc: Some(1.0),
            }],
            c4: vec![crate::eval::reference::C4SetScore {
                set: "L3_R1".into(),
                positions: 10,
                value_error: 0.3,
                best_moves: 7,
            }],
            c4_search: Vec::new(),
            greedy: None,
        }),
        ..plain_evaluation()
    }
}

/// [`with_reference`] with the search player's scores too.
fn with_search_scores() -> NetworkEvaluation {
    let mut searched = with_reference();
    if let Some(r) = searched.reference.as_mut() {
        r.c4_search = vec![crate::eval::reference::C4SearchScore {
            set: "L3_R1".into(),
            positions: 10,
            best_moves: 9,
        }];
    }
    searched
}

/// A network on a real game: a position's priors and value are the same bits through the
/// evaluator alone and after any other positions (the search's batch of one and the
/// evaluation's loops agree).
#[test]
fn a_positions_output_does_not_depend_on_what_came_before() {
    let g = crate::games::Ewn::new(3, 3, 3).unwrap();
    let c = parse("[learner.network]\narch = \"resnet\"\nblocks = 1\nchannels = 4\n").unwrap();
    let ctx = c.learner_context(9);
    let net = <Network<crate::games::Ewn> as Learner<_>>::new(&g, ctx).unwrap();
    let states = g.test_positions();
    let mut legal = Vec::new();
    let alone: Vec<(Vec<u64>, u64)> = states
        .iter()
        .map(|s| {
            g.legal_actions(s, &mut legal);
            let mut p = vec![0.0; legal.len()];
            let v = net.eval().priors_value(s, &[], &legal, &mut p);
            (p.iter().map(|x| x.to_bits()).collect(), v.to_bits())
        })
        .collect();
    let mut ev = net.eval();
    for (s, want) in states.iter().zip(&alone).rev() {
        g.legal_actions(s, &mut legal);
        let mut p = vec![0.0; legal.len()];
        let v = ev.priors_value(s, &[], &legal, &mut p);
        assert_eq!(
            &(
                p.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                v.to_bits()
            ),
            want
        );
    }
}

/// The evaluation cache (`cache.rs`) answers with the network's own bits: a batch holding
/// every test position twice, then the same positions again in reverse order (all answered
/// from the cache), give each position the priors and value it gets alone, uncached.
#[test]
fn the_evaluation_cache_answers_with_the_networks_bits() {
    use crate::search::{Evaluator, Leaf};
    let g = crate::games::Ewn::new(3, 3, 3).unwrap();
    let c = parse("[learner.network]\narch = \"resnet\"\nblocks = 1\nchannels = 4\n").unwrap();
    let net = <Network<crate::games::Ewn> as Learner<_>>::new(&g, c.learner_context(9)).unwrap();
    let states = g.test_positions();
    let legal: Vec<Vec<crate::game::Action>> = states
        .iter()
        .map(|s| {
            let mut l = Vec::new();
            g.legal_actions(s, &mut l);
            l
        })
        .collect();
    let alone = |k: usize| {
        let mut p = vec![0.0; legal[k].len()];
        let v = net.eval().priors_value(&states[k], &[], &legal[k], &mut p);
        (
            p.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            v.to_bits(),
        )
    };
    let want: Vec<_> = (0..states.len()).map(alone).collect();
    let mut ev = net.eval();
    let twice: Vec<usize> = (0..states.len()).chain(0..states.len()).collect();
    let reverse: Vec<usize> = (0..states.len()).rev().collect();
    for order in [twice, reverse] {
        let mut priors: Vec<Vec<f64>> = order.iter().map(|&k| vec![0.0; legal[k].len()]).collect();
        let mut rngs: Vec<_> = order
            .iter()
            .map(|_| crate::rng::stream(1, "cache"))
            .collect();
        let mut leaves: Vec<Leaf<'_, crate::games::Ewn>> = order
            .iter()
            .zip(priors.iter_mut().zip(rngs.iter_mut()))
            .map(|(&k, (p, rng))| Leaf {
                state: &states[k],
                past: &[],
                legal: &legal[k],
                priors: p,
                rng,
                value: 0.0,
            })
            .collect();
        ev.evaluate_batch(&g, &mut leaves);
        for (l, &k) in leaves.iter().zip(&order) {
            let got = (
                l.priors.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                l.value.to_bits(),
            );
            assert_eq!(got, want[k], "position {k}");
        }
    }
    // The first batch computes each position once; the second finds them in the cache but
    // for those a later position of the first batch evicted (two positions of one slot).
    let (n, (hits, computed)) = (states.len() as u64, ev.cache_counts());
    assert_eq!(hits + computed, 2 * n, "{hits} hits, {computed} computed");
    assert!(hits * 2 > n, "{hits} of {n} from the cache");
}
