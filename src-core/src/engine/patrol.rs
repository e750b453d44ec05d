//! Repeated patrol rounds (seed 000 §3.5: `sleep(patrol_interval)` between
//! rounds). The schedule is fixed-rate in sim time: round `k` is due at
//! `first + k × interval`, so lateness never accumulates; a round still
//! running when the next is due makes that slot be skipped (and logged).
//!
//! The schedule is a pure step machine ([`Rounds::step`]: the schedule and
//! the moment in, the next schedule and what to do out); the engine only
//! carries out what it says.

use serde::{Deserialize, Serialize};

use super::Engine;
use crate::kernel::TaskKind;
use crate::protocol::{EventKind, SpeechTrack};

/// The schedule of a repeated patrol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rounds {
    /// Route patrolled.
    pub route: String,
    /// Sim time the first round started.
    pub first: f64,
    /// Seconds between round starts.
    pub interval: f64,
    /// Rounds started so far.
    pub started: u64,
    /// Slots skipped because the previous round was still running.
    pub skipped: u64,
}

/// What the schedule asks for at a moment.
#[derive(Debug, Clone, PartialEq)]
pub enum RoundStep {
    /// No round is due yet.
    NotDue,
    /// A round was due while the last still runs: its slot is skipped.
    Skip {
        /// The slot skipped (1-based, counting started and skipped ones).
        slot: u64,
        /// When the next round is due.
        next_at: f64,
    },
    /// Round `round` starts now.
    Start {
        /// Its number (1-based).
        round: u64,
    },
}

impl Rounds {
    /// When the next round is due.
    pub fn next_due(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let slots = (self.started + self.skipped) as f64;
        self.first + slots * self.interval
    }

    /// Whether a round is due at sim time `now`, given `slack` (half a tick).
    pub fn is_due(&self, now: f64, slack: f64) -> bool {
        now + slack >= self.next_due()
    }

    /// The schedule at sim time `now`, where `slack` (half a tick) lets the
    /// tick closest to the due time start a round and `busy` says whether
    /// the last round still runs: the schedule after, and what to do.
    #[must_use]
    pub fn step(&self, now: f64, slack: f64, busy: bool) -> (Self, RoundStep) {
        let mut next = self.clone();
        if !self.is_due(now, slack) {
            return (next, RoundStep::NotDue);
        }
        if busy {
            next.skipped += 1;
            let step = RoundStep::Skip {
                slot: next.started + next.skipped,
                next_at: next.next_due(),
            };
            return (next, step);
        }
        next.started += 1;
        let round = next.started;
        (next, RoundStep::Start { round })
    }
}

impl Engine {
    /// Remembers that a patrol of `route` started now, to repeat it when
    /// `[patrol] interval_s` is set.
    pub(super) fn schedule_rounds(&mut self, route: &str) {
        self.state.rounds = self.setup.config.patrol.interval_s.map(|interval| Rounds {
            route: route.to_string(),
            first: self.state.time,
            interval,
            started: 1,
            skipped: 0,
        });
    }

