//! The planner's memory input (seed 001 §2.2: summary + key recent turns +
//! current task + state snapshot, not the whole history). The observation
//! already carries the current task and the robot's state; this adds the
//! conversation's summaries, its recent turns, preferences, session state
//! and the retrieved memories — greedily, in that order of priority
//! (the last two turns, preferences and state first, then memories by
//! score, then summaries, then older turns), while the estimated tokens
//! fit the budget. What was used, with its scores and why, becomes the
//! `memory` event.

use std::collections::BTreeSet;

use serde::Serialize;

use super::estimate_tokens;
use super::long::Retrieved;
use super::prefs::Pref;
use super::store::Message;
use super::tokenize::terms;

pub use crate::protocol::MemoryUse;

/// Everything memory can offer one decision.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MemoryContext {
    /// What was searched for (the operator's last utterance).
    pub query: String,
    /// The retrieval mode.
    pub mode: String,
    /// This session's summaries, oldest first.
    pub summaries: Vec<String>,
    /// Recent turns, oldest first.
    pub recent: Vec<Message>,
    /// Retrieved memories, best first.
    pub retrieved: Vec<Retrieved>,
    /// Preferences.
    pub prefs: Vec<Pref>,
    /// Session state (key, value).
    pub state: Vec<(String, String)>,
}

/// The rendered memory section and what went into it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rendered {
    /// The text for the prompt (empty when there is nothing to say).
    pub text: String,
    /// The retrieved memories used.
    pub used: Vec<MemoryUse>,
    /// Estimated tokens of `text`.
    pub tokens: usize,
    /// Items left out for the budget.
    pub dropped: usize,
}

/// Why `r` was retrieved for `query`: shared terms and the scores.
pub fn explain(query: &str, r: &Retrieved) -> String {
    let q: BTreeSet<String> = terms(query).into_iter().map(|t| t.text).collect();
    let shared: Vec<String> = terms(&r.memory.content)
        .into_iter()
        .map(|t| t.text)
        .filter(|t| q.contains(t))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut parts = Vec::new();
    if let Some(b) = r.hit.bm25 {
        parts.push(format!(
            "bm25 {b:.2}{} (shared terms: {})",
            r.hit
                .bm25_norm
                .map(|n| format!(" → {n:.2}"))
                .unwrap_or_default(),
            if shared.is_empty() {
                "-".into()
            } else {
                shared.join(", ")
            }
        ));
    }
    if let Some(c) = r.hit.dense {
        parts.push(format!(
            "cosine {c:.2}{}",
            r.hit
                .dense_norm
                .map(|n| format!(" → {n:.2}"))
                .unwrap_or_default()
        ));
    }
    if parts.is_empty() {
        "no score".into()
    } else {
        parts.join(" + ")
    }
}

fn speaker(role: &str) -> &str {
    if role == "user" { "operator" } else { "robot" }
}

