//! `tabula games`: the registry, for people and for scripts.

use tabula::games::FAMILIES;

use super::args::GamesArgs;

pub(crate) fn run(args: &GamesArgs) -> anyhow::Result<()> {
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "families": FAMILIES }))?
        );
        return Ok(());
    }
    for f in FAMILIES {
        println!("{}  —  {}", f.syntax, f.title);
        println!("    action space |A|: {}", f.action_space);
        for (name, what) in f.parameters {
            println!("    {name:<14} {what}");
        }
        if !f.examples.is_empty() {
            println!("    examples: {}", f.examples.join("  "));
        }
        println!();
    }
    Ok(())
}
