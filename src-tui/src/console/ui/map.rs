//! The map: the world's walls scaled to the panel (a terminal cell is about
//! twice as tall as wide, so a row covers twice the metres of a column),
//! zone names, blocked passages `X`, the dock `D`, the planned path `·`, a
//! route waiting for approval `∘`, incidents `!`, devices by their first
//! letter, and the robot as an arrow pointing where it faces.

use std::f64::consts::PI;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};

use robobrain_core::geometry::Point;

use super::Theme;
use crate::console::app::App;

/// Metres per column and per row, and the map's top-left in the panel.
struct Scale {
    sx: f64,
    sy: f64,
    x0: u16,
    y0: u16,
    cols: u16,
    rows: u16,
}

impl Scale {
    fn fit(width_m: f64, height_m: f64, area: Rect) -> Option<Self> {
        if area.width < 4 || area.height < 2 || width_m <= 0.0 || height_m <= 0.0 {
            return None;
        }
        let s = (width_m / f64::from(area.width)).max(height_m / (2.0 * f64::from(area.height)));
        let cols = ((width_m / s).ceil() as u16).min(area.width);
        let rows = ((height_m / (2.0 * s)).ceil() as u16).min(area.height);
        Some(Self {
            sx: s,
            sy: 2.0 * s,
            x0: area.x + (area.width - cols) / 2,
            y0: area.y + (area.height - rows) / 2,
            cols,
            rows,
        })
    }

    /// The panel cell holding world point `p`, if it is on the map.
    fn cell(&self, p: Point) -> Option<(u16, u16)> {
        let c = (p.x / self.sx).floor();
        let r = (p.y / self.sy).floor();
        (c >= 0.0 && r >= 0.0 && c < f64::from(self.cols) && r < f64::from(self.rows))
            .then(|| (self.x0 + c as u16, self.y0 + r as u16))
    }
}