/// Renders `ctx` within `budget` estimated tokens.
pub fn render(ctx: &MemoryContext, budget: usize) -> Rendered {
    let mut out = Rendered::default();
    let header = "Memory (from earlier conversation; use it only where it helps):";
    // The header and the section titles (about 20 tokens) come first.
    let mut used_tokens = estimate_tokens(header) + 20;
    let mut fits = |line: &str, out: &mut Rendered| {
        let t = estimate_tokens(line) + 1;
        if used_tokens + t <= budget {
            used_tokens += t;
            true
        } else {
            out.dropped += 1;
            false
        }
    };
    let turn = |m: &Message| {
        let text: String = m.content.chars().take(300).collect();
        format!("- {}: {text}", speaker(&m.role))
    };
    let n = ctx.recent.len();
    let mut recent_kept = vec![false; n];
    for i in (n.saturating_sub(2)..n).rev() {
        recent_kept[i] = fits(&turn(&ctx.recent[i]), &mut out);
    }
    let prefs: Vec<String> = ctx
        .prefs
        .iter()
        .filter_map(|p| {
            let line = format!("- {p}");
            fits(&line, &mut out).then_some(line)
        })
        .collect();
    let state: Vec<String> = ctx
        .state
        .iter()
        .filter_map(|(k, v)| {
            let line = format!("- {k} = {v}");
            fits(&line, &mut out).then_some(line)
        })
        .collect();
    let mut memories = Vec::new();
    for r in &ctx.retrieved {
        let text: String = r.memory.content.chars().take(200).collect();
        let line = format!("- [memory {} score {:.2}] {text}", r.hit.id, r.hit.score);
        if fits(&line, &mut out) {
            memories.push(line);
            out.used.push(MemoryUse {
                id: r.hit.id,
                score: r.hit.score,
                bm25: r.hit.bm25,
                dense: r.hit.dense,
                text,
                why: explain(&ctx.query, r),
            });
        }
    }
    let summaries: Vec<String> = ctx
        .summaries
        .iter()
        .rev()
        .filter_map(|s| {
            let line = format!("- {s}");
            fits(&line, &mut out).then_some(line)
        })
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    for i in (0..n.saturating_sub(2)).rev() {
        recent_kept[i] = fits(&turn(&ctx.recent[i]), &mut out);
    }
    let recent: Vec<String> = ctx
        .recent
        .iter()
        .zip(&recent_kept)
        .filter(|(_, k)| **k)
        .map(|(m, _)| turn(m))
        .collect();
    let mut sections = Vec::new();
    for (title, lines) in [
        ("Conversation so far (summaries):", &summaries),
        ("Recent turns:", &recent),
        ("Operator preferences:", &prefs),
        ("Session state:", &state),
        ("Relevant memories:", &memories),
    ] {
        if !lines.is_empty() {
            sections.push(format!("{title}\n{}", lines.join("\n")));
        }
    }
    if !sections.is_empty() {
        out.text = format!("{header}\n{}\n\n", sections.join("\n"));
        out.tokens = estimate_tokens(&out.text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::hybrid::Scored;
    use crate::memory::store::MemoryRow;

    fn retrieved(id: u64, text: &str, score: f32) -> Retrieved {
        Retrieved {
            hit: Scored {
                id,
                score,
                bm25: Some(3.0),
                dense: Some(0.7),
                bm25_norm: Some(1.0),
                dense_norm: Some(0.5),
            },
            memory: MemoryRow {
                id,
                kind: "note".into(),
                content: text.into(),
                analysis: serde_json::Value::Null,
                metadata: serde_json::Value::Null,
                session_id: "s".into(),
                created_ms: 0,
                uses: 0,
            },
        }
    }

    #[test]
    fn memory_context_fits_the_budget_and_explains_each_memory() {
        let ctx = MemoryContext {
            query: "厨房的灯".into(),
            mode: "hybrid".into(),
            summaries: vec!["operator asked for tea".into()],
            recent: vec![
                Message::said("user", "hello"),
                Message::said("assistant", "hi"),
                Message::said("user", "关厨房的灯"),
            ],
            retrieved: vec![
                retrieved(7, "厨房的灯晚上十点后调暗", 0.9),
                retrieved(8, &"long memory text ".repeat(40), 0.5),
            ],
            prefs: vec![],
            state: vec![("last_room".into(), "kitchen".into())],
        };
        let all = render(&ctx, 10_000);
        assert_eq!(all.used.len(), 2);
        assert!(all.text.contains("[memory 7 score 0.90]"), "{}", all.text);
        assert!(
            all.used[0].why.contains("shared terms: 厨房") || all.used[0].why.contains("厨房"),
            "{}",
            all.used[0].why
        );
        assert!(all.text.contains("- last_room = kitchen"));
        let tight = render(&ctx, 80);
        assert!(tight.tokens <= 80, "{}", tight.tokens);
        assert!(tight.dropped > 0);
        assert_eq!(tight.used.iter().map(|u| u.id).collect::<Vec<_>>(), [7]);
        assert!(
            tight.text.contains("关厨房的灯"),
            "the last turn goes first: {}",
            tight.text
        );
        assert_eq!(render(&MemoryContext::default(), 100).text, "");
    }
}
