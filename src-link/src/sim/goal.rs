//! The running base goal: what it asks, its planned path, how far along it
//! is, and which phase it is in (driving, waiting out an obstruction,
//! aligning on the dock, braking).

use crate::geometry::{Point, Pose};
use crate::link::{GoalId, NavFeedback};

use crate::world::grid::Grid;
use crate::world::planner::Path;

/// Seconds between feedback messages of a running goal.
pub const FEEDBACK_PERIOD_S: f64 = 0.5;

/// What a running base goal does.
#[derive(Debug, Clone, PartialEq)]
pub enum Job {
    /// Drive to a point.
    Navigate {
        /// Where to.
        target: Point,
    },
    /// Drive to the dock pose, face its heading, start charging.
    Dock {
        /// The dock pose.
        dock: Pose,
    },
    /// Brake to a standstill.
    Stop,
}

impl Job {
    /// Where the job ends, if it drives somewhere.
    pub fn target(&self) -> Option<Point> {
        match self {
            Self::Navigate { target } => Some(*target),
            Self::Dock { dock } => Some(dock.point()),
            Self::Stop => None,
        }
    }
}

/// Where a running goal stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Phase {
    /// Following the path.
    Driving,
    /// Stopped before an obstruction, waiting until `until` to look again.
    Recovering {
        /// Sim time of the next look.
        until: f64,
    },
    /// At the dock, turning to its heading.
    Aligning,
    /// Braking (a stop goal).
    Braking,
}

/// A base goal in progress.
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveGoal {
    /// The brain's id.
    pub id: GoalId,
    /// What it does.
    pub job: Job,
    /// Sim time it started.
    pub started: f64,
    /// Sim time of the next feedback message.
    pub next_feedback: f64,
    /// The planned path (empty for a stop).
    pub path: Path,
    /// Segment of the path the robot is on.
    pub seg: usize,
    /// Arc length of the robot's projection on the path.
    pub s: f64,
    /// Metres driven since the start.
    pub travelled: f64,
    /// The phase.
    pub phase: Phase,
    /// Local recoveries so far.
    pub recoveries: u32,
    /// Where the path ahead first enters a blocked cell, and that cell.
    pub blocked_at: Option<(f64, usize)>,
}

impl ActiveGoal {
    /// A goal starting at `now` along `path`.
    pub fn new(id: GoalId, job: Job, path: Path, now: f64) -> Self {
        let phase = if job == Job::Stop {
            Phase::Braking
        } else {
            Phase::Driving
        };
        Self {
            id,
            job,
            started: now,
            next_feedback: now + FEEDBACK_PERIOD_S,
            path,
            seg: 0,
            s: 0.0,
            travelled: 0.0,
            phase,
            recoveries: 0,
            blocked_at: None,
        }
    }

    /// Where the goal ends, if it drives somewhere.
    pub fn target(&self) -> Option<Point> {
        self.job.target()
    }

    /// Distance still to go from `at`: the path left, and never less than
    /// the straight line to the target.
    pub fn remaining(&self, at: Point) -> f64 {
        self.target()
            .map_or(0.0, |t| (self.path.length() - self.s).max(at.distance(t)))
    }

    /// Looks along the path from the robot for blocked cells again.
    pub fn rescan_blocked(&mut self, grid: &Grid) {
        self.blocked_at = if self.path.is_empty() {
            None
        } else {
            self.path.first_hit(grid, self.s, |i| grid.is_blocked(i))
        };
    }

    /// Whether a blocked cell lies within `lookahead` metres ahead.
    pub fn blocked_within(&self, lookahead: f64) -> bool {
        self.blocked_at.is_some_and(|(b, _)| b - self.s < lookahead)
    }

    /// The feedback for time `now`, robot at `at`; `nominal_speed` stands in
    /// for the average speed until the robot has driven a little.
    pub fn feedback(&self, now: f64, at: Point, nominal_speed: f64) -> NavFeedback {
        let navigation_time = now - self.started;
        let remaining = self.remaining(at);
        let speed = if self.travelled > 0.5 && navigation_time > 0.0 {
            (self.travelled / navigation_time).max(0.1)
        } else {
            nominal_speed
        };
        NavFeedback {
            distance_remaining: remaining,
            estimated_time_remaining: remaining / speed,
            navigation_time,
            number_of_recoveries: self.recoveries,
        }
    }
}
