//! Paired per-seed comparisons (issue 48): two lines of a final-value figure whose runs share
//! their seeds are compared run against run, the difference of each seed's final values, so
//! what the seeds have in common (the same games' chance, the same initial table) cancels.
//! The mean difference has a 95% Student-t interval over the pairs, narrower than the two
//! lines' own intervals whenever the seeds' runs move together. `tabula report` prints them.

use serde_json::Value as Json;

use super::plot::{At, Stat, SweepData, points};

/// One comparison: line `label` (`init_q=draw − init_q=loss`) at x value `at`, seed by seed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Comparison {
    pub label: String,
    /// The x value (`simulations=8`), empty when the comparison is of x values.
    pub at: String,
    /// (seed, the difference of the two runs' values), by seed.
    pub diffs: Vec<(u64, f64)>,
    /// The mean difference and its interval over the pairs (`None`: no seed in both).
    pub stat: Option<Stat>,
}

/// A short axis key (`search.init_q` -> `init_q`) and value (JSON text, strings unquoted).
fn shown(key: &str, value: &str) -> String {
    let v = match serde_json::from_str::<Json>(value) {
        Ok(Json::String(s)) => s,
        _ => value.to_string(),
    };
    format!("{}={v}", key.rsplit('.').next().unwrap_or(key))
}

/// Each finished run's value of `metric` at `at` over the grid points of `facet` whose axis
/// `x` is `xv` (and `by` its value), by seed.
fn cell(
    data: &SweepData,
    (metric, at): (&str, At),
    facet: &[(String, Json)],
    (x, xv): (&str, &str),
    by: Option<(&str, &str)>,
) -> std::collections::BTreeMap<u64, f64> {
    let parse = |t: &str| serde_json::from_str::<Json>(t).unwrap_or_default();
    let seed_of: std::collections::BTreeMap<i64, u64> = data
        .stored
        .members
        .iter()
        .map(|m| (m.run_id, m.seed))
        .collect();
    let mut out = std::collections::BTreeMap::new();
    for (_, values, runs) in points(data, facet) {
        if values.get(x) != Some(&parse(xv)) {
            continue;
        }
        if let Some((b, bv)) = by
            && values.get(b) != Some(&parse(bv))
        {
            continue;
        }
        for r in runs.iter().filter(|r| data.finished.contains(*r)) {
            let v = data
                .metrics
                .get(r)
                .and_then(|m| m.get(metric))
                .and_then(|s| at.of(s));
            if let (Some(v), Some(seed)) = (v, seed_of.get(r)) {
                out.insert(*seed, v);
            }
        }
    }
    out
}

/// `other - base`, seed by seed, over the seeds both have.
fn compare(
    label: String,
    at: String,
    base: &std::collections::BTreeMap<u64, f64>,
    other: &std::collections::BTreeMap<u64, f64>,
) -> Comparison {
    let diffs: Vec<(u64, f64)> = other
        .iter()
        .filter_map(|(s, v)| base.get(s).map(|b| (*s, v - b)))
        .collect();
    let values: Vec<f64> = diffs.iter().map(|d| d.1).collect();
    Comparison {
        label,
        at,
        stat: Stat::of(&values),
        diffs,
    }
}

/// The paired comparisons of a final-value figure (axis `x`, a line per value of `by`, the
/// grid points of `facet`): with `by`, each line against the first at every x value; without,
/// each x value against the first.
pub(crate) fn paired(
    data: &SweepData,
    metric: &str,
    x: &str,
    by: Option<&str>,
    facet: &[(String, Json)],
) -> Vec<Comparison> {
    let values = |key: &str| {
        data.stored
            .record
            .axes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let xs = values(x);
    let m = (metric, At::Final);
    let mut out = Vec::new();
    match by {
        Some(b) => {
            let bs = values(b);
            let Some(b0) = bs.first() else { return out };
            for xv in &xs {
                let base = cell(data, m, facet, (x, xv), Some((b, b0)));
                for bv in &bs[1..] {
                    let other = cell(data, m, facet, (x, xv), Some((b, bv)));
                    let label = format!("{} − {}", shown(b, bv), shown(b, b0));
                    out.push(compare(label, shown(x, xv), &base, &other));
                }
            }
        }
        None => {
            let Some(x0) = xs.first() else { return out };
            let base = cell(data, m, facet, (x, x0), None);
            for xv in &xs[1..] {
                let other = cell(data, m, facet, (x, xv), None);
                let label = format!("{} − {}", shown(x, xv), shown(x, x0));
                out.push(compare(label, String::new(), &base, &other));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_the_seeds_both_lines_have() {
        let base = [(1, 0.5), (2, 0.6), (3, 0.7)].into_iter().collect();
        let other = [(1, 0.6), (3, 0.9), (4, 0.1)].into_iter().collect();
        let c = compare("b − a".into(), "x=1".into(), &base, &other);
        assert_eq!(c.diffs.len(), 2, "seeds 1 and 3");
        assert_eq!(c.diffs[0].0, 1);
        assert!((c.diffs[0].1 - 0.1).abs() < 1e-12 && (c.diffs[1].1 - 0.2).abs() < 1e-12);
        let s = c.stat.unwrap();
        assert_eq!(s.n, 2);
        assert!((s.mean - 0.15).abs() < 1e-12);
        // t(1) = 12.706 times the standard error 0.05.
        assert!((s.hi - s.mean - 12.706 * 0.05).abs() < 1e-9, "{s:?}");
        let none = compare("c".into(), String::new(), &base, &Default::default());
        assert!(none.diffs.is_empty() && none.stat.is_none());
        assert_eq!(shown("search.init_q", "\"draw\""), "init_q=draw");
    }
}
