//! Timers the robot keeps (Home Assistant's `HassStartTimer`,
//! `HassCancelTimer`, `HassCancelAllTimers`, `HassTimerStatus`,
//! `HassPauseTimer`, `HassUnpauseTimer`, `HassIncreaseTimer`,
//! `HassDecreaseTimer`): heard through the home's grammar like any other
//! intent, kept on the sim clock in [`super::KernelState`] (so a checkpoint
//! keeps them and a resumed brain still rings them), and announced in the
//! language they were set in when they end. What a request means for the
//! timers ([`apply`]) is pure; the engine speaks and rings.

use serde::{Deserialize, Serialize};

use super::Engine;
use crate::hci::heard::TimerAsk;
use crate::lines::{Lang, line};
use crate::protocol::{EventKind, SpeechTrack};

/// A timer the robot keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timer {
    /// `1`, `2`, … in the order they were set.
    pub id: u64,
    /// Its name, when one was said ("pasta").
    pub name: Option<String>,
    /// The duration it was started with, seconds.
    pub seconds: f64,
    /// Sim time it ends (while running).
    pub ends_at: f64,
    /// Seconds left when it was paused (`None`: running).
    pub paused_left: Option<f64>,
    /// What to do when it ends ("turn off the lights"), said as an utterance.
    pub command: Option<String>,
    /// The language it was set in: its lines are said in it.
    pub lang: Lang,
}

impl Timer {
    /// Seconds left at `now`.
    pub fn left(&self, now: f64) -> f64 {
        self.paused_left.unwrap_or(self.ends_at - now).max(0.0)
    }

    fn label(&self, lang: Lang) -> String {
        match &self.name {
            Some(name) => line(lang, "timer_named", &[("name", name)]),
            None => line(lang, "timer_plain", &[]),
        }
    }
}

/// "1 hour 5 minutes", "1小时5分钟" (whole seconds, rounded up).
pub(super) fn duration_text(seconds: f64, lang: Lang) -> String {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let total = seconds.max(0.0).ceil() as u64;
    let (h, m, s) = (total / 3600, total / 60 % 60, total % 60);
    let mut parts = Vec::new();
    for (n, one, many) in [
        (h, "hour", "hours"),
        (m, "minute", "minutes"),
        (s, "second", "seconds"),
    ] {
        if n > 0 {
            parts.push(line(
                lang,
                if n == 1 { one } else { many },
                &[("n", &n.to_string())],
            ));
        }
    }
    if parts.is_empty() {
        parts.push(line(lang, "seconds", &[("n", "0")]));
    }
    parts.join(&line(lang, "duration_sep", &[]))
}

/// What a request did to the timers, and what to say.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Applied {
    /// The line to say.
    pub say: String,
    /// What changed, for the log (`None`: nothing did).
    pub log: Option<String>,
}

/// The timers `ask` is about: by name and by the duration they were
/// started with; none said: every timer `eligible` keeps.
fn select(timers: &[Timer], ask: &TimerAsk, eligible: &dyn Fn(&Timer) -> bool) -> Vec<usize> {
    timers
        .iter()
        .enumerate()
        .filter(|(_, t)| eligible(t))
        .filter(|(_, t)| {
            ask.name.as_ref().is_none_or(|n| {
                t.name
                    .as_ref()
                    .is_some_and(|tn| tn.trim().eq_ignore_ascii_case(n.trim()))
            })
        })
        .filter(|(_, t)| {
            ask.start_seconds
                .is_none_or(|s| (t.seconds - s).abs() < 0.5)
        })
        .map(|(i, _)| i)
        .collect()
}

/// The request's own response, or the line `key` in its language.
fn said(ask: &TimerAsk, key: &str) -> String {
    ask.response
        .clone()
        .unwrap_or_else(|| line(ask.lang, key, &[]))
}

/// The request's own "not found" line, or the stock one.
fn not_found(ask: &TimerAsk) -> String {
    ask.not_found
        .clone()
        .unwrap_or_else(|| line(ask.lang, "timer_not_found", &[]))
}

/// Nothing changed: only `say` is said.
fn nothing(say: String) -> Applied {
    Applied { say, log: None }
}

/// One timer the request means (among those `eligible` keeps), or what to
/// say instead: none found, or which one of several.
fn one(
    timers: &[Timer],
    ask: &TimerAsk,
    eligible: &dyn Fn(&Timer) -> bool,
) -> Result<usize, String> {
    let lang = ask.lang;
    match select(timers, ask, eligible).as_slice() {
        [i] => Ok(*i),
        [] => Err(not_found(ask)),
        several => {
            let names: Vec<String> = several
                .iter()
                .map(|i| {
                    let t = &timers[*i];
                    format!("{} ({})", t.label(lang), duration_text(t.seconds, lang))
                })
                .collect();
            let names = crate::lines::list(lang, &names, true);
            Err(line(lang, "timer_which", &[("names", &names)]))
        }
    }
}

