//! Cameras. [`SimCamera`] draws what the simulated robot would see: a
//! top-down view of the apartment around it (walls, floor, the zone it is
//! in) with the incidents of that zone drawn in — smoke as grey puffs, fire
//! as flames, a person as a figure, an open door as a gap with a leaf — and
//! returns the labels of what it drew, so a stand-in vision step can report
//! the truth and a test can check a model against it.

use std::io::Cursor;

use thiserror::Error;

use crate::geometry::Point;
use crate::link::Telemetry;
use crate::world::World;

/// One captured image.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// The image, PNG-encoded; `None` when the camera was only glanced at
    /// ([`Camera::glance`]: nobody was going to look at the picture).
    pub png: Option<Vec<u8>>,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// What is in the picture, when the camera knows (the simulator does;
    /// a real camera does not).
    pub labels: Option<Vec<String>>,
    /// Zone the robot was in.
    pub zone: Option<String>,
}

/// Why no frame could be captured.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CameraError {
    /// The camera reports a fault (a simulated one, or the device stopped answering).
    #[error("the camera is not working: {0}")]
    Fault(String),
    /// The device is missing.
    #[error("no camera at {0}")]
    NoDevice(String),
    /// The image could not be encoded.
    #[error("cannot encode the image: {0}")]
    Encode(String),
}

/// Something that captures frames.
pub trait Camera: Send {
    /// Captures one frame of what the robot sees now.
    fn capture(&mut self, world: &World, telemetry: &Telemetry) -> Result<Frame, CameraError>;

    /// What is in view now without the picture, when the camera can tell
    /// without taking one (the simulator knows what it would draw); `None`
    /// when only a picture tells (a real camera). For a look whose picture
    /// nobody will see: no vision model, no frames kept.
    fn glance(
        &mut self,
        _world: &World,
        _telemetry: &Telemetry,
    ) -> Option<Result<Frame, CameraError>> {
        None
    }

    /// Something the last capture should be reported with (a real camera
    /// that failed and was stood in for).
    fn note(&self) -> Option<String> {
        None
    }
}

/// Pixels per metre of the rendered view.
const PX_PER_M: f64 = 40.0;
/// Side of the square view, in metres, centred on the robot.
const VIEW_M: f64 = 6.0;
/// Side of the square view, in pixels.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
const VIEW_PX: u32 = (VIEW_M * PX_PER_M) as u32;

type Rgb = [u8; 3];
const WALL: Rgb = [60, 60, 66];
const FLOOR: Rgb = [232, 228, 218];
const ZONE: Rgb = [214, 226, 240];
const OUTSIDE: Rgb = [150, 190, 140];
const ROBOT: Rgb = [30, 90, 200];
const SMOKE: Rgb = [120, 120, 120];
const FIRE: Rgb = [235, 80, 20];
const FLAME: Rgb = [250, 200, 40];
const PERSON: Rgb = [40, 40, 160];
const DOOR: Rgb = [150, 100, 50];
const OTHER: Rgb = [200, 0, 160];

/// The simulated camera.
#[derive(Debug, Clone, Default)]
pub struct SimCamera;

impl Camera for SimCamera {
    fn capture(&mut self, world: &World, telemetry: &Telemetry) -> Result<Frame, CameraError> {
        let mut frame = sim_glance(telemetry)?;
        let mut image = render_background(world, telemetry);
        for incident in &telemetry.incidents_in_view {
            if let Some(zone) = world.zone(&incident.zone) {
                let centre = zone.rect.center();
                image.draw_incident(&incident.kind, image.to_px(centre));
            }
        }
        image.disc(image.to_px(telemetry.pose.point()), 6.0, ROBOT);
        frame.png = Some(image.encode()?);
        Ok(frame)
    }

    fn glance(
        &mut self,
        _world: &World,
        telemetry: &Telemetry,
    ) -> Option<Result<Frame, CameraError>> {
        Some(sim_glance(telemetry))
    }
}

/// What the simulated camera would draw, without drawing it: the labels of
/// the incidents in view, once each, in the order they are drawn.
fn sim_glance(telemetry: &Telemetry) -> Result<Frame, CameraError> {
    if let Some(fault) = &telemetry.camera_fault {
        return Err(CameraError::Fault(fault.clone()));
    }
    let mut labels = Vec::new();
    for incident in &telemetry.incidents_in_view {
        if !labels.contains(&incident.kind) {
            labels.push(incident.kind.clone());
        }
    }
    Ok(Frame {
        png: None,
        width: VIEW_PX,
        height: VIEW_PX,
        labels: Some(labels),
        zone: telemetry.zone.clone(),
    })
}