/// Draws the map of `app`'s world into `area` of `buf`.
pub(super) fn draw(app: &App, buf: &mut Buffer, area: Rect, theme: Theme) {
    let world = &app.world;
    let Some(scale) = Scale::fit(world.width_m(), world.height_m(), area) else {
        return;
    };
    let put = |buf: &mut Buffer, p: Point, symbol: &str, color: Option<Color>, bold: bool| {
        if let Some(pos) = scale.cell(p)
            && let Some(cell) = buf.cell_mut(pos)
        {
            cell.set_symbol(symbol);
            let mut style = color.map_or_else(ratatui::style::Style::default, |c| theme.fg(c));
            if bold {
                style = style.add_modifier(Modifier::BOLD);
            }
            cell.set_style(style);
        }
    };
    // Walls: a map cell is a wall when any grid cell under it is one.
    let res = world.resolution;
    for row in 0..scale.rows {
        for col in 0..scale.cols {
            let (x0, y0) = (f64::from(col) * scale.sx, f64::from(row) * scale.sy);
            let c0 = (x0 / res).floor() as usize;
            let c1 = (((x0 + scale.sx) / res).ceil() as usize).clamp(c0 + 1, world.width);
            let r0 = (y0 / res).floor() as usize;
            let r1 = (((y0 + scale.sy) / res).ceil() as usize).clamp(r0 + 1, world.height);
            let wall = (r0..r1).any(|r| (c0..c1).any(|c| world.walls[r * world.width + c]));
            if wall && let Some(cell) = buf.cell_mut((scale.x0 + col, scale.y0 + row)) {
                cell.set_symbol("█");
                cell.set_style(theme.dim());
            }
        }
    }
    // Zone names, top-left inside each zone, as far as they fit.
    for zone in &world.zones {
        // One column and one row in, clear of the wall the rectangle starts on.
        let start = Point::new(zone.rect.x0 + scale.sx, zone.rect.y0 + scale.sy);
        let room = ((zone.rect.x1 - zone.rect.x0) / scale.sx - 2.0).max(0.0) as usize;
        let label: String = zone.name.replace('_', " ").chars().take(room).collect();
        if let Some((x, y)) = scale.cell(start) {
            buf.set_stringn(
                x,
                y,
                &label,
                room,
                theme.dim().add_modifier(Modifier::ITALIC),
            );
        }
    }
    for name in &app.snap.blocked_passages {
        if let Some(p) = world.passage(name) {
            put(buf, p.rect.center(), "X", Some(Color::Red), true);
        }
    }
    put(buf, world.dock_pose.point(), "D", Some(Color::Green), true);
    if app.prompt_open()
        && let Some(Ok(f)) = app
            .selected_approval()
            .and_then(|a| app.forecasts.get(&a.approval_id))
    {
        trace(&f.path, scale.sx / 2.0, |p| {
            put(buf, p, "∘", Some(Color::Yellow), false);
        });
    }
    trace(&app.snap.robot.path, scale.sx / 2.0, |p| {
        put(buf, p, "·", Some(Color::Cyan), true);
    });
    for (i, (id, _)) in app.devices.iter().enumerate() {
        // Devices have no position on the wire yet: list them along the bottom edge.
        let glyph: String = id.chars().take(1).collect();
        if let Some(cell) = buf.cell_mut((scale.x0 + 1 + i as u16 * 2, scale.y0 + scale.rows - 1)) {
            cell.set_symbol(&glyph);
            cell.set_style(theme.fg(Color::Magenta));
        }
    }
    for incident in &app.snap.incidents {
        if let Some(z) = world.zone(&incident.zone)
            && let Some((x, y)) = scale.cell(z.rect.center())
        {
            let label = format!("!{}", incident.kind);
            let x = x.saturating_sub(label.len() as u16 / 2).max(scale.x0);
            let room = usize::from(scale.x0 + scale.cols - x);
            buf.set_stringn(x, y, &label, room, theme.bad());
        }
    }
    let pose = app.snap.robot.pose;
    put(
        buf,
        pose.point(),
        arrow(pose.theta),
        Some(Color::Cyan),
        true,
    );
}

/// Calls `visit` at points every `step` metres along a polyline.
fn trace(points: &[Point], step: f64, mut visit: impl FnMut(Point)) {
    for pair in points.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let n = (a.distance(b) / step.max(1e-3)).ceil().max(1.0) as usize;
        for i in 0..=n {
            let t = i as f64 / n as f64;
            visit(Point::new(a.x + (b.x - a.x) * t, a.y + (b.y - a.y) * t));
        }
    }
}

/// An arrow for heading `theta` (0 east; y grows south, so π/2 is south).
fn arrow(theta: f64) -> &'static str {
    const ARROWS: [&str; 8] = ["→", "↘", "↓", "↙", "←", "↖", "↑", "↗"];
    let octant = (theta.rem_euclid(2.0 * PI) / (PI / 4.0)).round() as usize % 8;
    ARROWS[octant]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrows_follow_the_heading_with_y_pointing_south() {
        assert_eq!(arrow(0.0), "→");
        assert_eq!(arrow(PI / 2.0), "↓");
        assert_eq!(arrow(-PI / 2.0), "↑");
        assert_eq!(arrow(PI), "←");
        assert_eq!(arrow(7.0 * PI / 4.0 + 0.1), "↗");
    }

    #[test]
    fn the_map_fits_any_panel_keeping_its_aspect() {
        let s = Scale::fit(16.0, 9.0, Rect::new(0, 0, 40, 10)).unwrap();
        assert!(s.cols <= 40 && s.rows <= 10);
        assert_eq!(s.cell(Point::new(0.0, 0.0)), Some((s.x0, s.y0)));
        assert_eq!(s.cell(Point::new(-1.0, 0.0)), None);
        assert!(Scale::fit(16.0, 9.0, Rect::new(0, 0, 3, 1)).is_none());
    }
}
