//! Global planning: A* over the grid (8-connected, no corner cutting, cells
//! beside walls cost more so paths run down the middle of doorways), then
//! line-of-sight pruning into a polyline the follower can drive.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use thiserror::Error;

use crate::geometry::Point;

use super::grid::{CLEAR_OPEN, Grid};

/// Extra cost factor for entering a cell that touches a wall.
const NEAR_WALL_FACTOR: f64 = 2.0;

/// Why no path was planned.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlanError {
    /// The start is off the map.
    #[error("the start is off the map")]
    StartOffMap,
    /// The target is off the map.
    #[error("the target is off the map")]
    TargetOffMap,
    /// The target is inside a wall.
    #[error("the target is inside a wall")]
    TargetInWall,
    /// The target cannot be reached (walls or blocked passages in the way).
    #[error("no path to the target")]
    NoPath,
}

/// A planned path: a polyline from the start to the target, with the
/// arc length at each vertex.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Path {
    points: Vec<Point>,
    cumulative: Vec<f64>,
}

impl Path {
    /// A path through `points` in order.
    pub fn new(points: Vec<Point>) -> Self {
        let mut cumulative = Vec::with_capacity(points.len());
        let mut total = 0.0;
        for (i, p) in points.iter().enumerate() {
            if i > 0 {
                total += points[i - 1].distance(*p);
            }
            cumulative.push(total);
        }
        Self { points, cumulative }
    }

    /// The vertices, start first.
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// Total length, metres.
    pub fn length(&self) -> f64 {
        self.cumulative.last().copied().unwrap_or(0.0)
    }

    /// Whether the path has no vertices.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The last vertex (the target), if any.
    pub fn end(&self) -> Option<Point> {
        self.points.last().copied()
    }

    /// The point at arc length `s` (clamped to the path).
    pub fn point_at(&self, s: f64) -> Point {
        let Some(&first) = self.points.first() else {
            return Point::default();
        };
        if s <= 0.0 {
            return first;
        }
        let seg = self.segment_at(s);
        let Some(&b) = self.points.get(seg + 1) else {
            return self.points[seg];
        };
        let a = self.points[seg];
        let len = self.cumulative[seg + 1] - self.cumulative[seg];
        let t = if len > 0.0 {
            ((s - self.cumulative[seg]) / len).clamp(0.0, 1.0)
        } else {
            1.0
        };
        Point::new(a.x + (b.x - a.x) * t, a.y + (b.y - a.y) * t)
    }

    /// The index of the segment holding arc length `s`.
    pub fn segment_at(&self, s: f64) -> usize {
        let last = self.points.len().saturating_sub(2);
        self.cumulative
            .partition_point(|&c| c <= s)
            .saturating_sub(1)
            .min(last)
    }