/// A square RGB image of the view around the robot.
struct View {
    side: u32,
    origin: Point,
    pixels: Vec<u8>,
}

fn render_background(world: &World, t: &Telemetry) -> View {
    let side = VIEW_PX;
    let centre = t.pose.point();
    let origin = Point::new(centre.x - VIEW_M / 2.0, centre.y - VIEW_M / 2.0);
    let mut view = View {
        side,
        origin,
        pixels: vec![0; (side * side * 3) as usize],
    };
    // A map cell spans many pixels: colour each cell in view once, then
    // paint pixels by the cell they fall in.
    #[allow(clippy::cast_possible_truncation)]
    let cell = |v: f64| (v / world.resolution).floor() as i64;
    let columns: Vec<i64> = (0..side).map(|px| cell(view.to_world(px, 0).x)).collect();
    let rows: Vec<i64> = (0..side).map(|py| cell(view.to_world(0, py).y)).collect();
    let (c0, r0) = (columns[0], rows[0]);
    let width = usize::try_from(columns[columns.len() - 1] - c0 + 1).unwrap_or(1);
    let height = usize::try_from(rows[rows.len() - 1] - r0 + 1).unwrap_or(1);
    let mut grid = Vec::with_capacity(width * height);
    for r in r0..r0 + height as i64 {
        for c in c0..c0 + width as i64 {
            #[allow(clippy::cast_precision_loss)]
            let p = Point::new(
                (c as f64 + 0.5) * world.resolution,
                (r as f64 + 0.5) * world.resolution,
            );
            grid.push(cell_colour(world, t, p));
        }
    }
    let offsets: Vec<usize> = columns
        .iter()
        .map(|c| usize::try_from(c - c0).unwrap_or(0))
        .collect();
    for (py, r) in (0..side).zip(&rows) {
        let line = usize::try_from(r - r0).unwrap_or(0) * width;
        let start = (py * side * 3) as usize;
        let out = &mut view.pixels[start..start + side as usize * 3];
        for (px, offset) in out.chunks_exact_mut(3).zip(&offsets) {
            px.copy_from_slice(&grid[line + offset]);
        }
    }
    view
}

/// The colour of the map cell whose centre is `p`.
fn cell_colour(world: &World, t: &Telemetry, p: Point) -> Rgb {
    match world.cell_of(p) {
        Some(_) if world.is_free(p) => match world.zone_at(p) {
            Some(z) if z.outside => OUTSIDE,
            Some(z) if Some(&z.name) == t.zone.as_ref() => ZONE,
            _ => FLOOR,
        },
        _ => WALL,
    }
}

impl View {
    fn to_world(&self, px: u32, py: u32) -> Point {
        Point::new(
            self.origin.x + (f64::from(px) + 0.5) / PX_PER_M,
            self.origin.y + (f64::from(py) + 0.5) / PX_PER_M,
        )
    }

    fn to_px(&self, p: Point) -> (f64, f64) {
        (
            (p.x - self.origin.x) * PX_PER_M,
            (p.y - self.origin.y) * PX_PER_M,
        )
    }

    fn set(&mut self, px: u32, py: u32, colour: Rgb) {
        if px < self.side && py < self.side {
            let i = ((py * self.side + px) * 3) as usize;
            self.pixels[i..i + 3].copy_from_slice(&colour);
        }
    }

