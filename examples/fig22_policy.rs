//! The learned policy of one position over a run's iterations (the init_q experiment's
//! counterpart of Hsueh et al. 2023, Fig. 22): `cargo run --release --example fig22_policy --
//! DB RUN [POSITION]`. The default position is the EWN 3x3x3 start position whose three moves
//! are worth 0.827 (R2 b1-c2), 0.144 (R2 b1-c1) and 0.193 (R2 b1-b2) for red, as in the figure.
//! Prints, every 10 iterations, the table's probabilities of the legal actions
//! (docs/init-q-experiment.md).

use std::path::Path;

use tabula::game::Game;
use tabula::games::AnyGame;
use tabula::learners::tabular::table::legal_priors;
use tabula::runs::checkout_at;
use tabula::store::Store;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (db, run) = (&args[1], &args[2]);
    let position = args
        .get(3)
        .map_or("R1R2./R3.B3/.B1B2 red 2", String::as_str);
    let AnyGame::Ewn(g) = "ewn:3x3x3".parse::<AnyGame>()? else {
        unreachable!()
    };
    let s = g.parse_notation(position)?;
    let key = format!("{:?}", g.key(&s));
    let mut legal = Vec::new();
    g.legal_actions(&s, &mut legal);
    let store = Store::open(Path::new(db))?;
    println!("{run}: {position}, actions {legal:?}");
    for i in (0..=100).step_by(10) {
        let t = checkout_at(&store, run, i, true)?;
        let Some(r) = t.model.rows.iter().find(|r| r.key == key) else {
            println!("it {i:3}: not in the table");
            continue;
        };
        let (row, updates) = (&r.row, r.updates);
        let logits: Vec<f64> = legal.iter().map(|&a| row[a as usize]).collect();
        let mut p = vec![0.0; legal.len()];
        legal_priors(&row[..t.model.num_actions], &legal, &mut p);
        println!("it {i:3}: p {p:.3?}  (logits {logits:.2?}, {updates} updates)");
    }
    Ok(())
}