/// `HassStartTimer`: a new timer numbered `next_id`, ending `seconds` from `now`.
fn start(
    timers: &mut Vec<Timer>,
    ask: &TimerAsk,
    now: f64,
    next_id: u64,
) -> Result<Applied, String> {
    let lang = ask.lang;
    let Some(seconds) = ask.seconds.filter(|s| *s > 0.0) else {
        return Err(not_found(ask));
    };
    let timer = Timer {
        id: next_id,
        name: ask.name.clone(),
        seconds,
        ends_at: now + seconds,
        paused_left: None,
        command: ask.command.clone(),
        lang,
    };
    let duration = duration_text(seconds, lang);
    timers.push(timer);
    Ok(Applied {
        say: ask
            .response
            .clone()
            .unwrap_or_else(|| line(lang, "timer_started", &[("duration", &duration)])),
        log: Some(format!("timer {next_id} started: {seconds} s")),
    })
}

/// `HassCancelAllTimers`: every timer gone.
fn cancel_all(timers: &mut Vec<Timer>, ask: &TimerAsk) -> Applied {
    let n = timers.len();
    timers.clear();
    Applied {
        say: ask
            .response
            .clone()
            .unwrap_or_else(|| line(ask.lang, "timers_cancelled", &[("n", &n.to_string())])),
        log: Some(format!("{n} timer(s) cancelled")),
    }
}

/// `HassCancelTimer`: the one timer meant, removed.
fn cancel(timers: &mut Vec<Timer>, ask: &TimerAsk) -> Result<Applied, String> {
    let i = one(timers, ask, &|_| true)?;
    let t = timers.remove(i);
    Ok(Applied {
        say: said(ask, "timer_cancelled"),
        log: Some(format!("timer {} cancelled", t.id)),
    })
}

/// `HassPauseTimer`: the one running timer meant, stopped with what it has left.
fn pause(timers: &mut [Timer], ask: &TimerAsk, now: f64) -> Result<Applied, String> {
    let i = one(timers, ask, &|t| t.paused_left.is_none())?;
    let t = &mut timers[i];
    t.paused_left = Some(t.left(now));
    Ok(Applied {
        say: said(ask, "timer_paused"),
        log: Some(format!("timer {} paused", t.id)),
    })
}

/// `HassUnpauseTimer`: the one paused timer meant, running again from `now`.
fn unpause(timers: &mut [Timer], ask: &TimerAsk, now: f64) -> Result<Applied, String> {
    let i = one(timers, ask, &|t| t.paused_left.is_some())?;
    let t = &mut timers[i];
    t.ends_at = now + t.left(now);
    t.paused_left = None;
    Ok(Applied {
        say: said(ask, "timer_unpaused"),
        log: Some(format!("timer {} resumed", t.id)),
    })
}

/// `HassIncreaseTimer` / `HassDecreaseTimer`: the one timer meant, given
/// (or docked) the seconds asked, running or paused.
fn adjust(timers: &mut [Timer], ask: &TimerAsk, now: f64) -> Result<Applied, String> {
    let lang = ask.lang;
    let sign = if ask.intent == "HassIncreaseTimer" {
        1.0
    } else {
        -1.0
    };
    let by = sign * ask.seconds.unwrap_or(0.0);
    let i = one(timers, ask, &|_| true)?;
    let t = &mut timers[i];
    match &mut t.paused_left {
        Some(left) => *left = (*left + by).max(0.0),
        None => t.ends_at += by,
    }
    let left = duration_text(t.left(now), lang);
    Ok(Applied {
        say: line(lang, "timer_changed", &[("left", &left)]),
        log: Some(format!("timer {} changed by {by} s", t.id)),
    })
}

/// `HassTimerStatus`: what is left, from the timers themselves.
fn status(timers: &[Timer], ask: &TimerAsk, now: f64) -> String {
    let lang = ask.lang;
    let picked = select(timers, ask, &|_| true);
    match picked.as_slice() {
        [] if ask.name.is_some() || ask.start_seconds.is_some() => not_found(ask),
        [] => line(lang, "no_timers", &[]),
        [i] => {
            let t = &timers[*i];
            let key = if t.paused_left.is_some() {
                "timer_paused_left"
            } else {
                "timer_left"
            };
            let left = duration_text(t.left(now), lang);
            line(lang, key, &[("timer", &t.label(lang)), ("left", &left)])
        }
        several => {
            let soonest = several
                .iter()
                .map(|i| timers[*i].left(now))
                .fold(f64::INFINITY, f64::min);
            line(
                lang,
                "timer_first_left",
                &[
                    ("count", &several.len().to_string()),
                    ("left", &duration_text(soonest, lang)),
                ],
            )
        }
    }
}