    /// Projects `p` onto segments `from_seg..from_seg + window` and returns
    /// the segment and arc length of the nearest point; never goes back
    /// before `from_seg`, so progress is monotonic.
    pub fn project(&self, p: Point, from_seg: usize, window: usize) -> (usize, f64) {
        let mut best = (
            from_seg,
            self.cumulative.get(from_seg).copied().unwrap_or(0.0),
        );
        let mut best_distance = f64::INFINITY;
        let end = (from_seg + window).min(self.points.len().saturating_sub(1));
        for seg in from_seg..end {
            let (start, stop) = (self.points[seg], self.points[seg + 1]);
            let (dx, dy) = (stop.x - start.x, stop.y - start.y);
            let len2 = dx * dx + dy * dy;
            let along = if len2 > 0.0 {
                (((p.x - start.x) * dx + (p.y - start.y) * dy) / len2).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let foot = Point::new(start.x + dx * along, start.y + dy * along);
            let distance = foot.distance(p);
            if distance < best_distance {
                best_distance = distance;
                best = (seg, self.cumulative[seg] + along * len2.sqrt());
            }
        }
        best
    }

    /// The first arc length at or after `from_s` where the path enters a
    /// cell `hit` reports, sampled every quarter cell, with that cell.
    pub fn first_hit(
        &self,
        grid: &Grid,
        from_s: f64,
        mut hit: impl FnMut(usize) -> bool,
    ) -> Option<(f64, usize)> {
        let step = grid.resolution() / 4.0;
        let mut s = from_s.max(0.0);
        let total = self.length();
        loop {
            if let Some(i) = grid.index_of(self.point_at(s))
                && hit(i)
            {
                return Some((s, i));
            }
            if s >= total {
                return None;
            }
            s = (s + step).min(total);
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Open {
    f: f64,
    index: usize,
}

impl Eq for Open {}

impl Ord for Open {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and we want the lowest f first;
        // ties go to the lower index so the search is fully deterministic.
        other
            .f
            .total_cmp(&self.f)
            .then_with(|| other.index.cmp(&self.index))
    }
}

impl PartialOrd for Open {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Plans a path from `from` to `to` over `grid`.
///
/// The start cell is always usable (the robot may stand in a doorway that
/// has just been blocked); the target cell must be passable.
pub fn plan(grid: &Grid, from: Point, to: Point) -> Result<Path, PlanError> {
    let start = grid.index_of(from).ok_or(PlanError::StartOffMap)?;
    let goal = grid.index_of(to).ok_or(PlanError::TargetOffMap)?;
    if grid.is_wall(goal) {
        return Err(PlanError::TargetInWall);
    }
    if start == goal {
        return Ok(Path::new(vec![from, to]));
    }
    if !grid.is_passable(goal) {
        return Err(PlanError::NoPath);
    }
    let cells = a_star(grid, start, goal).ok_or(PlanError::NoPath)?;
    Ok(Path::new(prune(grid, from, to, &cells)))
}

fn a_star(grid: &Grid, start: usize, goal: usize) -> Option<Vec<usize>> {
    let n = grid.width() * grid.height();
    let mut g_cost = vec![f64::INFINITY; n];
    let mut came_from = vec![usize::MAX; n];
    let mut closed = vec![false; n];
    let mut open = BinaryHeap::new();
    let (gc, gr) = (goal % grid.width(), goal / grid.width());
    let heuristic = |i: usize| {
        let dc = (i % grid.width()).abs_diff(gc) as f64;
        let dr = (i / grid.width()).abs_diff(gr) as f64;
        dc.max(dr) + (std::f64::consts::SQRT_2 - 1.0) * dc.min(dr)
    };
    g_cost[start] = 0.0;
    open.push(Open {
        f: heuristic(start),
        index: start,
    });
    while let Some(Open { index, .. }) = open.pop() {
        if index == goal {
            let mut cells = vec![goal];
            let mut at = goal;
            while at != start {
                at = came_from[at];
                cells.push(at);
            }
            cells.reverse();
            return Some(cells);
        }
        if closed[index] {
            continue;
        }
        closed[index] = true;
        grid.for_each_move(index, |next, step| {
            let factor = if grid.clearance(next) == CLEAR_OPEN {
                1.0
            } else {
                NEAR_WALL_FACTOR
            };
            let g = g_cost[index] + step * factor;
            if g < g_cost[next] {
                g_cost[next] = g;
                came_from[next] = index;
                open.push(Open {
                    f: g + heuristic(next),
                    index: next,
                });
            }
        });
    }
    None
}

/// Line-of-sight pruning: from each kept vertex, skip ahead as far as a
/// straight segment stays in passable cells at least as clear of walls as
/// the cells it replaces.
fn prune(grid: &Grid, from: Point, to: Point, cells: &[usize]) -> Vec<Point> {
    let last = cells.len() - 1;
    let vertex = |k: usize| match k {
        0 => from,
        k if k == last => to,
        k => grid.center(cells[k]),
    };
    let mut points = vec![from];
    let mut anchor = 0;
    while anchor < last {
        let mut best = anchor + 1;
        let mut needed = grid
            .clearance(cells[anchor])
            .min(grid.clearance(cells[best]));
        for (j, &cell) in cells.iter().enumerate().skip(anchor + 2) {
            needed = needed.min(grid.clearance(cell));
            if segment_clear(grid, vertex(anchor), vertex(j), needed) {
                best = j;
            }
        }
        points.push(vertex(best));
        anchor = best;
    }
    points
}

/// Whether the segment `a`–`b` only crosses passable cells of clearance at
/// least `needed` (sampled every quarter cell).
fn segment_clear(grid: &Grid, a: Point, b: Point, needed: u8) -> bool {
    let len = a.distance(b);
    let steps = (len / (grid.resolution() / 4.0)).ceil().max(1.0) as usize;
    (0..=steps).all(|k| {
        let t = k as f64 / steps as f64;
        let p = Point::new(a.x + (b.x - a.x) * t, a.y + (b.y - a.y) * t);
        grid.index_of(p)
            .is_some_and(|i| grid.is_passable(i) && grid.clearance(i) >= needed.max(1))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_floor_prunes_to_a_straight_line() {
        let g = Grid::from_walls(1.0, 10, 10, vec![false; 100]);
        let p = plan(&g, Point::new(1.5, 1.5), Point::new(8.5, 8.5)).unwrap();
        assert_eq!(p.points().len(), 2, "{:?}", p.points());
        assert!((p.length() - 7.0 * 2f64.sqrt()).abs() < 1e-9);
    }

    #[test]
    fn paths_go_round_walls_and_fail_when_sealed() {
        let g = Grid::from_rows(&[
            "..........",
            "..........",
            "#########.",
            "..........",
            "..........",
        ]);
        let p = plan(&g, Point::new(0.5, 0.5), Point::new(0.5, 4.5)).unwrap();
        assert!(p.length() > 16.0, "detour through the gap: {}", p.length());
        for w in p.points().windows(2) {
            assert!(segment_clear(&g, w[0], w[1], 1));
        }
        let sealed = Grid::from_rows(&["....", "####", "...."]);
        assert_eq!(
            plan(&sealed, Point::new(0.5, 0.5), Point::new(0.5, 2.5)),
            Err(PlanError::NoPath)
        );
        assert_eq!(
            plan(&sealed, Point::new(0.5, 0.5), Point::new(0.5, 1.5)),
            Err(PlanError::TargetInWall)
        );
        assert_eq!(
            plan(&sealed, Point::new(0.5, 0.5), Point::new(9.0, 0.5)),
            Err(PlanError::TargetOffMap)
        );
    }

    #[test]
    fn path_geometry_helpers_agree() {
        let p = Path::new(vec![
            Point::new(0.0, 0.0),
            Point::new(2.0, 0.0),
            Point::new(2.0, 2.0),
        ]);
        assert_eq!(p.length(), 4.0);
        assert_eq!(p.point_at(3.0), Point::new(2.0, 1.0));
        assert_eq!(p.point_at(9.0), Point::new(2.0, 2.0));
        assert_eq!(p.segment_at(2.5), 1);
        let (seg, s) = p.project(Point::new(2.5, 1.5), 0, 3);
        assert_eq!((seg, s), (1, 3.5));
        let g = Grid::from_walls(1.0, 3, 3, vec![false; 9]);
        let hit = p.first_hit(&g, 0.0, |i| i == 8);
        assert_eq!(hit, Some((4.0, 8)));
    }
}
