//! One conformance suite for every variant (in the spirit of OpenSpiel's `basic_tests.h`):
//! random playouts end; chance probabilities are positive and sum to 1; legal actions are
//! inside the action space, ascending and unique; applying an action never changes the state
//! it came from, and applying it in place gives the same state; notation and keys round-trip;
//! the key ignores draw counters; terminal scores sum to 1; the variant name parses back to the
//! same game.

use std::collections::HashSet;

use tabula::game::{Game, Turn};
use tabula::games::AnyGame;
use tabula::rng::{sample_outcome, stream, uniform_index};
use tabula::with_game;

/// Every variant the suite runs on: all 24 CDC material combinations and the other families
/// at the sizes the literature uses.
fn variants() -> Vec<String> {
    let mut v: Vec<String> = [
        "KGGM", "KGGC", "KGGP", "KGMM", "KGMR", "KGMC", "KGMP", "KGCC", "KGCP", "KCCP", "KCPP",
        "KPPP", "GGMM", "GGMR", "GGMC", "GGCC", "GGCP", "GMCP", "GCCP", "GCPP", "GPPP", "CCPP",
        "CPPP", "PPPP",
    ]
    .iter()
    .map(|m| format!("cdc:{m}"))
    .collect();
    v.extend(
        [
            "cdc:PPPP,no_progress=6,repetition=2",
            "cdc:4x8",
            "cdc:4x8,no_progress=50,repetition=off",
            "ewn:3x3x3",
            "ewn:3x3x4",
            "ewn:3x4x3",
            "ewn:5x5x6",
            "ewn:4x6x5",
            "c4:7x6",
            "c4:5x4",
            "c4:4x4",
            "checkers:7x7-6",
            "checkers:5x5-3",
            "checkers:7x7-6,win=filled,max_plies=60",
            "go:5x5",
            "go:7x7,komi=0,max_moves=40",
            "go:9x9",
            "go:13x13,komi=5.5,max_moves=120",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    v
}

const PLAYOUTS: u64 = 60;
const MAX_PLIES: usize = 20_000;

fn check<G: Game>(g: &G, variant: &str) {
    // The canonical name parses back to the same game.
    let name = g.variant();
    let again: AnyGame = name
        .parse()
        .unwrap_or_else(|e| panic!("{variant}: {name}: {e}"));
    assert_eq!(again.variant(), name, "{variant}: variant name round-trip");
    assert!(g.num_actions() > 0);

    let mut actions = Vec::new();
    let mut again_actions = Vec::new();
    let mut outcomes = Vec::new();
    let mut seen_terminal = 0;
    for game in 0..PLAYOUTS {
        let mut rng = stream(1, &format!("conformance({variant},{game})"));
        let mut s = g.initial_state();
        let mut plies = 0;
        loop {
            plies += 1;
            assert!(plies < MAX_PLIES, "{variant}: playout {game} does not end");
            check_state(g, variant, &s, &mut again_actions);
            match g.turn(&s) {
                Turn::Terminal(r) => {
                    let sc = r.scores();
                    assert!(
                        (sc[0] + sc[1] - 1.0).abs() < 1e-12,
                        "{variant}: scores {sc:?}"
                    );
                    assert!(sc.iter().all(|x| (0.0..=1.0).contains(x)));
                    g.legal_actions(&s, &mut actions);
                    assert!(actions.is_empty(), "{variant}: terminal state has actions");
                    seen_terminal += 1;
                    break;
                }
                Turn::Chance => {
                    g.chance_outcomes(&s, &mut outcomes);
                    assert!(
                        !outcomes.is_empty(),
                        "{variant}: chance state without outcomes"
                    );
                    let total: f64 = outcomes.iter().map(|o| o.prob).sum();
                    assert!(
                        (total - 1.0).abs() < 1e-12,
                        "{variant}: chance sums to {total}"
                    );
                    assert!(outcomes.iter().all(|o| o.prob > 0.0));
                    let distinct: HashSet<_> = outcomes.iter().map(|o| o.outcome).collect();
                    assert_eq!(
                        distinct.len(),
                        outcomes.len(),
                        "{variant}: repeated outcome"
                    );
                    g.legal_actions(&s, &mut actions);
                    assert!(actions.is_empty(), "{variant}: chance state has actions");
                    for o in &outcomes {
                        assert!(!g.outcome_name(&s, o.outcome).is_empty());
                    }
                    let before = s;
                    let o = outcomes[sample_outcome(&mut rng, &outcomes)].outcome;
                    let next = g.apply_chance(&s, o);
                    assert_eq!(s, before, "{variant}: apply_chance changed its input");
                    assert_eq!(
                        next,
                        g.apply_chance(&s, o),
                        "{variant}: apply_chance is not pure"
                    );
                    s = next;
                }
                Turn::Player(_) => {
                    g.legal_actions(&s, &mut actions);
                    assert!(
                        !actions.is_empty(),
                        "{variant}: decision state without actions"
                    );
                    assert!(
                        actions.windows(2).all(|w| w[0] < w[1]),
                        "{variant}: actions not ascending and unique: {actions:?}"
                    );
                    assert!(actions.iter().all(|&a| (a as usize) < g.num_actions()));
                    let mut o = Vec::new();
                    g.chance_outcomes(&s, &mut o);
                    assert!(
                        o.is_empty(),
                        "{variant}: decision state has chance outcomes"
                    );
                    for &a in &actions {
                        assert!(!g.action_name(&s, a).is_empty());
                    }
                    let before = s;
                    let key_before = g.key(&s);
                    let a = actions[uniform_index(&mut rng, actions.len())];
                    let next = g.apply(&s, a);
                    assert_eq!(s, before, "{variant}: apply changed its input");
                    assert_eq!(g.key(&s), key_before);
                    assert_eq!(next, g.apply(&s, a), "{variant}: apply is not pure");
                    let mut in_place = s;
                    g.apply_in_place(&mut in_place, a);
                    assert_eq!(
                        in_place, next,
                        "{variant}: apply_in_place differs from apply"
                    );
                    s = next;
                }
            }
        }
    }
    assert_eq!(seen_terminal, PLAYOUTS);
}

/// Key and notation round-trips, and the key's independence of draw counters.
fn check_state<G: Game>(g: &G, variant: &str, s: &G::State, scratch: &mut Vec<tabula::Action>) {
    let key = g.key(s);
    let text = g.notation(s);
    let parsed = g
        .parse_notation(&text)
        .unwrap_or_else(|e| panic!("{variant}: notation `{text}` does not parse: {e}"));
    assert_eq!(
        g.key(&parsed),
        key,
        "{variant}: parse(notation) changes the key: {text}"
    );
    assert_eq!(
        g.notation(&parsed),
        text,
        "{variant}: notation is not canonical"
    );
    let fresh = g
        .state_from_key(key)
        .unwrap_or_else(|e| panic!("{variant}: key {key:?} does not decode: {e}"));
    assert_eq!(
        g.key(&fresh),
        key,
        "{variant}: state_from_key(key) changes the key"
    );
    assert!(!g.render(s).is_empty());
    // A state with the same key but fresh draw counters is the same position: the same kind
    // of turn and the same legal actions, unless the counters themselves ended the game.
    // (The seat to move is compared only by kind: in Chinese dark chess the key holds the
    // colour to move, and one position can be reached with either seat to move.)
    let turn = g.turn(s);
    if !matches!(turn, Turn::Terminal(_)) {
        let same_kind = matches!(
            (g.turn(&fresh), turn),
            (Turn::Player(_), Turn::Player(_)) | (Turn::Chance, Turn::Chance)
        );
        assert!(
            same_kind,
            "{variant}: fresh counters change the turn: {text}"
        );
        let mut a = Vec::new();
        g.legal_actions(s, &mut a);
        g.legal_actions(&fresh, scratch);
        assert_eq!(
            &a, scratch,
            "{variant}: fresh counters change the legal actions: {text}"
        );
    }
}

#[test]
fn every_variant_conforms() {
    for v in variants() {
        let game: AnyGame = v.parse().unwrap_or_else(|e| panic!("{v}: {e}"));
        with_game!(&game, |g| check(g, &v));
    }
}

#[test]
fn bad_variants_are_errors_that_say_what_is_allowed() {
    for bad in [
        "ewn:2x2x9",
        "ewn:3x3",
        "ewn:0x5x2",
        "cdc:XYZW",
        "cdc:PPP",
        "cdc:PPPP,no_progress=0",
        "cdc:PPPP,colour=red",
        "c4:0x6",
        "c4:7x6x2",
        "checkers:4x4-9",
        "checkers:7x7-6,win=sometimes",
        "go:4x4",
        "go:9x9,komi=0.3",
        "go:9x9,max_moves=0",
        "",
    ] {
        let err = bad.parse::<AnyGame>().expect_err(bad).to_string();
        assert!(err.len() > 20, "{bad}: unhelpful error `{err}`");
    }
}
