//! Go's rules on small hand-made positions, and the incremental chains against a rebuild.

use super::*;
use crate::games::AnyGame;
use crate::rng::{stream, uniform_index};

fn go9(v: &str) -> Go9 {
    match v.parse::<AnyGame>() {
        Ok(AnyGame::Go(g)) => g,
        other => panic!("{v}: {other:?}"),
    }
}

fn legal(g: &Go9, s: &Go9State) -> Vec<Action> {
    let mut out = Vec::new();
    g.legal_actions(s, &mut out);
    out
}

/// The action of a vertex name.
fn at(g: &Go9, v: &str) -> Action {
    if v == "pass" {
        return g.pass_action();
    }
    let (r, c) = parse_vertex(v, g.n).unwrap_or_else(|| panic!("vertex {v}"));
    (r * g.n + c) as Action
}

fn play(g: &Go9, s: &Go9State, moves: &str) -> Go9State {
    let mut s = *s;
    for m in moves.split_whitespace() {
        let a = at(g, m);
        assert!(
            legal(g, &s).contains(&a),
            "{m} is illegal in {}",
            g.notation(&s)
        );
        s = g.apply(&s, a);
    }
    s
}

#[test]
fn variants_parse_and_name_themselves() {
    let g = go9("go:9x9");
    assert_eq!(g.variant(), "go:9x9");
    assert_eq!(g.num_actions(), 82);
    assert_eq!((g.komi(), g.max_moves()), (7.5, 162));
    assert_eq!(go9("go").variant(), "go:9x9");
    assert_eq!(
        go9("go:5x5,komi=6,max_moves=20").variant(),
        "go:5x5,komi=6,max_moves=20"
    );
    assert_eq!(go9("go:7x7,komi=-0.5").variant(), "go:7x7,komi=-0.5");
    assert_eq!(go9("go:9x9,komi=7.5,max_moves=162").variant(), "go:9x9");
    match "go:19x19".parse::<AnyGame>() {
        Ok(AnyGame::GoLarge(g)) => {
            assert_eq!((g.variant(), g.num_actions()), ("go:19x19".into(), 362))
        }
        other => panic!("{other:?}"),
    }
    for bad in [
        "go:4x4",
        "go:20x20",
        "go:9x8",
        "go:9",
        "go:9x9,komi=7.25",
        "go:9x9,komi=x",
        "go:5x5,komi=26",
        "go:9x9,max_moves=1",
        "go:9x9,max_moves=163",
        "go:9x9,handicap=2",
    ] {
        let e = bad.parse::<AnyGame>().expect_err(bad).to_string();
        assert!(
            e.contains("allowed") || e.contains("expected"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn captures_free_points_and_suicide_is_illegal() {
    let g = go9("go:5x5");
    // White's A1 stone in atari: black captures it with B1.
    let s = g.parse_notation("...../...../...../x..../o.... x").unwrap();
    let t = play(&g, &s, "B1");
    assert_eq!(g.notation(&t), "...../...../...../x..../.x... o");
    // White may not play back into A1 (suicide: no capture, no liberty).
    assert!(!legal(&g, &t).contains(&at(&g, "A1")));
    // Multi-stone suicide: white's A1-A2 chain has its last liberty at A3; filling it is
    // illegal, while black may play there and capture two stones.
    let s = g.parse_notation("...../x..../.x.../ox.../ox... o").unwrap();
    assert!(!legal(&g, &s).contains(&at(&g, "A3")));
    let s = g.parse_notation("...../x..../.x.../ox.../ox... x").unwrap();
    let t = play(&g, &s, "A3");
    assert_eq!(g.notation(&t), "...../x..../xx.../.x.../.x... o");
    // A stone with no liberty of its own is legal when it joins a chain that keeps one.
    let s = g.parse_notation("...../...../...../.x.../x.x.. x").unwrap();
    assert!(legal(&g, &s).contains(&at(&g, "B1")));
}

#[test]
fn simple_ko_forbids_the_immediate_recapture_only() {
    let g = go9("go:5x5");
    // Black takes the ko at C3 (capturing B3); white may not retake at B3 at once.
    let s = g.parse_notation("...../.xo../xo.o./.xo../..... x").unwrap();
    let t = play(&g, &s, "C3");
    assert_eq!(g.notation(&t), "...../.xo../x.xo./.xo../..... o ko=B3");
    assert!(!legal(&g, &t).contains(&at(&g, "B3")));
    // After an exchange elsewhere it may (and sets the ko point C3); a pass clears it.
    let u = play(&g, &t, "E5 E1 B3");
    assert_eq!(g.notation(&u), "....o/.xo../xo.o./.xo../....x x ko=C3");
    let v = play(&g, &t, "pass");
    assert_eq!(g.notation(&v), "...../.xo../x.xo./.xo../..... x passes=1");
    let w = play(&g, &v, "A1 B3");
    assert_eq!(g.notation(&w), "...../.xo../xo.o./.xo../x.... x ko=C3");
}

#[test]
fn a_repeated_board_ends_the_game_drawn() {
    let g = go9("go:7x7");
    // Two kos: white can take at C6 (ko A), black at C2 (ko B). W C6, B C2, W pass, B B6
    // (retakes A), W B2 (retakes B): the start board again.
    let start = ".ox..../ox.x.../.ox..../......./.xo..../xo.o.../.xo.... o";
    let s = g.parse_notation(start).unwrap();
    let t = play(&g, &s, "C6 C2 pass B6");
    assert_eq!(g.turn(&t), Turn::Player(Player::P1));
    assert!(!g.ended_by_repetition(&t));
    let u = play(&g, &t, "B2");
    assert!(g.ended_by_repetition(&u));
    assert_eq!(g.turn(&u), Turn::Terminal(GameResult::Draw));
    assert!(legal(&g, &u).is_empty());
    assert_eq!(g.notation(&u), start.replace(" o", " x ko=C2"));
    // The same board reached by a pass does not count (only stone moves are checked).
    let p = play(&g, &s, "pass");
    assert_eq!(g.turn(&p), Turn::Player(Player::P0));
}

#[test]
fn tromp_taylor_scores_area_and_komi() {
    // Black owns columns A-B, white D-E, column C touches both: 10 - 10.
    let board = ".x.o./.x.o./.x.o./.x.o./.x.o. x passes=2";
    for (v, want) in [
        ("go:5x5", GameResult::Win(Player::P1)),
        ("go:5x5,komi=0", GameResult::Draw),
        ("go:5x5,komi=-0.5", GameResult::Win(Player::P0)),
    ] {
        let g = go9(v);
        let s = g.parse_notation(board).unwrap();
        assert_eq!(g.area_difference(&s), 0);
        assert_eq!(g.turn(&s), Turn::Terminal(want), "{v}");
    }
    // Two passes end the game; so does the move limit.
    let g = go9("go:5x5,komi=0");
    let s = play(&g, &g.initial_state(), "C3 pass");
    assert_eq!(g.turn(&s), Turn::Player(Player::P0));
    let s = play(&g, &s, "pass");
    assert_eq!(g.area_difference(&s), 25);
    assert_eq!(g.turn(&s), Turn::Terminal(GameResult::Win(Player::P0)));
    let g = go9("go:5x5,max_moves=3");
    let s = play(&g, &g.initial_state(), "C3 D3 pass");
    assert_eq!(g.turn(&s), Turn::Terminal(GameResult::Win(Player::P1)));
    assert_eq!(g.area_difference(&s), 0);
}

#[test]
fn keys_and_notation_reject_impossible_positions() {
    let g = go9("go:5x5");
    for bad in [
        "...../...../...../...../..... z",
        "...../...../...../...../.... x",
        "...../...../...../..... x",
        "...../...../...../...../...q. x",
        "...../...../...../x..../ox... x", // a chain without liberty
        "...../...../...../...../..... x ko=C3",
        "...../.ox../o.xx./.ox../..... o ko=B3 passes=1",
        "...../.ox../o.xx./.ox../..... x ko=B3", // the ko point is the mover's own eye
        "...../...../...../...../..... x passes=3",
        "...../...../...../...../..... x passes=1 ko=A1",
        "...../...../...../...../..... x ko=Z9",
        "...../...../...../...../..... x ko=A0", // row 0: no vertex (and no underflow)
    ] {
        assert!(g.parse_notation(bad).is_err(), "{bad}");
    }
    let s = g
        .parse_notation("...../.xo../x.xo./.xo../..... o ko=B3")
        .unwrap();
    let k = g.key(&s);
    assert_eq!(g.state_from_key(k).unwrap(), s);
    let mut stray = k;
    stray.0[2] |= 1 << 63;
    assert!(g.state_from_key(stray).is_err());
    assert!(g.state_from_key(GoKey([3, 0, 0])).is_err());
    // Keys serialise as their words.
    let bytes = postcard::to_allocvec(&k).unwrap();
    assert_eq!(postcard::from_bytes::<GoKey<3>>(&bytes).unwrap(), k);
}

/// The chain data of every stone, rebuilt from the board alone: (size, pseudo-liberties,
/// their sum and squares, whether the chain has exactly one liberty by flood fill).
fn chain_facts<const P: usize, const H: usize, const K: usize>(
    g: &Go<P, H, K>,
    s: &GoState<P, H>,
) -> Vec<(u16, u16, u32, u32, bool)> {
    let mut out = Vec::new();
    for r in 0..g.n {
        for c in 0..g.n {
            let p = g.point(r, c);
            if !is_stone(s.color[p]) {
                continue;
            }
            let h = s.head[p] as usize;
            // Real liberties by flood fill over the chain.
            let mut stones = vec![p];
            let mut seen = vec![p];
            let mut libs = std::collections::BTreeSet::new();
            while let Some(q) = stones.pop() {
                for m in g.neighbours(q) {
                    if s.color[m] == EMPTY {
                        libs.insert(m);
                    } else if s.color[m] == s.color[p] && !seen.contains(&m) {
                        seen.push(m);
                        stones.push(m);
                    }
                }
            }
            assert_eq!(s.size[h] as usize, seen.len(), "chain size at {r},{c}");
            assert!(seen.iter().all(|&q| s.head[q] as usize == h));
            assert_eq!(g.in_atari(s, h), libs.len() == 1, "atari at {r},{c}");
            out.push((s.size[h], s.libs[h], s.lsum[h], s.lsq[h], libs.len() == 1));
        }
    }
    out
}

#[test]
fn incremental_chains_match_a_rebuild_in_random_games() {
    for v in ["go:5x5", "go:7x7", "go:9x9"] {
        let g = go9(v);
        let mut rng = stream(3, &format!("go-chains({v})"));
        let mut actions = Vec::new();
        let mut repetitions = 0;
        for _ in 0..20 {
            let mut s = g.initial_state();
            while let Turn::Player(_) = g.turn(&s) {
                let rebuilt = g.state_from_key(g.key(&s)).unwrap();
                assert_eq!(chain_facts(&g, &s), chain_facts(&g, &rebuilt));
                assert_eq!(s.hash, rebuilt.hash);
                g.legal_actions(&s, &mut actions);
                let a = actions[uniform_index(&mut rng, actions.len())];
                s = g.apply(&s, a);
            }
            repetitions += g.ended_by_repetition(&s) as usize;
        }
        assert!(repetitions < 20, "{v}");
    }
}

#[test]
fn large_boards_play_to_the_end() {
    let any: AnyGame = "go:13x13,max_moves=100".parse().unwrap();
    let AnyGame::GoLarge(g) = any else {
        panic!("13x13 is in the large class")
    };
    let mut rng = stream(5, "go-large");
    let mut actions = Vec::new();
    let mut s = g.initial_state();
    while let Turn::Player(_) = g.turn(&s) {
        let rebuilt = g.state_from_key(g.key(&s)).unwrap();
        assert_eq!(chain_facts(&g, &s), chain_facts(&g, &rebuilt));
        g.legal_actions(&s, &mut actions);
        s = g.apply(&s, actions[uniform_index(&mut rng, actions.len())]);
    }
    assert!(g.moves_played(&s) <= 100);
    assert_eq!(
        g.parse_notation(&g.notation(&s)).map(|t| g.key(&t)),
        Ok(g.key(&s))
    );
}

/// `random_action` draws only legal actions, each about equally often: from positions along
/// random games on 5x5 (late ones have few legal moves, many surrounded points and a ko
/// point), 200 draws per legal action, every count within 5 standard deviations of the
/// mean; the counts' total chi-square is near its degrees of freedom.
#[test]
fn random_actions_are_uniform_over_the_legal_ones() {
    let g = go9("go:5x5");
    let mut rng = stream(3, "go-random-action-test");
    let mut scratch = Vec::new();
    let (mut chi2, mut dof) = (0.0, 0usize);
    for game in 0..6 {
        let mut s = g.initial_state();
        let mut ply = 0;
        while matches!(g.turn(&s), Turn::Player(_)) {
            if ply % 7 == game % 7 {
                let legal = legal(&g, &s);
                let draws = 200 * legal.len();
                let mut counts = vec![0u32; g.num_actions()];
                for _ in 0..draws {
                    let a = g.random_action(&s, &mut scratch, &mut |n| uniform_index(&mut rng, n));
                    assert!(legal.binary_search(&a).is_ok(), "{a} is not legal");
                    counts[a as usize] += 1;
                }
                // Each count is Binomial(draws, 1/L): mean 200.
                let var = 200.0 * (1.0 - 1.0 / legal.len() as f64);
                for &a in &legal {
                    let d = f64::from(counts[a as usize]) - 200.0;
                    assert!(
                        d.abs() <= 5.0 * var.sqrt(),
                        "action {a}: {}",
                        counts[a as usize]
                    );
                    chi2 += d * d / 200.0;
                }
                dof += legal.len() - 1;
            }
            let a = g.random_action(&s, &mut scratch, &mut |n| uniform_index(&mut rng, n));
            s = g.apply(&s, a);
            ply += 1;
        }
    }
    // chi-square with dof degrees of freedom: mean dof, standard deviation sqrt(2 dof).
    let z = (chi2 - dof as f64) / (2.0 * dof as f64).sqrt();
    assert!(
        dof > 100 && z.abs() < 5.0,
        "chi2 {chi2:.1} over {dof} degrees of freedom"
    );
}
