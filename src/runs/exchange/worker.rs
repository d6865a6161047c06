//! A worker: a process that serves an exchange (module docs of runs/exchange), playing the
//! slices of whatever task the trainer publishes, until the trainer's run is over.

use std::time::{Duration, Instant};

use super::task::{Task, put_slice, read_task};
use super::{Current, Exchange, RunError, Watch};
use crate::games::Abilities;
use crate::learners::Learner;
use crate::rng::GameSlot;
use crate::selfplay::LaneGame;

/// How a worker waits.
#[derive(Clone, Debug)]
pub struct WorkOptions {
    /// A worker with nothing to do for this long (the trainer gone) stops.
    pub idle_exit: Duration,
    /// A worker that finds `finished` before it has worked waits this long for a new run
    /// (a trainer starting beside it, in one `srun`) before it stops.
    pub grace: Duration,
}

/// What a worker did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct WorkSummary {
    pub tasks: u32,
    pub slices: u32,
    pub games: u64,
    /// Seconds spent playing.
    pub play_seconds: f64,
    pub seconds: f64,
    /// Why it stopped: `finished` (the trainer's run is over) or `idle`.
    pub stopped: &'static str,
}

/// One slice played, for progress lines.
#[derive(Clone, Debug)]
pub struct SlicePlayed {
    pub iteration: u32,
    pub slice: u32,
    pub games: std::ops::Range<u32>,
    pub seconds: f64,
}

/// Serves the exchange `x` (see the module docs) on the current rayon pool until the
/// trainer's run is over or nothing happens for `opts.idle_exit`; `on_slice` hears of every
/// slice played.
pub fn work(
    x: &Exchange,
    opts: &WorkOptions,
    on_slice: &mut dyn FnMut(&SlicePlayed),
) -> Result<WorkSummary, RunError> {
    let started = Instant::now();
    let mut summary = WorkSummary::default();
    let (mut seen, mut changed) = (None, Instant::now());
    let build = super::super::execute::build_line();
    loop {
        let c = x.current();
        if seen.as_ref() != Some(&c) {
            (seen, changed) = (Some(c.clone()), Instant::now());
        }
        match &c {
            Current::Task(id) => {
                if let Some((task, hash)) = read_task(x, id) {
                    if task.build != build {
                        return Err(RunError::Exchange(format!(
                            "the trainer runs build `{}`, this worker `{build}`: the same \
                             build must run everywhere (another build may play other bits)",
                            task.build
                        )));
                    }
                    serve(x, id, &task, &hash, &mut summary, on_slice)?;
                    changed = Instant::now();
                }
            }
            Current::Finished if summary.tasks > 0 || changed.elapsed() >= opts.grace => {
                summary.stopped = "finished";
                break;
            }
            _ => {}
        }
        if changed.elapsed() >= opts.idle_exit {
            summary.stopped = "idle";
            break;
        }
        x.pause();
    }
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// A task being served: where it is and what it holds.
struct Serving<'a> {
    x: &'a Exchange,
    id: &'a str,
    task: &'a Task,
    hash: crate::store::ObjectHash,
    settings: crate::runs::Settings,
    objects: crate::store::Store,
}

/// Plays the slices of task `id` that nobody else plays, for as long as it is the current
/// task (a slice abandoned by a lost worker is taken over).
fn serve(
    x: &Exchange,
    id: &str,
    task: &Task,
    hash: &crate::store::ObjectHash,
    summary: &mut WorkSummary,
    on_slice: &mut dyn FnMut(&SlicePlayed),
) -> Result<(), RunError> {
    let game: crate::games::AnyGame = task
        .variant
        .parse()
        .map_err(|e| RunError::Exchange(format!("task {id}: variant {}: {e}", task.variant)))?;
    let objects = task.objects_store()?;
    let settings = super::super::load_settings(&objects, &task.settings)?;
    summary.tasks += 1;
    let kind = settings.learner.kind;
    let s = Serving {
        x,
        id,
        task,
        hash: *hash,
        settings,
        objects,
    };
    crate::with_game!(&game, |g| serve_game(g, kind, &s, summary, on_slice))
}

/// [`serve`] with the task's game.
fn serve_game<G: Abilities>(
    g: &G,
    kind: crate::learners::LearnerKind,
    s: &Serving<'_>,
    summary: &mut WorkSummary,
    on_slice: &mut dyn FnMut(&SlicePlayed),
) -> Result<(), RunError> {
    crate::with_learner!(kind, L => serve_with::<G, L<G>>(g, s, summary, on_slice))
}

/// [`serve`] with the task's game and learner.
fn serve_with<G: Abilities, L: Learner<G>>(
    g: &G,
    s: &Serving<'_>,
    summary: &mut WorkSummary,
    on_slice: &mut dyn FnMut(&SlicePlayed),
) -> Result<(), RunError> {
    let (x, id, task) = (s.x, s.id, s.task);
    let ctx = s.settings.learner_context(task.model_seed);
    let model = L::restore(g, ctx, &s.objects, task.model.as_ref())?;
    let (mut watch, settings) = (Watch::default(), &s.settings);
    while x.current() == Current::Task(id.to_string()) {
        let mut played = false;
        for k in 0..task.slices() {
            // A task that is no longer current is left at once (the trainer moved on).
            if x.current() != Current::Task(id.to_string()) {
                break;
            }
            let Some(claim) = x.try_claim(id, k, &mut watch) else {
                continue;
            };
            let t = Instant::now();
            let records = claim.held(|| play_slice(g, task, settings, &model, k))?;
            let n = records.len() as u64;
            match put_slice(x, id, &s.hash, k, records) {
                // The task's folder removed under it: the trainer moved on, nothing is lost.
                Err(_) if x.current() != Current::Task(id.to_string()) => return Ok(()),
                r => r?,
            };
            drop(claim);
            let seconds = t.elapsed().as_secs_f64();
            (summary.slices, summary.games) = (summary.slices + 1, summary.games + n);
            summary.play_seconds += seconds;
            on_slice(&SlicePlayed {
                iteration: task.iteration,
                slice: k,
                games: task.games_of(k),
                seconds,
            });
            played = true;
        }
        if !played {
            x.pause();
        }
    }
    Ok(())
}

/// The records of slice `k` of `task`, played with `model` under `settings` (the trainer's
/// own slices come through here too).
pub(crate) fn play_slice<G: Abilities, L: Learner<G>>(
    g: &G,
    task: &Task,
    settings: &crate::runs::Settings,
    model: &L,
    k: u32,
) -> Result<Vec<crate::game_record::GameRecord>, RunError> {
    let mut games = Vec::new();
    for game in task.games_of(k) {
        let start = match &task.starts[game as usize] {
            Some(text) => Some(g.parse_notation(text).map_err(|e| {
                RunError::Exchange(format!(
                    "task {}: start of game {game}: {e}",
                    task.iteration
                ))
            })?),
            None => None,
        };
        games.push(LaneGame {
            slot: GameSlot::new(task.seed, task.iteration, game),
            start,
            tree: false,
        });
    }
    let ctx = settings.learner_context(task.model_seed);
    let played =
        super::super::play::play_lanes(g, settings, ctx, model, task.iteration, &games, None)?;
    Ok(played.into_iter().flatten().map(|p| p.record).collect())
}
