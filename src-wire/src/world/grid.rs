//! The occupancy grid the planner and the path follower read: the world's
//! walls plus the cells of blocked passages, with a coarse clearance per
//! cell so that paths keep off walls where the map leaves room.

use std::collections::VecDeque;

use crate::geometry::Point;

use super::{World, cell_of};

/// Clearance of a cell that cannot be entered (wall or blocked passage).
pub const CLEAR_NONE: u8 = 0;
/// Clearance of a free cell touching an impassable one (8-neighbourhood).
pub const CLEAR_NEAR: u8 = 1;
/// Clearance of a free cell with no impassable neighbour.
pub const CLEAR_OPEN: u8 = 2;

/// Row-major occupancy with blockages.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    resolution: f64,
    width: usize,
    height: usize,
    walls: Vec<bool>,
    /// How many blocked passages cover each cell.
    blocked: Vec<u8>,
    /// [`CLEAR_NONE`], [`CLEAR_NEAR`] or [`CLEAR_OPEN`] per cell.
    clearance: Vec<u8>,
}

/// The 8 neighbour offsets `(dc, dr)`: the four straight ones first.
const NEIGHBOURS: [(isize, isize); 8] = [
    (1, 0),
    (-1, 0),
    (0, 1),
    (0, -1),
    (1, 1),
    (1, -1),
    (-1, 1),
    (-1, -1),
];

impl Grid {
    /// The grid of `world` with every passage open.
    pub fn new(world: &World) -> Self {
        Self::from_walls(
            world.resolution,
            world.width,
            world.height,
            world.walls.clone(),
        )
    }

    /// A grid of `width` × `height` cells of `resolution` metres; `walls` is
    /// row-major and must hold `width * height` cells.
    pub fn from_walls(resolution: f64, width: usize, height: usize, walls: Vec<bool>) -> Self {
        let mut grid = Self {
            resolution,
            width,
            height,
            blocked: vec![0; walls.len()],
            clearance: vec![CLEAR_NONE; walls.len()],
            walls,
        };
        grid.update_clearance();
        grid
    }

    /// Metres per cell.
    pub fn resolution(&self) -> f64 {
        self.resolution
    }

    /// Columns.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Rows.
    pub fn height(&self) -> usize {
        self.height
    }

    /// Row-major index of the cell holding `p`, or `None` off the map.
    pub fn index_of(&self, p: Point) -> Option<usize> {
        cell_of(self.resolution, self.width, self.height, p).map(|(c, r)| r * self.width + c)
    }

    /// The centre of cell `index`.
    pub fn center(&self, index: usize) -> Point {
        let (c, r) = (index % self.width, index / self.width);
        Point::new(
            (c as f64 + 0.5) * self.resolution,
            (r as f64 + 0.5) * self.resolution,
        )
    }

    /// Whether cell `index` is a wall.
    pub fn is_wall(&self, index: usize) -> bool {
        self.walls[index]
    }

    /// Whether cell `index` is covered by a blocked passage.
    pub fn is_blocked(&self, index: usize) -> bool {
        self.blocked[index] > 0
    }

    /// Whether the robot may enter cell `index` (no wall, no blockage).
    pub fn is_passable(&self, index: usize) -> bool {
        self.clearance[index] != CLEAR_NONE
    }

    /// The clearance class of cell `index`.
    pub fn clearance(&self, index: usize) -> u8 {
        self.clearance[index]
    }

    /// Marks `cells` as covered by one more (`blocked`) or one fewer
    /// (`!blocked`) blocked passage.
    pub fn set_blocked(&mut self, cells: &[usize], blocked: bool) {
        for &i in cells {
            self.blocked[i] = if blocked {
                self.blocked[i].saturating_add(1)
            } else {
                self.blocked[i].saturating_sub(1)
            };
        }
        self.update_clearance();
    }