/// Carries out `ask` on `timers` at sim time `now` (`next_id` numbers a new
/// one): what changed and the line to say, in the language asked.
pub(super) fn apply(timers: &mut Vec<Timer>, ask: &TimerAsk, now: f64, next_id: u64) -> Applied {
    match ask.intent.as_str() {
        "HassStartTimer" => start(timers, ask, now, next_id).unwrap_or_else(nothing),
        "HassCancelAllTimers" => cancel_all(timers, ask),
        "HassCancelTimer" => cancel(timers, ask).unwrap_or_else(nothing),
        "HassPauseTimer" => pause(timers, ask, now).unwrap_or_else(nothing),
        "HassUnpauseTimer" => unpause(timers, ask, now).unwrap_or_else(nothing),
        "HassIncreaseTimer" | "HassDecreaseTimer" => {
            adjust(timers, ask, now).unwrap_or_else(nothing)
        }
        // HassTimerStatus: what is left, from the timers themselves.
        _ => nothing(status(timers, ask, now)),
    }
}

/// The timers that end by `now` (running ones only), taken out, soonest first.
pub(super) fn ended(timers: &mut Vec<Timer>, now: f64) -> Vec<Timer> {
    let mut done: Vec<Timer> = Vec::new();
    timers.retain(|t| {
        let ends = t.paused_left.is_none() && t.ends_at <= now;
        if ends {
            done.push(t.clone());
        }
        !ends
    });
    done.sort_by(|a, b| a.ends_at.total_cmp(&b.ends_at));
    done
}

impl Engine {
    /// A timer request heard: carried out on the kernel's timers and answered.
    pub(super) fn timer(&mut self, ask: &TimerAsk) {
        let next = self.state.timers_made + 1;
        let now = self.state.time;
        let applied = apply(&mut self.state.timers, ask, now, next);
        if ask.intent == "HassStartTimer" && applied.log.is_some() {
            self.state.timers_made = next;
        }
        if let Some(message) = applied.log {
            self.log("info", &message);
        }
        self.speak(&applied.say, SpeechTrack::Answer);
    }

