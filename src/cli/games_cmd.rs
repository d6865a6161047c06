//! `tabula games`: the registry, for people and for scripts.

use serde::Serialize;
use tabula::games::{FAMILIES, FamilyInfo};

use super::args::GamesArgs;
use super::output::{JsonLayout, Report, emit};

pub(crate) fn run(args: &GamesArgs) -> anyhow::Result<()> {
    emit(&Registry { families: FAMILIES }, args.json)
}

/// `games`: every game family, its syntax, parameters and examples.
#[derive(Serialize)]
struct Registry {
    families: &'static [FamilyInfo],
}

impl Report for Registry {
    const JSON: JsonLayout = JsonLayout::Pretty;
}

impl std::fmt::Display for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for family in self.families {
            writeln!(f, "{}  —  {}", family.syntax, family.title)?;
            writeln!(f, "    action space |A|: {}", family.action_space)?;
            for (name, what) in family.parameters {
                writeln!(f, "    {name:<14} {what}")?;
            }
            if !family.examples.is_empty() {
                writeln!(f, "    examples: {}", family.examples.join("  "))?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
