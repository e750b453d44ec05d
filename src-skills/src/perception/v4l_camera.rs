//! A real camera through Video4Linux (feature `camera`): one YUYV frame per
//! capture, converted to RGB and PNG. A missing device is a specific error
//! (`no camera at /dev/video0: …`); [`Fallback`] then gives the simulated
//! view, saying so, so a patrol carries on.

use std::path::{Path, PathBuf};

use v4l::buffer::Type;
use v4l::io::mmap::Stream;
use v4l::io::traits::CaptureStream;
use v4l::video::Capture;
use v4l::{Device, FourCC};

use super::camera::encode_rgb;
use super::{Camera, CameraError, Frame};
use crate::link::Telemetry;
use crate::world::World;

/// The camera at a device path (`VIDEO_DEV`, default `/dev/video0`).
#[derive(Debug, Clone)]
pub struct V4lCamera {
    path: PathBuf,
}

impl V4lCamera {
    /// The camera at `path`.
    pub fn new(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
        }
    }
}

impl Camera for V4lCamera {
    fn capture(&mut self, _world: &World, telemetry: &Telemetry) -> Result<Frame, CameraError> {
        let at = self.path.display().to_string();
        let device = Device::with_path(&self.path)
            .map_err(|e| CameraError::NoDevice(format!("{at}: {e}")))?;
        let fault =
            |what: &str, e: std::io::Error| CameraError::Fault(format!("{at}: {what}: {e}"));
        let mut format = device
            .format()
            .map_err(|e| fault("reading the format", e))?;
        format.fourcc = FourCC::new(b"YUYV");
        let format = device
            .set_format(&format)
            .map_err(|e| fault("setting YUYV", e))?;
        if format.fourcc != FourCC::new(b"YUYV") {
            return Err(CameraError::Fault(format!(
                "{at}: the camera gives {} frames, not YUYV",
                format.fourcc
            )));
        }
        let mut stream = Stream::with_buffers(&device, Type::VideoCapture, 2)
            .map_err(|e| fault("starting the stream", e))?;
        let (data, _) = stream.next().map_err(|e| fault("reading a frame", e))?;
        let rgb = yuyv_to_rgb(data, format.width, format.height)?;
        Ok(Frame {
            png: Some(encode_rgb(format.width, format.height, &rgb)?),
            width: format.width,
            height: format.height,
            labels: None,
            zone: telemetry.zone.clone(),
        })
    }
}

/// A real camera with the simulated one behind it: when the real one fails
/// the frame comes from the simulator and the error is kept for the report.
pub struct Fallback {
    real: V4lCamera,
    sim: super::SimCamera,
    /// The last failure of the real camera.
    pub last_error: Option<CameraError>,
}

impl Fallback {
    /// `real`, falling back to the simulated camera.
    pub fn new(real: V4lCamera) -> Self {
        Self {
            real,
            sim: super::SimCamera,
            last_error: None,
        }
    }
}

impl Camera for Fallback {
    fn capture(&mut self, world: &World, telemetry: &Telemetry) -> Result<Frame, CameraError> {
        match self.real.capture(world, telemetry) {
            Ok(frame) => {
                self.last_error = None;
                Ok(frame)
            }
            Err(e) => {
                self.last_error = Some(e);
                self.sim.capture(world, telemetry)
            }
        }
    }

    fn note(&self) -> Option<String> {
        self.last_error
            .as_ref()
            .map(|e| format!("{e}; the simulated view was used"))
    }
}

/// YUYV (4:2:2, two pixels in four bytes) to RGB, BT.601.
pub fn yuyv_to_rgb(data: &[u8], width: u32, height: u32) -> Result<Vec<u8>, CameraError> {
    let pixels = width as usize * height as usize;
    if data.len() < pixels * 2 {
        return Err(CameraError::Fault(format!(
            "a {width}×{height} YUYV frame needs {} bytes, got {}",
            pixels * 2,
            data.len()
        )));
    }
    let mut rgb = Vec::with_capacity(pixels * 3);
    for quad in data[..pixels * 2].chunks_exact(4) {
        let (u, v) = (f32::from(quad[1]) - 128.0, f32::from(quad[3]) - 128.0);
        for y in [quad[0], quad[2]] {
            let y = f32::from(y);
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let clamp = |c: f32| c.round().clamp(0.0, 255.0) as u8;
            rgb.extend([
                clamp(y + 1.402 * v),
                clamp(y - 0.344 * u - 0.714 * v),
                clamp(y + 1.772 * u),
            ]);
        }
    }
    Ok(rgb)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yuyv_greys_and_colours_convert() {
        // Two grey pixels, then a red-ish and a blue-ish pair.
        let rgb = yuyv_to_rgb(&[128, 128, 200, 128, 81, 90, 81, 240], 4, 1).unwrap();
        assert_eq!(&rgb[..6], &[128, 128, 128, 200, 200, 200]);
        assert!(rgb[6] > 200 && rgb[8] < 60, "red: {:?}", &rgb[6..9]);
        assert!(yuyv_to_rgb(&[0; 3], 2, 1).is_err());
    }

    /// No camera on this machine: a specific error, and the fallback gives
    /// the simulated view and says why.
    #[test]
    fn a_missing_camera_is_named_and_the_simulated_view_stands_in() {
        let world = World::builtin("apartment").unwrap();
        let t = Telemetry {
            zone: Some("kitchen".into()),
            ..Telemetry::default()
        };
        let missing = Path::new("/dev/video-robobrain-test");
        let e = V4lCamera::new(missing).capture(&world, &t).unwrap_err();
        assert!(
            matches!(&e, CameraError::NoDevice(m) if m.starts_with("/dev/video-robobrain-test")),
            "{e}"
        );
        let mut camera = Fallback::new(V4lCamera::new(missing));
        let frame = camera.capture(&world, &t).unwrap();
        assert!(frame.png.unwrap().starts_with(b"\x89PNG"));
        assert!(
            camera
                .note()
                .unwrap()
                .contains("no camera at /dev/video-robobrain-test")
        );
    }

    /// A real camera (`VIDEO_DEV`, default `/dev/video0`) gives a frame:
    /// hardware this machine and CI lack, so the skip is recorded and
    /// `./x test` reports it.
    #[test]
    fn a_real_camera_gives_a_frame() {
        let dev = std::env::var_os("VIDEO_DEV")
            .map_or_else(|| PathBuf::from("/dev/video0"), PathBuf::from);
        if !dev.exists() {
            crate::testing::skip(&format!("no camera at {}", dev.display()));
            return;
        }
        let world = World::builtin("apartment").unwrap();
        let frame = V4lCamera::new(&dev)
            .capture(&world, &Telemetry::default())
            .unwrap();
        assert!(frame.png.unwrap().starts_with(b"\x89PNG"));
        assert!(frame.width > 0 && frame.height > 0);
        assert_eq!(
            frame.labels, None,
            "a real camera does not know what it sees"
        );
    }
}
