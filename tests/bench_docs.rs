//! The benchmark docs quote only what `./x bench` measured.
//!
//! Every figure docs/BENCHMARKS.md and docs/benchmarks/*.md give as a result
//! is bold and tagged with the id of its entry in
//! docs/benchmarks/results.json (`**6.10 µs**<!--fig react.iteration-->`;
//! several ids for several numbers in one bold span, in order). This test
//! checks that every bold number carries a tag, that every tagged id is in
//! the committed results, and that the number shown is the recorded value
//! rounded to the digits shown. `./x bench --record` rewrites the results
//! file; the docs then follow it (docs/BENCHMARKS.md, "How the figures are
//! kept").

use std::path::Path;

use serde_json::Value;

use crate::support::root;

/// A number as the docs write it: its value and its decimals.
#[derive(Debug, PartialEq)]
struct Quoted {
    value: f64,
    decimals: usize,
    /// Written with its thousands apart (`58 807`).
    grouped: bool,
    /// What follows it (its unit, if any), up to the next space or the end.
    unit: String,
    /// Where it is in the text, in chars.
    span: std::ops::Range<usize>,
}

impl Quoted {
    /// `value` written the way this number is: the same decimals and grouping.
    fn write(&self, value: f64) -> String {
        let text = format!("{value:.*}", self.decimals);
        if !self.grouped {
            return text;
        }
        let (int, frac) = text.split_at(text.find('.').unwrap_or(text.len()));
        let mut out = String::new();
        for (i, c) in int.chars().enumerate() {
            if i > 0 && (int.len() - i).is_multiple_of(3) {
                out.push(' ');
            }
            out.push(c);
        }
        out + frac
    }
}

/// The figures in `text`: digits with optional groups of three after a
/// space (`58 807`) and a decimal part. A number glued to a letter on
/// either side (`p50`, `10k`, `top-10`) is a label, not a figure.
fn numbers(text: &str) -> Vec<Quoted> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let prev = i.checked_sub(1).map(|j| chars[j]);
        if !chars[i].is_ascii_digit()
            || prev.is_some_and(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'))
        {
            i += 1;
            continue;
        }
        let mut digits = String::new();
        let mut grouped = false;
        let mut j = i;
        loop {
            while j < chars.len() && chars[j].is_ascii_digit() {
                digits.push(chars[j]);
                j += 1;
            }
            // A group of three after a space continues the number.
            let group = chars.get(j) == Some(&' ')
                && (1..=3).all(|k| chars.get(j + k).is_some_and(char::is_ascii_digit))
                && chars.get(j + 4).is_none_or(|c| !c.is_ascii_digit());
            if !group {
                break;
            }
            grouped = true;
            j += 1;
        }
        let mut decimals = 0;
        if chars.get(j) == Some(&'.') && chars.get(j + 1).is_some_and(char::is_ascii_digit) {
            digits.push('.');
            j += 1;
            while j < chars.len() && chars[j].is_ascii_digit() {
                digits.push(chars[j]);
                decimals += 1;
                j += 1;
            }
        }
        let glued = chars.get(j).is_some_and(|c| c.is_ascii_alphabetic());
        if !glued && let Ok(value) = digits.parse() {
            let unit: String = chars[j..]
                .iter()
                .skip_while(|c| **c == ' ')
                .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | ';' | ')' | '('))
                .collect();
            out.push(Quoted {
                value,
                decimals,
                grouped,
                unit,
                span: i..j,
            });
        }
        i = j.max(i + 1);
    }
    out
}

/// Units a figure's unit must be written with when the docs quote it.
const UNITS: &[&str] = &["µs", "ms", "s", "B", "MiB", "×", "%"];

/// One bold span and its tag: the span with its tagged numbers set to the
/// recorded values, and what is wrong.
fn fix_bold(
    bold: &str,
    tag: Option<&str>,
    figures: &serde_json::Map<String, Value>,
) -> (String, Vec<String>) {
    let quoted = numbers(bold);
    let mut errors = Vec::new();
    let Some(tag) = tag else {
        if !quoted.is_empty() {
            errors.push(format!(
                "**{bold}** quotes a figure without a <!--fig ID--> tag"
            ));
        }
        return (bold.to_string(), errors);
    };
    let ids: Vec<&str> = tag.split_whitespace().collect();
    if ids.len() > quoted.len() {
        errors.push(format!(
            "**{bold}** has {} numbers for {} ids",
            quoted.len(),
            ids.len()
        ));
    }
    let chars: Vec<char> = bold.chars().collect();
    let mut fixed = String::new();
    let mut from = 0;
    for (id, q) in ids.iter().zip(&quoted) {
        fixed.extend(&chars[from..q.span.start]);
        from = q.span.end;
        let Some(fig) = figures.get(*id) else {
            errors.push(format!("{id} is not in docs/benchmarks/results.json"));
            fixed.extend(&chars[q.span.clone()]);
            continue;
        };
        let value = fig["value"].as_f64().unwrap_or(f64::NAN);
        let (shown, written) = (q.write(value), q.write(q.value));
        if shown != written {
            errors.push(format!(
                "{id}: the docs say {written}, the results {value} (→ {shown})"
            ));
        }
        fixed.push_str(&shown);
        let unit = fig["unit"].as_str().unwrap_or_default();
        if UNITS.contains(&unit) && !q.unit.starts_with(unit) {
            errors.push(format!(
                "{id}: recorded in {unit}, quoted as {written} {}",
                q.unit
            ));
        }
    }
    fixed.extend(&chars[from..]);
    (fixed, errors)
}

