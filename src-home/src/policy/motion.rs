//! Judging a motion by where it goes (issue 35): the goal point and the
//! path the planner plans to it, against the world's zones — never the
//! name a door used for the place. A zone name, coordinates, a VDA 5050
//! node position, an MCP call, a model's decision, a chain step, a patrol
//! leg and the dock all reach the policy as a [`Motion`] (the skill says
//! where its goal sends the base), and this module alone decides whether
//! it enters a `restricted` zone or leaves the apartment (an `outside`
//! zone, or off the map).
//!
//! What counts (docs/world.md, "What the policy judges"):
//! - the goal lies in a restricted or outside zone (every zone whose
//!   rectangle holds it, edges included), or off the map;
//! - the path enters one on the way: it is planned with the robot's own
//!   planner ([`crate::world::plan`], A* on the grid) from where the robot
//!   is, with the passages the kernel last heard are blocked — or, when
//!   that finds no way, with every passage open (the way the robot would
//!   take if the passage cleared) — and sampled every quarter cell; a zone
//!   the robot is already in is entered only if the path leaves it and
//!   comes back. Leaving a zone never needs approval.

use crate::config::PolicyConfig;
use crate::geometry::Point;
use crate::skills::Motion;
use crate::world::grid::Grid;
use crate::world::{Path, PlanError, World, Zone, plan};

/// Where the robot is when a motion is judged.
#[derive(Debug, Clone, Copy)]
pub struct Start<'a> {
    /// The robot's position; `None` while it is not known (a real robot
    /// before its first map pose): no way from there can be judged, so
    /// every motion asks (`reason`).
    pub at: Option<Point>,
    /// The passages the kernel last heard are blocked.
    pub blocked: &'a [String],
    /// The world's grid with every passage open, when the caller keeps
    /// one (the engine builds it once); `None`: built for each motion.
    pub open: Option<&'a Grid>,
}

/// Why a place is flagged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    /// Outside the apartment: an `outside` zone, or off the map.
    Outside,
    /// A `restricted` zone.
    Restricted,
}

/// A flagged place a motion reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reached {
    /// Why it is flagged.
    pub flag: Flag,
    /// The zone's name (`off the map` for a goal off it).
    pub zone: String,
    /// Whether it is the goal (else the path passes into it on the way).
    pub goal: bool,
}

/// What a motion from a start to a target reaches.
#[derive(Debug, Clone, PartialEq)]
pub struct Reach {
    /// The path judged (start first); `None` when none can be planned (the
    /// target is off the map or inside a wall: the robot refuses it).
    pub path: Option<Path>,
    /// Every flagged place the goal lies in or the path passes into, the
    /// goal's first.
    pub reached: Vec<Reached>,
}

fn flag(zone: &Zone) -> Option<Flag> {
    if zone.outside {
        Some(Flag::Outside)
    } else if zone.restricted {
        Some(Flag::Restricted)
    } else {
        None
    }
}

/// The path the robot's planner plans from `start` to `target`: on the
/// grid with the blocked passages, else with every passage open; `None`
/// when the target is off the map or in a wall.
pub fn path(world: &World, start: &Start<'_>, target: Point) -> Option<Path> {
    let at = start.at?;
    let built;
    let open = if let Some(grid) = start.open {
        grid
    } else {
        built = Grid::new(world);
        &built
    };
    let blocked: Vec<usize> = start
        .blocked
        .iter()
        .filter_map(|name| world.passage(name))
        .flat_map(|p| world.passage_cells(p))
        .collect();
    let planned = if blocked.is_empty() {
        plan(open, at, target)
    } else {
        let mut grid = open.clone();
        grid.set_blocked(&blocked, true);
        plan(&grid, at, target)
    };
    match planned {
        Ok(path) => Some(path),
        Err(PlanError::NoPath) => plan(open, at, target).ok(),
        Err(_) => None,
    }
}

/// Points of `path` at most `step` apart, both ends included.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss
)]
fn samples(path: &Path, step: f64) -> impl Iterator<Item = Point> + '_ {
    let total = path.length();
    let n = (total / step).ceil().max(1.0) as usize;
    (0..=n).map(move |k| path.point_at(total * k as f64 / n as f64))
}

/// Whether `path` passes into `zone` after its start: a sample inside the
/// zone that follows one outside it.
fn enters(path: &Path, zone: &Zone, step: f64) -> bool {
    let mut inside = true;
    let mut first = true;
    for p in samples(path, step) {
        let now = zone.rect.contains(p);
        if first {
            inside = now;
            first = false;
        } else if now && !inside {
            return true;
        } else {
            inside = now;
        }
    }
    false
}

