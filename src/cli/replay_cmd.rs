//! `tabula replay`: re-play a stored game from its inputs, check its hash, show it.

use std::path::Path;

use anyhow::{Context, bail};
use tabula::game_record::GameRecord;
use tabula::games::Abilities;
use tabula::games::AnyGame;
use tabula::matches::rerun;
use tabula::players::{Player, PlayerSpec};
use tabula::store::{ObjectHash, Record, Store};
use tabula::with_game;

use super::args::ReplayArgs;
use super::common::{Layout, show_game};
use super::output::outln;

pub(crate) fn run(db: Option<&Path>, args: &ReplayArgs) -> anyhow::Result<()> {
    let path = Store::resolve_path(db);
    if !path.exists() {
        bail!("no store at {}", path.display());
    }
    let mut store = Store::open_read_only(&path)?;
    let Some(hash) = store.find_object(&args.hash, <GameRecord as Record>::KIND)? else {
        bail!(
            "no game record `{}` in the store (give at least {} hex digits of its hash, as \
             `tabula match --record` prints it or `tabula show RUN --games I` lists a run's)",
            args.hash,
            tabula::store::MIN_PREFIX
        );
    };
    let record: GameRecord = store.get(&hash)?;
    let game: AnyGame = record
        .variant
        .parse()
        .with_context(|| format!("the record's variant `{}`", record.variant))?;
    with_game!(&game, |g| replay(g, &record, &hash, &mut store, args.show))
}

fn replay<G: Abilities>(
    g: &G,
    record: &GameRecord,
    hash: &ObjectHash,
    store: &mut Store,
    show: bool,
) -> anyhow::Result<()> {
    let states = record.states(g)?;
    let specs: Result<Vec<PlayerSpec>, _> = record.players.iter().map(|p| p.parse()).collect();
    let verdict = match specs {
        Ok(specs) => {
            let p0 = Player::resolve(&specs[0], g, Some(store))?;
            let p1 = Player::resolve(&specs[1], g, Some(store))?;
            let again = rerun(g, record, [&p0, &p1])?;
            let h = again.hash();
            if h != *hash {
                bail!(
                    "re-playing {} from its inputs gave a different game (hash {h}); \
                     the engine or a dependency changed since it was recorded",
                    hash
                );
            }
            "re-played from its inputs (players, seed, stream): identical, hash checked"
        }
        // A self-play game: both seats the learner's, or one against the opponent seat.
        Err(_)
            if record
                .players
                .iter()
                .any(|p| p == tabula::selfplay::SELF_PLAY) =>
        {
            match tabula::runs::replay_self_play(store, hash)? {
                Some(r) if r.hash == *hash => {
                    outln!(
                        "self-play game {} of iteration {} of run {}",
                        r.game,
                        r.iteration,
                        r.run_id
                    );
                    "re-played from its inputs (the table after the previous iteration, the \
                     run's search settings, seed and stream): identical, hash checked"
                }
                Some(r) => bail!(
                    "re-playing self-play game {} of iteration {} of run {} from its inputs gave \
                     a different game (hash {}); the engine or a dependency changed since",
                    r.game,
                    r.iteration,
                    r.run_id,
                    r.hash
                ),
                None => "a self-play game no run lists: recorded steps checked for legality",
            }
        }
        Err(_) => "players are not specs: recorded steps checked for legality",
    };
    if show {
        show_game(g, record, &states, Layout::Spaced);
    }
    outln!(
        "{}  {}  stream {} of seed {}  {} plies  {}",
        record.variant,
        hash.short(),
        record.stream,
        record.seed,
        record.plies(),
        record.end
    );
    outln!(
        "  player 0: {}\n  player 1: {}",
        record.players[0],
        record.players[1]
    );
    outln!("{verdict}");
    Ok(())
}