/// The document with every tagged number set to its recorded value (in the
/// digits shown), and everything else wrong with its figures.
fn fix(name: &str, text: &str, figures: &serde_json::Map<String, Value>) -> (String, Vec<String>) {
    let mut errors = Vec::new();
    let mut fixed = String::new();
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let at = |what: String| format!("{name}:{}: {what}", n + 1);
        let mut rest = line;
        while let Some(start) = rest.find("**") {
            let after = &rest[start + 2..];
            let Some(len) = after.find("**") else { break };
            let bold = &after[..len];
            fixed.push_str(&rest[..start + 2]);
            rest = &after[len + 2..];
            let tag = rest
                .strip_prefix("<!--fig ")
                .and_then(|t| t.find("-->").map(|end| &t[..end]));
            let (text, found) = fix_bold(bold, tag, figures);
            fixed.push_str(&text);
            fixed.push_str("**");
            errors.extend(found.into_iter().map(&at));
        }
        fixed.push_str(rest);
    }
    (fixed, errors)
}

fn docs() -> Vec<(String, String)> {
    let root = root();
    let mut files = vec![root.join("docs/BENCHMARKS.md")];
    let dir = root.join("docs/benchmarks");
    let mut more: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    more.sort();
    files.extend(more);
    files
        .iter()
        .map(|p| {
            let name = p.strip_prefix(&root).unwrap_or(p).display().to_string();
            (name, std::fs::read_to_string(p).unwrap())
        })
        .collect()
}

fn results(root: &Path) -> Value {
    let text = std::fs::read_to_string(root.join("docs/benchmarks/results.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// With `ROBOBRAIN_BENCH_DOCS=update` the docs' tagged numbers are rewritten
/// from the results first (after `./x bench --record`); the prose around
/// them is the writer's to check.
#[test]
fn every_figure_the_benchmark_docs_quote_is_the_recorded_one() {
    let root = root();
    let results = results(&root);
    let figures = results["figures"].as_object().unwrap();
    let update = std::env::var("ROBOBRAIN_BENCH_DOCS").is_ok_and(|v| v == "update");
    let mut errors = Vec::new();
    let mut tagged = 0;
    for (name, text) in docs() {
        tagged += text.matches("<!--fig ").count();
        let (fixed, mut found) = fix(&name, &text, figures);
        if update {
            std::fs::write(root.join(&name), &fixed).unwrap();
            found = fix(&name, &fixed, figures).1;
        }
        errors.extend(found);
    }
    assert!(
        errors.is_empty(),
        "{} figure(s) in the benchmark docs do not match docs/benchmarks/results.json \
         (./x bench --record writes it; ROBOBRAIN_BENCH_DOCS=update on this test copies \
         its numbers into the docs):\n{}",
        errors.len(),
        errors.join("\n")
    );
    assert!(
        tagged >= 40,
        "only {tagged} tagged figures: the tags went missing?"
    );
    for key in ["commit", "date", "machine", "load", "groups"] {
        assert!(!results[key].is_null(), "results.json has no `{key}`");
    }
}

#[test]
fn the_figure_checker_reads_numbers_as_the_docs_write_them() {
    let q = numbers("p50 58 807× and 6.10 µs, top-10 at 100k: 0.987 (1 024 utterances)");
    let got: Vec<(f64, usize, &str)> = q
        .iter()
        .map(|q| (q.value, q.decimals, q.unit.as_str()))
        .collect();
    assert_eq!(q[0].write(1_234_567.0), "1 234 567");
    assert_eq!(q[1].write(12.345), "12.35");
    assert_eq!(
        got,
        [
            (58807.0, 0, "×"),
            (6.10, 2, "µs"),
            (0.987, 3, ""),
            (1024.0, 0, "utterances")
        ]
    );
    let figures = serde_json::json!({
        "a": {"value": 6.1034, "unit": "µs"},
        "b": {"value": 2.0, "unit": "ms"},
    });
    let figures = figures.as_object().unwrap();
    let ok = "| x | **6.10 µs**<!--fig a--> and **p50 2 ms**<!--fig b--> |\n";
    assert_eq!(fix("t.md", ok, figures), (ok.to_string(), Vec::new()));
    let bad = "**6.2 µs**<!--fig a--> **3 ms**<!--fig b--> **7 µs** **1 s**<!--fig c-->";
    let (fixed, errors) = fix("t.md", bad, figures);
    assert_eq!(
        fixed,
        "**6.1 µs**<!--fig a--> **2 ms**<!--fig b--> **7 µs** **1 s**<!--fig c-->"
    );
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert!(errors[0].contains("the docs say 6.2, the results 6.1034"));
    assert!(errors[2].contains("without a <!--fig ID--> tag"));
    assert!(errors[3].contains("c is not in"));
}
