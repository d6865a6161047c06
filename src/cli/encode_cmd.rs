//! `tabula encode`: a position's network input, the planes a run's network reads
//! (docs/network.md, "Inputs"), so an exported model can be checked without an encoder.

use anyhow::bail;
use serde::Serialize;
use tabula::games::inputs::{NetworkInput, network_input, parse_position};
use tabula::games::{Abilities, AnyGame};
use tabula::with_game;

use super::args::EncodeArgs;
use super::output::{JsonLayout, Report, emit};

pub(crate) fn encode(args: &EncodeArgs) -> anyhow::Result<()> {
    let game: AnyGame = args.variant.parse()?;
    let report = with_game!(&game, |g| encoded(g, args))?;
    emit(&report, args.json)
}

fn encoded<G: Abilities>(g: &G, args: &EncodeArgs) -> anyhow::Result<Encoded> {
    let position = |key: &str, text: &str| {
        parse_position(g, text).map_err(|e| {
            anyhow::anyhow!(
                "{key} `{text}` is not a position of {}: {e}; give it in the game's notation \
                 (as `tabula value` takes it)",
                g.variant()
            )
        })
    };
    let s = position("POSITION", &args.position)?;
    let mut past = Vec::new();
    for (k, text) in args.past.iter().flat_map(|p| p.split(';')).enumerate() {
        if text.trim().is_empty() {
            bail!("--past: position {} of the list is empty", k + 1);
        }
        past.push(position(&format!("--past position {}", k + 1), text)?);
    }
    let input =
        network_input(g, args.input.as_deref(), &s, &past).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(Encoded {
        variant: g.variant(),
        position: g.notation(&s),
        network_input: input,
    })
}

/// `encode`'s report: the position and its planes.
#[derive(Serialize)]
struct Encoded {
    variant: String,
    position: String,
    #[serde(flatten)]
    network_input: NetworkInput,
}

impl Report for Encoded {
    const JSON: JsonLayout = JsonLayout::Line;
    // The fields' order, and the values as the f32s they are (`0.2`, not its f64 widening).
    const SORTED_KEYS: bool = false;
}

impl std::fmt::Display for Encoded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = &self.network_input;
        let [c, h, w] = n.shape;
        writeln!(f, "{} {}", self.variant, self.position)?;
        writeln!(
            f,
            "input `{}`: {c} x {h} x {w} (channels x rows x columns, row 0 first), from the \
             side to move's view",
            n.input
        )?;
        if n.past_read > 0 {
            writeln!(
                f,
                "reads the last {} earlier decision states; {} given (--past)",
                n.past_read, n.past_given
            )?;
        }
        for ch in 0..c {
            let name = n.plane_names.get(ch).map_or("", String::as_str);
            writeln!(f, "channel {ch}: {name}")?;
            for r in 0..h {
                let row = &n.values[(ch * h + r) * w..(ch * h + r + 1) * w];
                let cells: Vec<String> = row.iter().map(|v| format!("{v:>4}")).collect();
                writeln!(f, "  {}", cells.join(" "))?;
            }
        }
        Ok(())
    }
}