    /// Rings the timers that end on this tick (half a tick of slack, as
    /// the patrol rounds): said in their language, then their command.
    pub(super) fn ring_timers(&mut self) {
        if self.state.timers.is_empty() {
            return;
        }
        let now = self.state.time + self.setup.config.tick_s / 2.0;
        for t in ended(&mut self.state.timers, now) {
            self.emit(EventKind::Log {
                level: "info".into(),
                message: format!("timer {} ended", t.id),
            });
            let label = t.label(t.lang);
            let text = line(t.lang, "timer_done", &[("timer", &label)]);
            self.speak(&text, SpeechTrack::Answer);
            if let Some(command) = &t.command {
                self.say(command);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(intent: &str, lang: Lang) -> TimerAsk {
        TimerAsk {
            intent: intent.into(),
            seconds: None,
            start_seconds: None,
            name: None,
            command: None,
            response: None,
            not_found: None,
            lang,
        }
    }

    #[test]
    fn durations_are_said_in_the_language_asked() {
        assert_eq!(duration_text(3900.0, Lang::En), "1 hour 5 minutes");
        assert_eq!(duration_text(90.0, Lang::Zh), "1分钟30秒");
        assert_eq!(duration_text(1.0, Lang::En), "1 second");
        assert_eq!(duration_text(0.2, Lang::En), "1 second");
    }

    /// Start, status, pause (time stands still), unpause, increase,
    /// cancel: each on the timers, each with its line.
    #[test]
    fn timers_start_report_pause_and_cancel_on_sim_time() {
        let mut timers = Vec::new();
        let start = TimerAsk {
            seconds: Some(300.0),
            name: Some("pasta".into()),
            ..ask("HassStartTimer", Lang::En)
        };
        let a = apply(&mut timers, &start, 10.0, 1);
        assert_eq!(a.say, "Timer started for 5 minutes.");
        let status = apply(&mut timers, &ask("HassTimerStatus", Lang::En), 70.0, 2);
        assert_eq!(status.say, "Your pasta timer has 4 minutes left.");
        assert!(status.log.is_none());
        apply(&mut timers, &ask("HassPauseTimer", Lang::En), 70.0, 2);
        let zh = apply(&mut timers, &ask("HassTimerStatus", Lang::Zh), 500.0, 2);
        assert_eq!(zh.say, "pasta计时器已暂停，还剩4分钟。");
        assert!(
            ended(&mut timers, 1000.0).is_empty(),
            "a paused timer never ends"
        );
        apply(&mut timers, &ask("HassUnpauseTimer", Lang::En), 1000.0, 2);
        let more = TimerAsk {
            seconds: Some(60.0),
            ..ask("HassIncreaseTimer", Lang::En)
        };
        assert_eq!(
            apply(&mut timers, &more, 1000.0, 2).say,
            "Timer updated: 5 minutes left."
        );
        assert!(ended(&mut timers, 1299.0).is_empty());
        let wrong = TimerAsk {
            name: Some("eggs".into()),
            ..ask("HassCancelTimer", Lang::En)
        };
        assert_eq!(
            apply(&mut timers, &wrong, 1100.0, 2).say,
            "Sorry, I couldn't find that timer."
        );
        assert_eq!(timers.len(), 1);
        let done = ended(&mut timers, 1300.0);
        assert_eq!(done.len(), 1);
        assert!(timers.is_empty());
        assert_eq!(
            apply(&mut timers, &ask("HassTimerStatus", Lang::En), 1300.0, 2).say,
            "There are no timers."
        );
    }

    #[test]
    fn two_timers_are_told_apart_or_asked_about() {
        let mut timers = Vec::new();
        for (i, s) in [(1, 600.0), (2, 120.0)] {
            let start = TimerAsk {
                seconds: Some(s),
                ..ask("HassStartTimer", Lang::Zh)
            };
            apply(&mut timers, &start, 0.0, i);
        }
        let status = apply(&mut timers, &ask("HassTimerStatus", Lang::Zh), 60.0, 3);
        assert_eq!(status.say, "有2个计时器，最先结束的还剩1分钟。");
        let which = apply(&mut timers, &ask("HassCancelTimer", Lang::En), 60.0, 3);
        assert!(which.say.contains("which one"), "{}", which.say);
        assert_eq!(timers.len(), 2);
        let by_duration = TimerAsk {
            start_seconds: Some(600.0),
            ..ask("HassCancelTimer", Lang::Zh)
        };
        assert_eq!(
            apply(&mut timers, &by_duration, 60.0, 3).say,
            "好的，已取消计时器。"
        );
        assert_eq!(timers.len(), 1);
        assert_eq!(timers[0].seconds, 120.0);
    }
}

#[cfg(test)]
mod engine_tests {
    use crate::config::Config;
    use crate::engine::Engine;
    use crate::protocol::{Command, Event, EventKind, Origin};
    use crate::world::World;

    fn run(says: &[(f64, &str)], until: f64) -> Vec<Event> {
        let mut config = Config {
            thread_id: Some("timers".into()),
            ..Config::default()
        };
        config.home.hour = Some(12.0);
        let mut engine = Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
        let mut events = Vec::new();
        let mut pending = says.to_vec();
        while engine.time() < until {
            let now = engine.time();
            pending.retain(|(at, text)| {
                if *at <= now {
                    engine.submit(
                        Command::Say {
                            text: (*text).to_string(),
                        },
                        Origin::console(),
                    );
                }
                *at > now
            });
            engine.tick(&mut events);
        }
        events
    }

    fn spoken(events: &[Event]) -> Vec<(f64, String)> {
        events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Speech { text, .. } => Some((e.time, text.clone())),
                _ => None,
            })
            .collect()
    }

    /// "Turn off the kitchen light in 1 minute": a timer whose command is
    /// heard, and carried out, when it ends on sim time.
    #[test]
    fn a_timer_with_a_command_carries_it_out_when_it_ends() {
        let events = run(
            &[
                (0.2, "turn on the kitchen light"),
                (0.5, "turn off the kitchen light in 1 minute"),
            ],
            70.0,
        );
        let off: Vec<f64> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Device { device, state, .. }
                    if device == "kitchen_light" && state["on"] == false =>
                {
                    Some(e.time)
                }
                _ => None,
            })
            .collect();
        assert_eq!(off.len(), 1, "{:?}", spoken(&events));
        assert!((off[0] - 60.5).abs() < 0.2, "switched off at {}", off[0]);
        let said = spoken(&events);
        assert!(
            said.iter()
                .any(|(t, s)| s == "Your timer is done." && (t - 60.5).abs() < 0.2),
            "{said:?}"
        );
    }
}
