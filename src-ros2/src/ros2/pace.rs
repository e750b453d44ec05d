//! The link's timing rules, apart from the wire so that they are tested
//! with the clock in the test's hand: how often a goal's feedback goes on
//! ([`Coalescer`]), when a dock may be tried again ([`DockGate`]) and when
//! a silent robot counts as lost ([`Silence`]). Each takes `now` as an
//! argument and does no IO.

use std::time::{Duration, Instant};

/// Nav2 sends feedback on every behaviour-tree tick (100 Hz by default);
/// the faces need a few a second and the run log what an operator would
/// replay. One feedback per [`Coalescer::EVERY`] goes on, and every change
/// of the recovery count at once.
#[derive(Debug, Clone, Default)]
pub struct Coalescer {
    last: Option<(Instant, u32)>,
}

impl Coalescer {
    /// The shortest time between two feedbacks passed on.
    pub const EVERY: Duration = Duration::from_millis(500);

    /// Whether a feedback with `recoveries` at `now` goes on.
    pub fn admit(&mut self, now: Instant, recoveries: u32) -> bool {
        let go = self.last.is_none_or(|(at, r)| {
            r != recoveries || now.saturating_duration_since(at) >= Self::EVERY
        });
        if go {
            self.last = Some((now, recoveries));
        }
        go
    }
}

/// What the gate says about a dock goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DockVerdict {
    /// Send it now.
    Go,
    /// Send it at this time, not before.
    At(Instant),
    /// Do not: this many docks in a row ended without the battery charging.
    GiveUp(u32),
}

/// Docking again while the battery does not say it charges, with backoff
/// and a limit: the first dock goes at once, each following one waits
/// twice as long after the previous one ended (1 s, 2 s, 4 s, …), and after
/// [`DockGate::LIMIT`] docks in a row without charging the link refuses
/// more until the battery charges.
#[derive(Debug, Clone, Default)]
pub struct DockGate {
    /// Docks tried since the battery last charged.
    tries: u32,
    /// When the last one ended.
    ended: Option<Instant>,
}

impl DockGate {
    /// Docks in a row without charging before the link gives up.
    pub const LIMIT: u32 = 4;
    /// The wait before the second dock; doubled for each following one.
    pub const FIRST_WAIT: Duration = Duration::from_secs(1);

    /// Whether a dock may go at `now`.
    pub fn verdict(&self, now: Instant) -> DockVerdict {
        if self.tries >= Self::LIMIT {
            return DockVerdict::GiveUp(self.tries);
        }
        match self.ended {
            Some(ended) if self.tries > 0 => {
                let at = ended + Self::FIRST_WAIT * (1 << (self.tries - 1).min(8));
                if now < at {
                    DockVerdict::At(at)
                } else {
                    DockVerdict::Go
                }
            }
            _ => DockVerdict::Go,
        }
    }

    /// A dock was sent.
    pub fn tried(&mut self) {
        self.tries += 1;
    }

    /// A dock ended (however) at `now`.
    pub fn ended(&mut self, now: Instant) {
        self.ended = Some(now);
    }

    /// The battery says it charges: the next dock is a first one again.
    pub fn charging(&mut self) {
        self.tries = 0;
        self.ended = None;
    }
}

/// The robot's liveliness as the link sees it: DDS's participant lease
/// (10 s in Cyclone DDS by default, the robot's to set) is too slow for a
/// brain whose dead-man is 2 s, so the robot also counts as lost once the
/// topic it publishes steadily (`battery_state`) has been silent for the
/// URL's `lost_after`. Before the first sample, only discovery counts.
#[derive(Debug, Clone, Default)]
pub struct Silence {
    last: Option<Instant>,
}

impl Silence {
    /// A sample arrived at `now`.
    pub fn heard(&mut self, now: Instant) {
        self.last = Some(now);
    }

    /// Forget the last sample (a new participant starts afresh).
    pub fn reset(&mut self) {
        self.last = None;
    }

    /// Whether the robot has been silent for `after` at `now`.
    pub fn lost(&self, now: Instant, after: Duration) -> bool {
        self.last
            .is_some_and(|at| now.saturating_duration_since(at) >= after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feedback_at_100_hz_passes_twice_a_second_and_every_recovery() {
        let t0 = Instant::now();
        let mut c = Coalescer::default();
        let passed = (0..1000)
            .filter(|i| c.admit(t0 + Duration::from_millis(10 * i), 0))
            .count();
        assert_eq!(passed, 20, "10 s of 100 Hz feedback");
        let t = t0 + Duration::from_millis(10_010);
        assert!(c.admit(t, 1), "a recovery goes on at once");
        assert!(!c.admit(t + Duration::from_millis(10), 1));
    }

    #[test]
    fn docks_back_off_and_stop_at_the_limit_until_charging() {
        let t0 = Instant::now();
        let mut g = DockGate::default();
        assert_eq!(g.verdict(t0), DockVerdict::Go);
        let mut at = t0;
        let mut waits = Vec::new();
        for _ in 0..DockGate::LIMIT {
            assert_ne!(g.verdict(at), DockVerdict::GiveUp(g.tries));
            if let DockVerdict::At(when) = g.verdict(at) {
                waits.push((when - at).as_secs());
                at = when;
            }
            assert_eq!(g.verdict(at), DockVerdict::Go);
            g.tried();
            g.ended(at);
        }
        assert_eq!(waits, [1, 2, 4]);
        assert_eq!(
            g.verdict(at + Duration::from_secs(3600)),
            DockVerdict::GiveUp(DockGate::LIMIT)
        );
        g.charging();
        assert_eq!(g.verdict(at), DockVerdict::Go);
    }

    #[test]
    fn a_robot_is_lost_only_after_it_was_heard_and_then_silent() {
        let t0 = Instant::now();
        let after = Duration::from_secs(2);
        let mut s = Silence::default();
        assert!(!s.lost(t0 + Duration::from_secs(60), after), "never heard");
        s.heard(t0);
        assert!(!s.lost(t0 + Duration::from_millis(1999), after));
        assert!(s.lost(t0 + after, after));
        s.reset();
        assert!(!s.lost(t0 + after, after));
    }
}
