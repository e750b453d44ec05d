//! The differential-drive base and its path follower.
//!
//! The base turns a commanded twist into motion without ever exceeding its
//! speed, turn-rate or acceleration limits. The follower is a pure function
//! from (path, progress, pose) to a commanded twist: turn toward a point a
//! little ahead on the path, slow down so as to stop at the target, and
//! rotate in place when the heading is far off.

use crate::geometry::{Point, Pose, Twist, normalize_angle};

use crate::world::BaseLimits;
use crate::world::planner::Path;

/// How far ahead on the path the follower aims, metres.
pub const LOOKAHEAD_M: f64 = 0.35;
/// Distance to the target at which a goal counts as reached, metres.
pub const GOAL_TOLERANCE_M: f64 = 0.2;
/// Heading error above which the base rotates in place, radians.
pub const ROTATE_IN_PLACE_RAD: f64 = 0.6;
/// Proportional gain from heading error to turn rate, 1/s.
const TURN_GAIN: f64 = 2.5;
/// Where inside the tolerance the slow-down profile aims to stop, metres.
const STOP_SHORT_M: f64 = 0.05;

/// A differential-drive base: pose, current twist and limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Base {
    pose: Pose,
    twist: Twist,
    limits: BaseLimits,
}

impl Base {
    /// A base at rest at `pose`.
    pub fn new(pose: Pose, limits: BaseLimits) -> Self {
        Self {
            pose,
            twist: Twist::default(),
            limits,
        }
    }

    /// Where the base is.
    pub fn pose(&self) -> Pose {
        self.pose
    }

    /// How the base is moving.
    pub fn twist(&self) -> Twist {
        self.twist
    }

    /// The base's limits.
    pub fn limits(&self) -> BaseLimits {
        self.limits
    }

    /// Whether the base is (practically) at rest.
    pub fn is_at_rest(&self) -> bool {
        self.twist.linear.abs() < 1e-3 && self.twist.angular.abs() < 1e-3
    }

    /// Moves toward `command` for `dt` seconds within the limits and returns
    /// the distance driven. `slip` in `[0, 1)` is the share of wheel travel
    /// lost to the floor. A stalled base stops dead and does not move.
    pub fn drive(&mut self, command: Twist, dt: f64, slip: f64, stalled: bool) -> f64 {
        if stalled {
            self.twist = Twist::default();
            return 0.0;
        }
        let l = self.limits;
        self.twist.linear = approach(self.twist.linear, command.linear, l.max_accel * dt)
            .clamp(-l.max_speed, l.max_speed);
        self.twist.angular = approach(self.twist.angular, command.angular, l.max_turn_accel * dt)
            .clamp(-l.max_turn_rate, l.max_turn_rate);
        let heading = self.pose.theta + self.twist.angular * dt / 2.0;
        let travel = self.twist.linear * dt * (1.0 - slip);
        self.pose.x += travel * heading.cos();
        self.pose.y += travel * heading.sin();
        self.pose.theta = normalize_angle(self.pose.theta + self.twist.angular * dt);
        travel.abs()
    }
}

/// `current` moved toward `target` by at most `max_step`.
fn approach(current: f64, target: f64, max_step: f64) -> f64 {
    current + (target - current).clamp(-max_step, max_step)
}

/// The fastest speed from which the base can still stop within `distance`.
fn stopping_speed(distance: f64, accel: f64) -> f64 {
    (2.0 * accel * distance.max(0.0)).sqrt()
}

/// The turn rate that closes heading error `error` without overshooting.
pub fn turn_command(error: f64, limits: BaseLimits) -> f64 {
    let rate = (TURN_GAIN * error.abs())
        .min(stopping_speed(error.abs(), limits.max_turn_accel))
        .min(limits.max_turn_rate);
    rate.copysign(error)
}

/// The twist that follows `path` from arc length `s` toward its end, for a
/// base at `pose`; `remaining` is the distance still to go.
pub fn follow(path: &Path, s: f64, remaining: f64, pose: Pose, limits: BaseLimits) -> Twist {
    let aim = path.point_at(s + LOOKAHEAD_M);
    let error = heading_error(pose, aim);
    let angular = turn_command(error, limits);
    if error.abs() > ROTATE_IN_PLACE_RAD {
        return Twist {
            linear: 0.0,
            angular,
        };
    }
    let top = limits
        .max_speed
        .min(stopping_speed(remaining - STOP_SHORT_M, limits.max_accel));
    Twist {
        linear: top * (1.0 - error.abs() / ROTATE_IN_PLACE_RAD),
        angular,
    }
}

/// The signed angle to turn from `pose`'s heading to face `aim`.
pub fn heading_error(pose: Pose, aim: Point) -> f64 {
    if aim.distance(pose.point()) < 1e-9 {
        return 0.0;
    }
    normalize_angle((aim.y - pose.y).atan2(aim.x - pose.x) - pose.theta)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> BaseLimits {
        BaseLimits {
            max_speed: 0.6,
            max_turn_rate: 1.5,
            max_accel: 0.5,
            max_turn_accel: 3.0,
        }
    }

    #[test]
    fn acceleration_and_speed_are_limited() {
        let mut b = Base::new(Pose::default(), limits());
        let dt = 0.05;
        let mut prev = b.twist();
        for _ in 0..100 {
            b.drive(
                Twist {
                    linear: 5.0,
                    angular: -9.0,
                },
                dt,
                0.0,
                false,
            );
            let t = b.twist();
            assert!(t.linear <= 0.6 + 1e-12 && t.angular >= -1.5 - 1e-12);
            assert!((t.linear - prev.linear).abs() <= 0.5 * dt + 1e-12);
            assert!((t.angular - prev.angular).abs() <= 3.0 * dt + 1e-12);
            prev = t;
        }
        assert!((b.twist().linear - 0.6).abs() < 1e-12);
    }

    #[test]
    fn a_stalled_base_does_not_move() {
        let mut b = Base::new(Pose::new(1.0, 1.0, 0.0), limits());
        let moved = b.drive(
            Twist {
                linear: 0.5,
                angular: 0.5,
            },
            0.05,
            0.0,
            true,
        );
        assert_eq!(moved, 0.0);
        assert_eq!(b.pose(), Pose::new(1.0, 1.0, 0.0));
        assert!(b.is_at_rest());
    }

    #[test]
    fn follower_rotates_in_place_when_facing_away() {
        let path = Path::new(vec![Point::new(0.0, 0.0), Point::new(3.0, 0.0)]);
        let t = follow(&path, 0.0, 3.0, Pose::new(0.0, 0.0, 3.0), limits());
        assert_eq!(t.linear, 0.0);
        assert!(t.angular.abs() > 0.0);
        let t = follow(&path, 0.0, 3.0, Pose::new(0.0, 0.0, 0.0), limits());
        assert!((t.linear - 0.6).abs() < 1e-12 && t.angular == 0.0);
        let t = follow(&path, 2.9, 0.1, Pose::new(2.9, 0.0, 0.0), limits());
        assert!(t.linear < 0.35, "slows near the goal: {}", t.linear);
    }
}