    /// Fills the pixels whose centre `inside` accepts, within `r` of `(cx, cy)`.
    fn fill(
        &mut self,
        (cx, cy): (f64, f64),
        r: f64,
        colour: Rgb,
        inside: impl Fn(f64, f64) -> bool,
    ) {
        let side = f64::from(self.side);
        let (x0, x1) = ((cx - r).floor().max(0.0), (cx + r).ceil().min(side - 1.0));
        let (y0, y1) = ((cy - r).floor().max(0.0), (cy + r).ceil().min(side - 1.0));
        if x0 > x1 || y0 > y1 {
            return;
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        for py in (y0 as u32)..=(y1 as u32) {
            for px in (x0 as u32)..=(x1 as u32) {
                let (dx, dy) = (f64::from(px) + 0.5 - cx, f64::from(py) + 0.5 - cy);
                if inside(dx, dy) {
                    self.set(px, py, colour);
                }
            }
        }
    }

    fn disc(&mut self, c: (f64, f64), r: f64, colour: Rgb) {
        self.fill(c, r, colour, |dx, dy| dx * dx + dy * dy <= r * r);
    }

    fn draw_incident(&mut self, kind: &str, (x, y): (f64, f64)) {
        match kind {
            "smoke" => {
                for (dx, dy, r) in [
                    (-14.0, 4.0, 12.0),
                    (0.0, -6.0, 15.0),
                    (14.0, 3.0, 11.0),
                    (2.0, 10.0, 10.0),
                ] {
                    self.disc((x + dx, y + dy), r, SMOKE);
                }
            }
            "fire" => {
                self.fill((x, y), 22.0, FIRE, |dx, dy| {
                    dy > -22.0 && dx.abs() <= (dy + 22.0) * 0.45
                });
                self.fill((x, y + 6.0), 12.0, FLAME, |dx, dy| {
                    dy > -12.0 && dx.abs() <= (dy + 12.0) * 0.4
                });
            }
            "person" => {
                self.disc((x, y - 16.0), 7.0, PERSON);
                self.fill((x, y + 6.0), 14.0, PERSON, |dx, dy| {
                    dx.abs() <= 8.0 && dy.abs() <= 14.0
                });
            }
            "open_door" | "door_open" => {
                self.fill((x, y), 20.0, DOOR, |dx, dy| {
                    dx.abs() <= 4.0 && dy.abs() <= 20.0
                });
                self.fill((x + 12.0, y - 8.0), 14.0, DOOR, |dx, dy| {
                    (dy + dx * 0.6).abs() <= 2.5 && dx.abs() <= 12.0
                });
            }
            _ => self.fill((x, y), 10.0, OTHER, |dx, dy| {
                dx.abs() <= 10.0 && dy.abs() <= 10.0
            }),
        }
    }

    fn encode(&self) -> Result<Vec<u8>, CameraError> {
        encode_rgb(self.side, self.side, &self.pixels)
    }
}

/// An RGB image (3 bytes a pixel, rows top down) as PNG.
pub(crate) fn encode_rgb(width: u32, height: u32, pixels: &[u8]) -> Result<Vec<u8>, CameraError> {
    let mut out = Cursor::new(Vec::new());
    {
        let mut encoder = png::Encoder::new(&mut out, width, height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::Fast);
        let mut writer = encoder
            .write_header()
            .map_err(|e| CameraError::Encode(e.to_string()))?;
        writer
            .write_image_data(pixels)
            .map_err(|e| CameraError::Encode(e.to_string()))?;
    }
    Ok(out.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::Incident;

    fn in_kitchen(world: &World) -> Telemetry {
        let kitchen = world.zone("kitchen").unwrap();
        let mut t = Telemetry {
            zone: Some("kitchen".into()),
            ..Telemetry::default()
        };
        t.pose.x = kitchen.goal.x;
        t.pose.y = kitchen.goal.y;
        t
    }

    fn decode(png_bytes: Option<&Vec<u8>>) -> (png::OutputInfo, Vec<u8>) {
        let decoder = png::Decoder::new(Cursor::new(png_bytes.expect("a picture")));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        buf.truncate(info.buffer_size());
        (info, buf)
    }

    fn count(pixels: &[u8], colour: Rgb) -> usize {
        pixels.chunks(3).filter(|p| *p == colour).count()
    }

    #[test]
    fn smoke_in_view_is_drawn_and_labelled() {
        let world = World::builtin("apartment").unwrap();
        let mut t = in_kitchen(&world);
        let clear = SimCamera.capture(&world, &t).unwrap();
        assert_eq!(clear.labels, Some(Vec::new()));
        let (info, pixels) = decode(clear.png.as_ref());
        assert_eq!((info.width, info.height), (240, 240));
        assert_eq!(count(&pixels, SMOKE), 0);
        assert!(count(&pixels, WALL) > 0, "walls are in view");
        t.incidents_in_view.push(Incident {
            zone: "kitchen".into(),
            kind: "smoke".into(),
        });
        let smoky = SimCamera.capture(&world, &t).unwrap();
        assert_eq!(smoky.labels, Some(vec!["smoke".to_string()]));
        let (_, pixels) = decode(smoky.png.as_ref());
        assert!(count(&pixels, SMOKE) > 500, "the smoke is drawn");
        // A glance says the same without the picture.
        let glanced = SimCamera.glance(&world, &t).unwrap().unwrap();
        assert_eq!(glanced, Frame { png: None, ..smoky });
    }

    #[test]
    fn a_camera_fault_is_an_error() {
        let world = World::builtin("apartment").unwrap();
        let mut t = in_kitchen(&world);
        t.camera_fault = Some("lens covered".into());
        assert_eq!(
            SimCamera.capture(&world, &t).unwrap_err().to_string(),
            "the camera is not working: lens covered"
        );
        assert_eq!(
            SimCamera.glance(&world, &t).unwrap(),
            SimCamera.capture(&world, &t)
        );
    }
}
