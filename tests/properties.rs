//! Property tests (proptest): user input never panics, and invariants hold on arbitrary
//! inputs rather than hand-picked ones.

use proptest::prelude::*;
use tabula::game::{Game, Turn};
use tabula::games::AnyGame;
use tabula::rng::{sample_outcome, stream, uniform_index};
use tabula::store::{ObjectHash, Record, Store};
use tabula::with_game;

const VARIANTS: &[&str] = &[
    "cdc:PPPP",
    "cdc:KGMC",
    "cdc:4x8",
    "ewn:3x3x3",
    "ewn:5x5x6",
    "c4:7x6",
    "c4:5x4",
    "checkers:7x7-6",
    "checkers:5x5-3",
];

fn games() -> Vec<AnyGame> {
    VARIANTS.iter().map(|v| v.parse().unwrap()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Variant names from users: any text is an error or a game, never a panic, and a game's
    /// canonical name parses back to itself.
    #[test]
    fn any_variant_text_is_handled(text in "\\PC{0,40}") {
        if let Ok(g) = text.parse::<AnyGame>() {
            let name = g.variant();
            prop_assert_eq!(name.parse::<AnyGame>().unwrap().variant(), name);
        }
    }

    /// Variant-like text (family, digits, options) exercises the parameter checks.
    #[test]
    fn variant_like_text_is_handled(
        family in prop::sample::select(vec!["cdc", "ewn", "c4", "checkers"]),
        a in 0u32..20, b in 0u32..20, c in 0u32..12,
        letters in "[KGMRNCPXk]{0,6}",
        opt in prop::sample::select(vec!["", ",no_progress=0", ",repetition=off", ",win=filled",
            ",max_plies=5", ",bogus=1", ",no_progress=99999"]),
    ) {
        for text in [
            format!("{family}:{a}x{b}x{c}{opt}"),
            format!("{family}:{a}x{b}{opt}"),
            format!("{family}:{a}x{a}-{c}{opt}"),
            format!("{family}:{letters}{opt}"),
        ] {
            let _ = text.parse::<AnyGame>();
        }
    }

    /// Position text from users: any text is an error or a state, never a panic; a state
    /// that parses prints a notation that parses to the same key.
    #[test]
    fn any_notation_text_is_handled(text in "\\PC{0,60}", which in 0usize..VARIANTS.len()) {
        let game = &games()[which];
        with_game!(game, |g| {
            if let Ok(s) = g.parse_notation(&text) {
                let again = g.parse_notation(&g.notation(&s)).unwrap();
                prop_assert_eq!(g.key(&again), g.key(&s));
            }
        });
    }

    /// Keys from a (possibly damaged) store: any 64-bit value is an error or a state whose key
    /// is that value, never a panic.
    #[test]
    fn any_u64_key_is_handled(key in any::<u64>(), small in 0u64..1 << 20) {
        for text in ["cdc:PPPP", "cdc:GGCC", "ewn:3x3x3", "ewn:5x5x6", "c4:7x6", "c4:4x4"] {
            let game: AnyGame = text.parse().unwrap();
            match &game {
                AnyGame::Cdc(g) => {
                    for k in [key, small] {
                        if let Ok(s) = g.state_from_key(k) { prop_assert_eq!(g.key(&s), k); }
                    }
                }
                AnyGame::Ewn(g) => {
                    for k in [key, small] {
                        if let Ok(s) = g.state_from_key(k) { prop_assert_eq!(g.key(&s), k); }
                    }
                }
                AnyGame::ConnectFour(g) => {
                    for k in [key, small] {
                        if let Ok(s) = g.state_from_key(k) { prop_assert_eq!(g.key(&s), k); }
                    }
                }
                _ => unreachable!(),
            }
        }
    }

    /// The same for the 128-bit keys of Chinese Checkers.
    #[test]
    fn any_u128_key_is_handled(key in any::<u128>()) {
        for text in ["checkers:7x7-6", "checkers:5x5-3"] {
            let AnyGame::Checkers(g) = text.parse::<AnyGame>().unwrap() else { unreachable!() };
            if let Ok(s) = g.state_from_key(key) { prop_assert_eq!(g.key(&s), key); }
        }
    }

    /// Along any random game, every visited state's key decodes to a state with that key, and
    /// replaying the same choices gives the same states (games are pure functions).
    #[test]
    fn random_games_are_reproducible(seed in any::<u64>(), which in 0usize..VARIANTS.len()) {
        let game = &games()[which];
        with_game!(game, |g| {
            let play = || {
                let mut rng = stream(seed, "proptest");
                let mut s = g.initial_state();
                let mut keys = Vec::new();
                let (mut actions, mut outcomes) = (Vec::new(), Vec::new());
                for _ in 0..400 {
                    keys.push(g.key(&s));
                    match g.turn(&s) {
                        Turn::Terminal(_) => break,
                        Turn::Chance => {
                            g.chance_outcomes(&s, &mut outcomes);
                            s = g.apply_chance(&s, outcomes[sample_outcome(&mut rng, &outcomes)].outcome);
                        }
                        Turn::Player(_) => {
                            g.legal_actions(&s, &mut actions);
                            s = g.apply(&s, actions[uniform_index(&mut rng, actions.len())]);
                        }
                    }
                }
                keys
            };
            let keys = play();
            prop_assert_eq!(&keys, &play());
            for k in &keys {
                let s = g.state_from_key(*k).unwrap();
                prop_assert_eq!(g.key(&s), *k);
            }
        });
    }
}

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Blob(Vec<u8>, u64);

impl Record for Blob {
    const KIND: &'static str = "test-blob/v1";
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Any record round-trips through the store, and its address is blake3 over the kind tag,
    /// a zero byte and the postcard bytes.
    #[test]
    fn store_round_trips_any_record(bytes in prop::collection::vec(any::<u8>(), 0..2000), n in any::<u64>()) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("p.db")).unwrap();
        let rec = Blob(bytes, n);
        let h = store.put(&rec).unwrap();
        prop_assert_eq!(h, ObjectHash::of(Blob::KIND, &postcard::to_stdvec(&rec).unwrap()));
        prop_assert_eq!(store.get::<Blob>(&h).unwrap(), rec);
        let report = store.fsck(|_, _| ()).unwrap();
        prop_assert!(report.is_clean());
    }
}