    /// Calls `visit(neighbour, step_in_cells)` for each neighbour of `index`
    /// the robot may move to: passable, and for a diagonal step both
    /// straight cells beside it passable too (no cutting corners).
    pub fn for_each_move(&self, index: usize, mut visit: impl FnMut(usize, f64)) {
        let (c, r) = ((index % self.width) as isize, (index / self.width) as isize);
        for (dc, dr) in NEIGHBOURS {
            let Some(n) = self.offset(c + dc, r + dr) else {
                continue;
            };
            if !self.is_passable(n) {
                continue;
            }
            if dc != 0 && dr != 0 {
                let side_a = self.offset(c + dc, r);
                let side_b = self.offset(c, r + dr);
                if !side_a.is_some_and(|i| self.is_passable(i))
                    || !side_b.is_some_and(|i| self.is_passable(i))
                {
                    continue;
                }
                visit(n, std::f64::consts::SQRT_2);
            } else {
                visit(n, 1.0);
            }
        }
    }

    /// Which cells can be reached from `start` by legal moves; `start`
    /// itself counts as reachable whatever it holds.
    pub fn reachable_from(&self, start: usize) -> Vec<bool> {
        let mut seen = vec![false; self.walls.len()];
        let mut queue = VecDeque::from([start]);
        seen[start] = true;
        while let Some(i) = queue.pop_front() {
            self.for_each_move(i, |n, _| {
                if !seen[n] {
                    seen[n] = true;
                    queue.push_back(n);
                }
            });
        }
        seen
    }

    /// A grid of 1 m cells drawn as rows of `#` (wall) and anything else.
    #[cfg(test)]
    pub(crate) fn from_rows(rows: &[&str]) -> Self {
        let walls = rows
            .iter()
            .flat_map(|r| r.chars().map(|ch| ch == '#'))
            .collect();
        Self::from_walls(1.0, rows[0].len(), rows.len(), walls)
    }

    fn offset(&self, c: isize, r: isize) -> Option<usize> {
        (c >= 0 && r >= 0 && (c as usize) < self.width && (r as usize) < self.height)
            .then(|| r as usize * self.width + c as usize)
    }

    fn update_clearance(&mut self) {
        let impassable = |g: &Self, i: usize| g.walls[i] || g.blocked[i] > 0;
        for i in 0..self.walls.len() {
            self.clearance[i] = if impassable(self, i) {
                CLEAR_NONE
            } else {
                let (c, r) = ((i % self.width) as isize, (i / self.width) as isize);
                let near = NEIGHBOURS.iter().any(|&(dc, dr)| {
                    self.offset(c + dc, r + dr)
                        .is_none_or(|n| impassable(self, n))
                });
                if near { CLEAR_NEAR } else { CLEAR_OPEN }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagonal_moves_do_not_cut_corners() {
        let g = Grid::from_rows(&["..", "#."]);
        let mut moves = Vec::new();
        g.for_each_move(0, |n, _| moves.push(n));
        assert_eq!(moves, vec![1], "no diagonal past the wall at (0, 1)");
    }

    #[test]
    fn blocking_cells_cuts_reachability_and_unblocking_restores_it() {
        let mut g = Grid::from_rows(&["...", "#.#", "..."]);
        assert!(g.reachable_from(0)[7]);
        g.set_blocked(&[4], true);
        assert!(!g.reachable_from(0)[7]);
        assert_eq!(g.clearance(1), CLEAR_NEAR);
        g.set_blocked(&[4], false);
        assert!(g.reachable_from(0)[7]);
    }

    #[test]
    fn clearance_marks_cells_beside_walls() {
        let g = Grid::from_rows(&["#....", ".....", "....."]);
        assert_eq!(g.clearance(0), CLEAR_NONE);
        assert_eq!(g.clearance(6), CLEAR_NEAR);
        assert_eq!(g.clearance(12), CLEAR_NEAR, "the map edge counts as a wall");
        let inner = Grid::from_walls(1.0, 5, 5, vec![false; 25]);
        assert_eq!(inner.clearance(12), CLEAR_OPEN);
    }
}
