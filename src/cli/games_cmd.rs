//! `tabula games`: the registry, for people and for scripts.

use tabula::games::FAMILIES;

use super::args::GamesArgs;
use super::output::outln;

pub(crate) fn run(args: &GamesArgs) -> anyhow::Result<()> {
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "families": FAMILIES }))?
        );
        return Ok(());
    }
    for f in FAMILIES {
        outln!("{}  —  {}", f.syntax, f.title);
        outln!("    action space |A|: {}", f.action_space);
        for (name, what) in f.parameters {
            outln!("    {name:<14} {what}");
        }
        if !f.examples.is_empty() {
            outln!("    examples: {}", f.examples.join("  "));
        }
        outln!();
    }
    Ok(())
}