    /// Starts the next round when it is due (K5, before arbitration): the
    /// schedule decides ([`Rounds::step`]), the engine carries it out.
    pub(super) fn next_round(&mut self) {
        // Half a tick of slack: the tick that is closest to the due time starts it.
        let slack = self.setup.config.tick_s / 2.0;
        // Every tick asks; only a due round costs more than this comparison.
        let Some(rounds) = self
            .state
            .rounds
            .as_ref()
            .filter(|r| r.is_due(self.state.time, slack))
        else {
            return;
        };
        let route = rounds.route.clone();
        let busy = self.state.queue.tasks().iter().any(|t| {
            !t.status.is_terminal()
                && matches!(&t.kind, TaskKind::Patrol { route: Some(r), .. } if *r == route)
        });
        let (next, step) = rounds.step(self.state.time, slack, busy);
        self.state.rounds = Some(next);
        let n = match step {
            RoundStep::NotDue => return,
            RoundStep::Skip { slot, next_at } => {
                self.emit(EventKind::Log {
                    level: "warn".into(),
                    message: format!(
                        "patrol round {slot} is due but the last one still runs; next at {next_at:.1} s"
                    ),
                });
                return;
            }
            RoundStep::Start { round } => round,
        };
        let Some(zones) = self.setup.world.route(&route).map(<[String]>::to_vec) else {
            self.state.rounds = None;
            return;
        };
        self.speak(
            &format!("Starting patrol round {n}."),
            SpeechTrack::Template,
        );
        self.add_task(
            TaskKind::Patrol {
                route: Some(route.clone()),
                zones,
            },
            &format!("patrol route {route}, round {n}"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{RoundStep, Rounds};

    fn every_ten() -> Rounds {
        Rounds {
            route: "r".into(),
            first: 0.0,
            interval: 10.0,
            started: 1,
            skipped: 0,
        }
    }

    #[test]
    fn the_schedule_starts_a_round_when_due_skips_a_busy_slot_and_never_drifts() {
        let r = every_ten();
        // Not yet: 9.9 s with half a tick (0.05 s) of slack.
        assert_eq!(r.step(9.9, 0.05, false), (r.clone(), RoundStep::NotDue));
        // The tick closest to 10 s starts round 2.
        let (r, step) = r.step(9.96, 0.05, false);
        assert_eq!(step, RoundStep::Start { round: 2 });
        assert_eq!(r.next_due(), 20.0);
        // Round 2 still runs at 20 s: slot 3 is skipped, the next is at 30 s.
        let (r, step) = r.step(20.0, 0.05, true);
        assert_eq!(
            step,
            RoundStep::Skip {
                slot: 3,
                next_at: 30.0
            }
        );
        // Late by 3 s, round 3 starts; the one after is still due at 40 s.
        let (r, step) = r.step(33.0, 0.05, false);
        assert_eq!(step, RoundStep::Start { round: 3 });
        assert_eq!((r.started, r.skipped, r.next_due()), (3, 1, 40.0));
    }

    use crate::config::Config;
    use crate::engine::Engine;
    use crate::protocol::Origin;
    use crate::protocol::{Command, EventKind, TaskStatus};
    use crate::world::World;

    /// `[patrol] look_around = false`: the plan only goes round.
    #[test]
    fn a_patrol_without_looking_around_has_no_watch_steps() {
        let mut config = Config::default();
        config.patrol.look_around = false;
        let mut engine = Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
        engine.submit(Command::StartPatrol { route: None }, Origin::console());
        engine.tick(&mut Vec::new());
        let task = &engine.state().queue.tasks()[0];
        assert!(!task.plan.is_empty());
        assert!(task.plan.iter().all(|s| s.skill == "navigate_to"));
    }

    /// Every look keeps its frame: the snapshot names the newest, and the
    /// `last/` folder holds that one frame only.
    #[test]
    fn the_newest_look_is_kept_and_named_in_the_snapshot() {
        let dir = std::env::temp_dir().join(format!("rb-last-frame-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let config = Config {
            thread_id: Some("looks".into()),
            runs_dir: dir.clone(),
            ..Config::default()
        };
        let mut engine = Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
        assert_eq!(engine.snapshot().last_frame, None);
        engine.submit(Command::StartPatrol { route: None }, Origin::console());
        let mut frames = Vec::new();
        let mut events = Vec::new();
        while frames.len() < 2 && engine.time() < 600.0 {
            engine.tick(&mut events);
            events.clear();
            let frame = engine.snapshot().last_frame;
            if frame.is_some() && frames.last() != Some(&frame) {
                frames.push(frame);
            }
        }
        assert_eq!(frames.len(), 2, "two looks in a round: {frames:?}");
        let newest = frames[1].clone().unwrap();
        assert!(std::fs::read(&newest).unwrap().starts_with(b"\x89PNG"));
        let last = dir.join("frames").join("looks").join("last");
        let kept: Vec<_> = std::fs::read_dir(&last).unwrap().flatten().collect();
        assert_eq!(
            kept.len(),
            1,
            "only the newest look is kept in {}",
            last.display()
        );
        assert_eq!(kept[0].path().display().to_string(), newest);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Rounds start on a fixed schedule, however long each takes; a stop
    /// ends them.
    #[test]
    fn rounds_repeat_every_interval_without_drift_until_stopped() {
        let mut config = Config {
            thread_id: Some("rounds".into()),
            ..Config::default()
        };
        config.patrol.interval_s = Some(90.0);
        config.skills.keep_frames = false;
        let mut engine = Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
        engine.submit(Command::StartPatrol { route: None }, Origin::console());
        let mut events = Vec::new();
        let mut starts = Vec::new();
        while engine.time() < 400.0 {
            if (engine.time() - 300.0).abs() < 0.05 {
                engine.submit(Command::Stop, Origin::console());
            }
            engine.tick(&mut events);
            for e in events.drain(..) {
                if let EventKind::Task { task, .. } = &e.kind
                    && task.kind == "patrol"
                    && task.status == TaskStatus::Queued
                {
                    starts.push(e.time);
                }
            }
        }
        // Queued at the first tick, then every 90 s after it; stopped at 300 s.
        assert_eq!(starts.len(), 4, "{starts:?}");
        for (k, t) in starts.iter().enumerate() {
            #[allow(clippy::cast_precision_loss)]
            let due = starts[0] + 90.0 * k as f64;
            assert!(
                (t - due).abs() < 1e-6,
                "round {k} at {t}, due {due}: {starts:?}"
            );
        }
    }
}