/// What a motion from `start` to `target` reaches in `world`.
pub fn reach(world: &World, start: &Start<'_>, target: Point) -> Reach {
    let mut reached = Vec::new();
    if world.cell_of(target).is_none() {
        reached.push(Reached {
            flag: Flag::Outside,
            zone: "off the map".into(),
            goal: true,
        });
    }
    for zone in &world.zones {
        if let Some(flag) = flag(zone)
            && zone.rect.contains(target)
        {
            reached.push(Reached {
                flag,
                zone: zone.name.clone(),
                goal: true,
            });
        }
    }
    let path = path(world, start, target);
    if let Some(path) = &path {
        let step = world.resolution / 4.0;
        for zone in &world.zones {
            if let Some(flag) = flag(zone)
                && !reached.iter().any(|r| r.zone == zone.name)
                && enters(path, zone, step)
            {
                reached.push(Reached {
                    flag,
                    zone: zone.name.clone(),
                    goal: false,
                });
            }
        }
    }
    Reach { path, reached }
}

/// Why `skill`'s `motion` from `start` needs approval under `policy`, or
/// `None`: the first flagged place it reaches that the policy asks about
/// (leaving the apartment before entering a restricted zone, the goal
/// before the way there).
pub fn reason(
    policy: &PolicyConfig,
    skill: &str,
    motion: &Motion,
    world: &World,
    start: &Start<'_>,
) -> Option<String> {
    let asks = |flag: Flag| match flag {
        Flag::Outside => policy.approve_outside,
        Flag::Restricted => policy.approve_restricted,
    };
    let (target, what) = match motion {
        Motion::Still => return None,
        Motion::Unknown => {
            return (policy.approve_outside || policy.approve_restricted).then(|| {
                format!("{skill} moves the base and cannot say where: it may leave the apartment or enter a restricted zone")
            });
        }
        Motion::To { target, what } => (*target, what),
    };
    if start.at.is_none() {
        return (policy.approve_outside || policy.approve_restricted).then(|| {
            format!(
                "{skill} moves the base to {what}, and where the robot is is not known yet: \
                 the way there cannot be judged"
            )
        });
    }
    let reach = reach(world, start, target);
    let mut flagged: Vec<&Reached> = reach.reached.iter().filter(|r| asks(r.flag)).collect();
    flagged.sort_by_key(|r| (r.flag != Flag::Outside, !r.goal));
    let r = flagged.first()?;
    Some(match (r.flag, r.goal) {
        (Flag::Outside, true) if r.zone == "off the map" => {
            format!("{skill} leaves the apartment: {what} is off the map")
        }
        (Flag::Outside, true) => format!("{skill} leaves the apartment ({})", r.zone),
        (Flag::Restricted, true) => format!("{skill} enters the restricted zone {}", r.zone),
        (Flag::Outside, false) => format!(
            "{skill} leaves the apartment ({}) on its way to {what}",
            r.zone
        ),
        (Flag::Restricted, false) => format!(
            "{skill} enters the restricted zone {} on its way to {what}",
            r.zone
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apartment() -> World {
        World::builtin("apartment").unwrap()
    }

    fn to(x: f64, y: f64) -> Motion {
        Motion::To {
            target: Point::new(x, y),
            what: format!("({x:.2}, {y:.2})"),
        }
    }

    /// A flat whose short way from the west room to the east room runs
    /// through a restricted middle room; a corridor below goes round.
    pub(super) fn through() -> World {
        let path = crate::testing::workspace_root().join("tests/fixtures/worlds/through.toml");
        World::load(&path).unwrap()
    }

    #[test]
    fn the_goal_is_judged_by_where_it_is_whatever_it_is_called() {
        let world = apartment();
        let policy = PolicyConfig::default();
        let home = Start {
            at: Some(world.start_pose.point()),
            blocked: &[],
            open: None,
        };
        let why = |m: &Motion| reason(&policy, "navigate_to", m, &world, &home);
        assert_eq!(why(&to(8.25, 2.0)), None, "the kitchen");
        assert_eq!(
            why(&to(3.0, 2.0)).as_deref(),
            Some("navigate_to enters the restricted zone study")
        );
        // On the study's edge with the kitchen: it is in the study too.
        assert!(why(&to(6.0, 2.0)).is_some());
        assert_eq!(
            why(&to(15.25, 7.5)).as_deref(),
            Some("navigate_to leaves the apartment (outside)")
        );
        assert_eq!(
            why(&to(40.0, 2.0)).as_deref(),
            Some("navigate_to leaves the apartment: (40.00, 2.00) is off the map")
        );
        assert_eq!(why(&Motion::Still), None);
        assert!(why(&Motion::Unknown).unwrap().contains("cannot say where"));
        // Policy off: nothing asked.
        let off = PolicyConfig {
            approve_outside: false,
            approve_restricted: false,
            ..PolicyConfig::default()
        };
        for m in [to(3.0, 2.0), to(15.25, 7.5), to(40.0, 2.0), Motion::Unknown] {
            assert_eq!(reason(&off, "navigate_to", &m, &world, &home), None);
        }
    }

    #[test]
    fn a_robot_whose_pose_is_not_known_asks_before_any_motion() {
        let world = apartment();
        let policy = PolicyConfig::default();
        let lost = Start {
            at: None,
            blocked: &[],
            open: None,
        };
        // The kitchen is free from the living room, but from nowhere known
        // no way can be judged: the pose (0, 0) would be in the study.
        let why = reason(&policy, "navigate_to", &to(8.25, 2.0), &world, &lost);
        assert!(
            why.as_deref().is_some_and(|w| w.contains("not known yet")),
            "{why:?}"
        );
        assert_eq!(path(&world, &lost, Point::new(8.25, 2.0)), None);
        assert_eq!(
            reason(&policy, "navigate_to", &Motion::Still, &world, &lost),
            None
        );
        let off = PolicyConfig {
            approve_outside: false,
            approve_restricted: false,
            ..PolicyConfig::default()
        };
        assert_eq!(
            reason(&off, "navigate_to", &to(8.25, 2.0), &world, &lost),
            None
        );
    }

    #[test]
    fn a_path_through_a_restricted_zone_needs_approval_and_the_way_round_does_not() {
        let world = through();
        let policy = PolicyConfig::default();
        let west = Start {
            at: Some(Point::new(1.25, 1.25)),
            blocked: &[],
            open: None,
        };
        assert_eq!(
            reason(&policy, "navigate_to", &to(5.25, 1.25), &world, &west).as_deref(),
            Some("navigate_to enters the restricted zone vault on its way to (5.25, 1.25)")
        );
        // The vault's row blocked: the robot would go round by the
        // corridor, which enters nothing.
        let blocked = ["vault_row".to_string()];
        let round = Start {
            at: west.at,
            blocked: &blocked,
            open: None,
        };
        let r = reach(&world, &round, Point::new(5.25, 1.25));
        assert!(r.path.is_some());
        assert_eq!(r.reached, Vec::new(), "{:?}", r.path);
        assert_eq!(
            reason(&policy, "navigate_to", &to(5.25, 1.25), &world, &round),
            None
        );
    }

    #[test]
    fn leaving_a_zone_the_robot_is_in_is_not_entering_it() {
        let world = apartment();
        let policy = PolicyConfig::default();
        let in_study = Start {
            at: Some(Point::new(3.0, 2.0)),
            blocked: &[],
            open: None,
        };
        assert_eq!(
            reason(&policy, "navigate_to", &to(8.25, 2.0), &world, &in_study),
            None
        );
        // Within the study, the goal is still in it.
        assert!(reason(&policy, "navigate_to", &to(1.0, 1.0), &world, &in_study).is_some());
        // From inside the vault, the way east leaves it and enters nothing.
        let world = through();
        let in_vault = Start {
            at: Some(Point::new(3.25, 1.25)),
            blocked: &[],
            open: None,
        };
        assert_eq!(
            reason(&policy, "navigate_to", &to(5.25, 1.25), &world, &in_vault),
            None
        );
    }

    #[test]
    fn a_blocked_way_is_judged_as_it_would_be_once_open() {
        // The study's door blocked: the robot would fail with no_path, and
        // would drive in if it cleared — the study is asked about either way.
        let world = apartment();
        let blocked = ["study_door".to_string()];
        let start = Start {
            at: Some(world.start_pose.point()),
            blocked: &blocked,
            open: None,
        };
        let r = reach(&world, &start, Point::new(3.0, 2.0));
        assert!(r.path.is_some());
        assert_eq!(r.reached[0].zone, "study");
        // A target in a wall has no path; its place is still judged.
        let r = reach(&world, &start, Point::new(0.1, 0.1));
        assert_eq!(r.path, None);
        assert_eq!(r.reached[0].zone, "study");
    }
}
