//! Plane geometry shared by the simulator, the skills and the protocol.
//!
//! World coordinates are metres. The map is drawn with row 0 at the top, so
//! `y` grows downward (south) and a heading `theta` of 0 faces east
//! (+x) while `pi/2` faces south (+y).

use serde::{Deserialize, Serialize};

/// A point in world coordinates (metres).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Point {
    /// East, metres.
    pub x: f64,
    /// South, metres.
    pub y: f64,
}

impl Point {
    /// A point at `(x, y)`.
    pub const fn new(x: f64, y: f64) -> Self {
        Self { x, y }
    }

    /// Euclidean distance to `other`.
    pub fn distance(self, other: Point) -> f64 {
        (self.x - other.x).hypot(self.y - other.y)
    }
}

/// A position with a heading.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Pose {
    /// East, metres.
    pub x: f64,
    /// South, metres.
    pub y: f64,
    /// Heading in radians, 0 = east, `pi/2` = south; kept in `(-pi, pi]`.
    pub theta: f64,
}

impl Pose {
    /// A pose at `(x, y)` facing `theta`.
    pub const fn new(x: f64, y: f64, theta: f64) -> Self {
        Self { x, y, theta }
    }

    /// The position part of the pose.
    pub const fn point(self) -> Point {
        Point::new(self.x, self.y)
    }
}

/// Linear and angular velocity of the base.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Twist {
    /// Forward speed, m/s.
    pub linear: f64,
    /// Turn rate, rad/s (positive turns from east toward south).
    pub angular: f64,
}

/// An axis-aligned rectangle in world coordinates.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Rect {
    /// West edge.
    pub x0: f64,
    /// North edge.
    pub y0: f64,
    /// East edge.
    pub x1: f64,
    /// South edge.
    pub y1: f64,
}

impl Rect {
    /// Whether `p` lies inside the rectangle (edges included).
    pub fn contains(&self, p: Point) -> bool {
        p.x >= self.x0 && p.x <= self.x1 && p.y >= self.y0 && p.y <= self.y1
    }

    /// The centre of the rectangle.
    pub fn center(&self) -> Point {
        Point::new(
            f64::midpoint(self.x0, self.x1),
            f64::midpoint(self.y0, self.y1),
        )
    }
}

/// Wraps an angle into `(-pi, pi]`.
pub fn normalize_angle(a: f64) -> f64 {
    let two_pi = std::f64::consts::TAU;
    let mut r = a % two_pi;
    if r <= -std::f64::consts::PI {
        r += two_pi;
    } else if r > std::f64::consts::PI {
        r -= two_pi;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn angles_wrap_into_half_open_range() {
        assert!((normalize_angle(3.0 * std::f64::consts::PI) - std::f64::consts::PI).abs() < 1e-9);
        assert!((normalize_angle(-std::f64::consts::PI) - std::f64::consts::PI).abs() < 1e-9);
        assert!((normalize_angle(0.5) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn rect_contains_its_center_and_edges() {
        let r = Rect {
            x0: 0.0,
            y0: 0.0,
            x1: 2.0,
            y1: 1.0,
        };
        assert!(r.contains(r.center()));
        assert!(r.contains(Point::new(2.0, 1.0)));
        assert!(!r.contains(Point::new(2.1, 0.5)));
    }
}
