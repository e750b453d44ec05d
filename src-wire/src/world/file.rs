//! Reading world files: TOML text is parsed into a raw form that keeps the
//! position of every value, then validated into a [`World`]. A refusal
//! names the file, line and column, the field as a dotted path, and what
//! was expected. The format is documented in `docs/world.md`.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use crate::geometry::{Point, Pose, Rect};
use crate::source::SourceError;

use super::grid::Grid;
use super::{
    BaseLimits, BatteryModel, Passage, ScriptedIncident, World, Zone, cell_of, cells_in_rect,
    normalize_name,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorld {
    name: Spanned<String>,
    resolution: Spanned<f64>,
    map: Spanned<String>,
    home_zone: Spanned<String>,
    charger_zone: Spanned<String>,
    start: Spanned<RawPose>,
    dock: Spanned<RawPose>,
    #[serde(default)]
    base: BaseLimits,
    #[serde(default)]
    battery: BatteryModel,
    zones: Vec<RawZone>,
    #[serde(default)]
    passages: Vec<RawPassage>,
    #[serde(default)]
    routes: BTreeMap<String, Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    incidents: Vec<RawIncident>,
    #[serde(default)]
    frame: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPose {
    x: f64,
    y: f64,
    #[serde(default)]
    heading_deg: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawZone {
    name: Spanned<String>,
    #[serde(default)]
    aliases: Vec<Spanned<String>>,
    rect: Spanned<[f64; 4]>,
    goal: Spanned<[f64; 2]>,
    #[serde(default)]
    restricted: bool,
    #[serde(default)]
    outside: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPassage {
    name: Spanned<String>,
    rect: Spanned<[f64; 4]>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIncident {
    at: Spanned<f64>,
    zone: Spanned<String>,
    kind: Spanned<String>,
}

/// The file being validated, for locating errors.
struct Source<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Source<'_> {
    fn at(&self, span: Range<usize>, field: &str, message: impl Into<String>) -> SourceError {
        SourceError::at_offset(self.file, self.text, span.start, field, message)
    }

    fn at_key(&self, field: &str, message: impl Into<String>) -> SourceError {
        SourceError::at_key(self.file, self.text, field, message)
    }
}

/// The parts of the map validation needs before a [`World`] exists.
struct MapInfo {
    resolution: f64,
    width: usize,
    height: usize,
    walls: Vec<bool>,
}

impl MapInfo {
    fn width_m(&self) -> f64 {
        self.width as f64 * self.resolution
    }

    fn height_m(&self) -> f64 {
        self.height as f64 * self.resolution
    }

    /// The cell index of `p`, or `None` off the map.
    fn index(&self, p: Point) -> Option<usize> {
        cell_of(self.resolution, self.width, self.height, p).map(|(c, r)| r * self.width + c)
    }

    /// Why `p` cannot hold the robot, if it cannot.
    fn why_not_free(&self, p: Point) -> Option<String> {
        match cell_of(self.resolution, self.width, self.height, p) {
            None => Some(format!(
                "{} is off the map, which spans x 0–{} m and y 0–{} m",
                show_point(p),
                self.width_m(),
                self.height_m()
            )),
            Some((c, r)) if self.walls[r * self.width + c] => Some(format!(
                "{} is inside a wall (map row {}, column {})",
                show_point(p),
                r + 1,
                c + 1
            )),
            Some(_) => None,
        }
    }

    /// Why `rect` is not a usable extent on this map, if it is not.
    fn why_bad_rect(&self, rect: [f64; 4]) -> Option<String> {
        let [x0, y0, x1, y1] = rect;
        if rect.iter().any(|v| !v.is_finite()) || x0 >= x1 || y0 >= y1 {
            return Some(format!(
                "expected [x0, y0, x1, y1] in metres with x0 < x1 and y0 < y1, found {}",
                show_list(&rect)
            ));
        }
        if x0 < 0.0 || y0 < 0.0 || x1 > self.width_m() || y1 > self.height_m() {
            return Some(format!(
                "{} reaches outside the map, which spans x 0–{} m and y 0–{} m",
                show_list(&rect),
                self.width_m(),
                self.height_m()
            ));
        }
        None
    }
}

fn show_point(p: Point) -> String {
    format!("({}, {})", p.x, p.y)
}

fn show_list(values: &[f64]) -> String {
    let parts: Vec<String> = values.iter().map(f64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

fn to_rect(r: [f64; 4]) -> Rect {
    Rect {
        x0: r[0],
        y0: r[1],
        x1: r[2],
        y1: r[3],
    }
}

fn to_pose(p: &RawPose) -> Pose {
    Pose::new(
        p.x,
        p.y,
        crate::geometry::normalize_angle(p.heading_deg.to_radians()),
    )
}

impl World {
    /// Parses and validates world text; `file` names it in errors.
    pub fn from_toml_str(text: &str, file: &Path) -> Result<World, SourceError> {
        let raw: RawWorld =
            toml::from_str(text).map_err(|e| SourceError::from_toml(file, text, &e))?;
        validate(raw, &Source { file, text })
    }
}

fn validate(raw: RawWorld, src: &Source<'_>) -> Result<World, SourceError> {
    let resolution = check_name_and_resolution(&raw, src)?;
    let map = parse_map(&raw.map, resolution, src)?;
    check_base(&raw.base, src)?;
    check_battery(&raw.battery, src)?;
    let zones = check_zones(&raw.zones, &map, src)?;
    let passages = check_passages(&raw.passages, &map, src)?;
    let routes = check_routes(&raw.routes, &zones, src)?;
    let home_zone = known_zone(&zones, &raw.home_zone, "home_zone", src)?;
    let charger_zone = known_zone(&zones, &raw.charger_zone, "charger_zone", src)?;
    let (start_pose, dock_pose) = check_poses(&raw, &map, &zones, &charger_zone, src)?;
    let incidents = check_incidents(&raw.incidents, &zones, src)?;
    check_reachable(&map, start_pose, &zones, &raw, dock_pose, src)?;
    Ok(World {
        name: raw.name.into_inner(),
        resolution,
        width: map.width,
        height: map.height,
        walls: map.walls,
        zones,
        passages,
        routes,
        home_zone,
        charger_zone,
        dock_pose,
        start_pose,
        base: raw.base,
        battery: raw.battery,
        incidents,
        frame: raw.frame,
    })
}

/// The world's resolution, once its name is known to be non-empty and the
/// resolution to be a positive number of metres per cell.
fn check_name_and_resolution(raw: &RawWorld, src: &Source<'_>) -> Result<f64, SourceError> {
    if raw.name.get_ref().trim().is_empty() {
        return Err(src.at(raw.name.span(), "name", "expected a non-empty name"));
    }
    let resolution = *raw.resolution.get_ref();
    if !(resolution.is_finite() && resolution > 0.0) {
        return Err(src.at(
            raw.resolution.span(),
            "resolution",
            format!("expected metres per cell above 0, found {resolution}"),
        ));
    }
    Ok(resolution)
}

/// `name` when it is one of `zones`; else an error at `field` listing them.
fn known_zone(
    zones: &[Zone],
    name: &Spanned<String>,
    field: &str,
    src: &Source<'_>,
) -> Result<String, SourceError> {
    if zones.iter().any(|z| &z.name == name.get_ref()) {
        Ok(name.get_ref().clone())
    } else {
        let known: Vec<&str> = zones.iter().map(|z| z.name.as_str()).collect();
        Err(src.at(
            name.span(),
            field,
            format!(
                "unknown zone `{}`; expected one of: {}",
                name.get_ref(),
                known.join(", ")
            ),
        ))
    }
}

/// The named routes, each a non-empty list of known zones, in the order
/// they are written in the file.
fn check_routes(
    raw: &BTreeMap<String, Spanned<Vec<Spanned<String>>>>,
    zones: &[Zone],
    src: &Source<'_>,
) -> Result<Vec<(String, Vec<String>)>, SourceError> {
    let mut routes: Vec<(usize, String, Vec<String>)> = Vec::new();
    for (route, stops) in raw {
        let field = format!("routes.{route}");
        if stops.get_ref().is_empty() {
            return Err(src.at(stops.span(), &field, "expected at least one zone"));
        }
        let names = stops
            .get_ref()
            .iter()
            .map(|s| known_zone(zones, s, &field, src))
            .collect::<Result<Vec<_>, _>>()?;
        routes.push((stops.span().start, route.clone(), names));
    }
    routes.sort_by_key(|(at, _, _)| *at);
    Ok(routes.into_iter().map(|(_, n, z)| (n, z)).collect())
}

/// The start and dock poses, once both are on free cells and the dock is
/// inside the charger zone.
fn check_poses(
    raw: &RawWorld,
    map: &MapInfo,
    zones: &[Zone],
    charger_zone: &str,
    src: &Source<'_>,
) -> Result<(Pose, Pose), SourceError> {
    let start_pose = to_pose(raw.start.get_ref());
    if let Some(why) = map.why_not_free(start_pose.point()) {
        return Err(src.at(raw.start.span(), "start", format!("start pose {why}")));
    }
    let dock_pose = to_pose(raw.dock.get_ref());
    if let Some(why) = map.why_not_free(dock_pose.point()) {
        return Err(src.at(raw.dock.span(), "dock", format!("dock pose {why}")));
    }
    let charger = zones.iter().find(|z| z.name == charger_zone);
    if let Some(charger) = charger
        && !charger.rect.contains(dock_pose.point())
    {
        return Err(src.at(
            raw.dock.span(),
            "dock",
            format!(
                "dock pose {} is outside the charger zone `{}`",
                show_point(dock_pose.point()),
                charger.name
            ),
        ));
    }
    Ok((start_pose, dock_pose))
}

/// The scripted incidents, each at a time ≥ 0, in a known zone, of a named kind.
fn check_incidents(
    raw: &[RawIncident],
    zones: &[Zone],
    src: &Source<'_>,
) -> Result<Vec<ScriptedIncident>, SourceError> {
    let mut incidents = Vec::new();
    for (i, inc) in raw.iter().enumerate() {
        let at = *inc.at.get_ref();
        if !(at.is_finite() && at >= 0.0) {
            return Err(src.at(
                inc.at.span(),
                &format!("incidents.{i}.at"),
                format!("expected seconds ≥ 0, found {at}"),
            ));
        }
        let zone = known_zone(zones, &inc.zone, &format!("incidents.{i}.zone"), src)?;
        if inc.kind.get_ref().trim().is_empty() {
            return Err(src.at(
                inc.kind.span(),
                &format!("incidents.{i}.kind"),
                "expected what appears, e.g. \"smoke\"",
            ));
        }
        incidents.push(ScriptedIncident {
            at,
            zone,
            kind: inc.kind.get_ref().clone(),
        });
    }
    Ok(incidents)
}

/// Reads the ASCII map: one line per row, `#` wall, `.` free; blank lines
/// before the first row and after the last are ignored.
fn parse_map(
    map: &Spanned<String>,
    resolution: f64,
    src: &Source<'_>,
) -> Result<MapInfo, SourceError> {
    let value = map.get_ref();
    let base = content_offset(src.text, map.span(), value);
    let at = |byte: usize| {
        let offset = base.map_or(map.span().start, |b| b + byte);
        offset..offset
    };
    let mut rows: Vec<(usize, &str)> = Vec::new();
    let mut offset = 0;
    for line in value.split('\n') {
        rows.push((offset, line.strip_suffix('\r').unwrap_or(line)));
        offset += line.len() + 1;
    }
    let first = rows.iter().position(|(_, l)| !l.trim().is_empty());
    let last = rows.iter().rposition(|(_, l)| !l.trim().is_empty());
    let (Some(first), Some(last)) = (first, last) else {
        return Err(src.at(
            map.span(),
            "map",
            "expected rows of '#' (wall) and '.' (free), found no rows",
        ));
    };
    let rows = &rows[first..=last];
    let width = rows[0].1.chars().count();
    let mut walls = Vec::with_capacity(width * rows.len());
    for (r, &(row_at, line)) in rows.iter().enumerate() {
        for (c, (byte, ch)) in line.char_indices().enumerate() {
            match ch {
                '#' => walls.push(true),
                '.' => walls.push(false),
                other => {
                    return Err(src.at(
                        at(row_at + byte),
                        "map",
                        format!(
                            "unknown map character {other:?} at row {}, column {}; expected '#' (wall) or '.' (free)",
                            r + 1,
                            c + 1
                        ),
                    ));
                }
            }
        }
        let cells = line.chars().count();
        if cells != width {
            return Err(src.at(
                at(row_at),
                "map",
                format!(
                    "row {} has {cells} cells, expected {width} like row 1",
                    r + 1
                ),
            ));
        }
    }
    Ok(MapInfo {
        resolution,
        width,
        height: rows.len(),
        walls,
    })
}

/// Byte offset in `text` where the string value spanning `span` starts,
/// when the literal holds `value` verbatim (no escapes); `None` otherwise.
fn content_offset(text: &str, span: Range<usize>, value: &str) -> Option<usize> {
    let literal = text.get(span.clone())?;
    let mut start = span.start;
    let mut body = literal;
    for delim in ["\"\"\"", "'''", "\"", "'"] {
        if let Some(rest) = literal.strip_prefix(delim) {
            start += delim.len();
            body = rest;
            if delim.len() == 3 {
                if let Some(rest) = body.strip_prefix("\r\n") {
                    start += 2;
                    body = rest;
                } else if let Some(rest) = body.strip_prefix('\n') {
                    start += 1;
                    body = rest;
                }
            }
            break;
        }
    }
    body.starts_with(value).then_some(start)
}

fn check_base(base: &BaseLimits, src: &Source<'_>) -> Result<(), SourceError> {
    for (key, v) in [
        ("base.max_speed", base.max_speed),
        ("base.max_turn_rate", base.max_turn_rate),
        ("base.max_accel", base.max_accel),
        ("base.max_turn_accel", base.max_turn_accel),
    ] {
        if !(v.is_finite() && v > 0.0) {
            return Err(src.at_key(key, format!("expected a value above 0, found {v}")));
        }
    }
    Ok(())
}

fn check_battery(battery: &BatteryModel, src: &Source<'_>) -> Result<(), SourceError> {
    let pct = battery.initial_pct;
    if !(0.0..=100.0).contains(&pct) {
        return Err(src.at_key(
            "battery.initial_pct",
            format!("expected a percent in [0, 100], found {pct}"),
        ));
    }
    for (key, v) in [
        ("battery.idle_drain_per_s", battery.idle_drain_per_s),
        ("battery.drain_per_m", battery.drain_per_m),
        ("battery.charge_per_s", battery.charge_per_s),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(src.at_key(key, format!("expected a rate ≥ 0, found {v}")));
        }
    }
    Ok(())
}

/// The name of entry `index` of `table`, if it is a usable name.
fn check_name<'a>(
    name: &'a Spanned<String>,
    table: &str,
    index: usize,
    example: &str,
    src: &Source<'_>,
) -> Result<&'a String, SourceError> {
    let text = name.get_ref();
    if text.is_empty() || text.contains(char::is_whitespace) {
        return Err(src.at(
            name.span(),
            &format!("{table}.{index}.name"),
            format!("expected a name without spaces, e.g. {example}, found {text:?}"),
        ));
    }
    Ok(text)
}

fn check_zones(raw: &[RawZone], map: &MapInfo, src: &Source<'_>) -> Result<Vec<Zone>, SourceError> {
    if raw.is_empty() {
        return Err(src.at_key("zones", "expected at least one [[zones]] table"));
    }
    // Every name and alias, folded, with the zone that owns it.
    let mut taken: Vec<(String, String)> = Vec::new();
    let mut zones = Vec::with_capacity(raw.len());
    for (i, z) in raw.iter().enumerate() {
        let name = check_name(&z.name, "zones", i, "living_room", src)?;
        let field = |key: &str| format!("zones.{name}.{key}");
        for (label, span) in std::iter::once((name, z.name.span()))
            .chain(z.aliases.iter().map(|a| (a.get_ref(), a.span())))
        {
            let folded = normalize_name(label);
            if folded.is_empty() {
                return Err(src.at(span, &field("aliases"), "expected a non-empty alias"));
            }
            if let Some((_, owner)) = taken.iter().find(|(f, o)| *f == folded && o != name) {
                let key = if label == name { "name" } else { "aliases" };
                return Err(src.at(
                    span,
                    &field(key),
                    format!("{label:?} is already a name or alias of zone `{owner}`"),
                ));
            }
            taken.push((folded, name.clone()));
        }
        if let Some(why) = map.why_bad_rect(*z.rect.get_ref()) {
            return Err(src.at(z.rect.span(), &field("rect"), why));
        }
        let rect = to_rect(*z.rect.get_ref());
        let [gx, gy] = *z.goal.get_ref();
        let goal = Point::new(gx, gy);
        if !rect.contains(goal) {
            return Err(src.at(
                z.goal.span(),
                &field("goal"),
                format!(
                    "goal {} is outside the zone's rect {}",
                    show_point(goal),
                    show_list(z.rect.get_ref())
                ),
            ));
        }
        if let Some(why) = map.why_not_free(goal) {
            return Err(src.at(z.goal.span(), &field("goal"), format!("goal {why}")));
        }
        zones.push(Zone {
            name: name.clone(),
            aliases: z.aliases.iter().map(|a| a.get_ref().clone()).collect(),
            rect,
            goal,
            restricted: z.restricted,
            outside: z.outside,
        });
    }
    Ok(zones)
}

fn check_passages(
    raw: &[RawPassage],
    map: &MapInfo,
    src: &Source<'_>,
) -> Result<Vec<Passage>, SourceError> {
    let mut passages: Vec<Passage> = Vec::with_capacity(raw.len());
    for (i, p) in raw.iter().enumerate() {
        let name = check_name(&p.name, "passages", i, "hall_door", src)?;
        if passages.iter().any(|q| &q.name == name) {
            return Err(src.at(
                p.name.span(),
                &format!("passages.{name}.name"),
                format!("duplicate passage name `{name}`"),
            ));
        }
        let field = format!("passages.{name}.rect");
        if let Some(why) = map.why_bad_rect(*p.rect.get_ref()) {
            return Err(src.at(p.rect.span(), &field, why));
        }
        let rect = to_rect(*p.rect.get_ref());
        let cells = cells_in_rect(map.resolution, map.width, map.height, rect);
        if !cells.iter().any(|&c| !map.walls[c]) {
            return Err(src.at(
                p.rect.span(),
                &field,
                "expected the rect to hold the centre of at least one free cell",
            ));
        }
        passages.push(Passage {
            name: name.clone(),
            rect,
        });
    }
    Ok(passages)
}

fn check_reachable(
    map: &MapInfo,
    start: Pose,
    zones: &[Zone],
    raw: &RawWorld,
    dock: Pose,
    src: &Source<'_>,
) -> Result<(), SourceError> {
    let grid = Grid::from_walls(map.resolution, map.width, map.height, map.walls.clone());
    let Some(start_cell) = map.index(start.point()) else {
        return Ok(());
    };
    let reachable = grid.reachable_from(start_cell);
    let reached = |p: Point| map.index(p).is_some_and(|i| reachable[i]);
    let unreachable = |what: &str, p: Point| {
        format!(
            "{what} {} cannot be reached from the start pose {} even with every passage open",
            show_point(p),
            show_point(start.point())
        )
    };
    for (zone, raw_zone) in zones.iter().zip(&raw.zones) {
        if !reached(zone.goal) {
            return Err(src.at(
                raw_zone.goal.span(),
                &format!("zones.{}.goal", zone.name),
                unreachable("goal", zone.goal),
            ));
        }
    }
    if !reached(dock.point()) {
        return Err(src.at(
            raw.dock.span(),
            "dock",
            unreachable("dock pose", dock.point()),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"name = "small"
resolution = 1.0
map = """
#######
#.....#
#.#####
#.....#
#######
"""
home_zone = "a"
charger_zone = "b"
start = { x = 1.5, y = 1.5 }
dock = { x = 5.5, y = 3.5, heading_deg = 90 }

[[zones]]
name = "a"
aliases = ["甲", "zone a"]
rect = [0, 0, 7, 2]
goal = [4.5, 1.5]

[[zones]]
name = "b"
rect = [0, 3, 7, 5]
goal = [3.5, 3.5]

[[passages]]
name = "gap"
rect = [1, 2, 2, 3]

[routes]
loop = ["a", "b"]

[[incidents]]
at = 5
zone = "b"
kind = "smoke"
"#;

    fn load(text: &str) -> Result<World, String> {
        World::from_toml_str(text, Path::new("w.toml")).map_err(|e| e.to_string())
    }

    /// The error for the small world with `from` replaced by `to`.
    fn refused(from: &str, to: &str) -> String {
        assert!(SMALL.contains(from), "{from}");
        load(&SMALL.replace(from, to)).unwrap_err()
    }

    #[test]
    fn a_small_world_parses() {
        let w = load(SMALL).unwrap();
        assert_eq!((w.width, w.height), (7, 5));
        assert_eq!(w.zones.len(), 2);
        assert_eq!(
            w.route("loop"),
            Some(&["a".to_string(), "b".to_string()][..])
        );
        assert!((w.dock_pose.theta - std::f64::consts::FRAC_PI_2).abs() < 1e-12);
        assert_eq!(w.incidents[0].kind, "smoke");
        assert_eq!(w.base, BaseLimits::default());
        assert_eq!(w.find_zone("Zone_A").map(|z| z.name.as_str()), Some("a"));
        assert_eq!(w.find_zone("甲").map(|z| z.name.as_str()), Some("a"));
    }

    #[test]
    fn ragged_rows_say_which_row_and_width() {
        assert_eq!(
            refused("#.#####\n", "#.####\n"),
            "w.toml:6:1: `map`: row 3 has 6 cells, expected 7 like row 1"
        );
    }

    #[test]
    fn unknown_map_characters_are_pointed_at() {
        assert_eq!(
            refused("#.....#\n#.#", "#..x..#\n#.#"),
            "w.toml:5:4: `map`: unknown map character 'x' at row 2, column 4; expected '#' (wall) or '.' (free)"
        );
    }

    #[test]
    fn zones_outside_the_map_are_refused() {
        assert_eq!(
            refused("rect = [0, 3, 7, 5]", "rect = [0, 3, 9, 5]"),
            "w.toml:23:8: `zones.b.rect`: [0, 3, 9, 5] reaches outside the map, which spans x 0–7 m and y 0–5 m"
        );
    }

    #[test]
    fn goals_and_poses_inside_walls_are_refused() {
        assert_eq!(
            refused("goal = [4.5, 1.5]", "goal = [4.5, 0.5]"),
            "w.toml:19:8: `zones.a.goal`: goal (4.5, 0.5) is inside a wall (map row 1, column 5)"
        );
        assert_eq!(
            refused("dock = { x = 5.5, y = 3.5", "dock = { x = 6.5, y = 3.5"),
            "w.toml:13:8: `dock`: dock pose (6.5, 3.5) is inside a wall (map row 4, column 7)"
        );
    }

    #[test]
    fn routes_must_name_known_zones() {
        assert_eq!(
            refused("loop = [\"a\", \"b\"]", "loop = [\"a\", \"garage\"]"),
            "w.toml:31:14: `routes.loop`: unknown zone `garage`; expected one of: a, b"
        );
        assert_eq!(
            refused("home_zone = \"a\"", "home_zone = \"c\""),
            "w.toml:10:13: `home_zone`: unknown zone `c`; expected one of: a, b"
        );
    }

    #[test]
    fn duplicate_names_and_aliases_are_refused() {
        assert_eq!(
            refused("name = \"b\"", "name = \"b\"\naliases = [\"Zone A\"]"),
            "w.toml:23:12: `zones.b.aliases`: \"Zone A\" is already a name or alias of zone `a`"
        );
    }

    #[test]
    fn unreachable_goals_are_refused() {
        assert_eq!(
            refused("#.#####\n#.....#", "#.#####\n###...#"),
            "w.toml:24:8: `zones.b.goal`: goal (3.5, 3.5) cannot be reached from the start pose (1.5, 1.5) even with every passage open"
        );
    }

    #[test]
    fn unknown_keys_and_missing_fields_name_the_place() {
        let text = SMALL.replace("goal = [3.5, 3.5]", "goal = [3.5, 3.5]\ncolour = \"red\"");
        let e = load(&text).unwrap_err();
        assert!(e.starts_with("w.toml:25:1: `colour`: unknown field"), "{e}");
        let text = SMALL.replace("resolution = 1.0\n", "");
        let e = load(&text).unwrap_err();
        assert!(e.contains("missing field `resolution`"), "{e}");
    }

    #[test]
    fn names_must_not_hold_spaces() {
        assert_eq!(
            refused("name = \"gap\"", "name = \"the gap\""),
            "w.toml:27:8: `passages.0.name`: expected a name without spaces, e.g. hall_door, found \"the gap\""
        );
    }

    #[test]
    fn base_limits_must_be_positive() {
        let text = format!("{SMALL}\n[base]\nmax_speed = 0\n");
        assert_eq!(
            load(&text).unwrap_err(),
            "w.toml:39:1: `base.max_speed`: expected a value above 0, found 0"
        );
    }
}
