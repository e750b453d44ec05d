//! Runs as MCAP files, for Foxglove (docs/foxglove.md): every event of a
//! run, and Foxglove's views of them, in one file a person opens and plays
//! back.
//!
//! - `/events/<kind>`: every event, one message each, its wire JSON — the
//!   same as its line in the JSONL log — under a JSON Schema of that kind
//!   (`robobrain.Decision`, …). The MCAP holds the whole log.
//! - `/robot/pose` (`foxglove.PoseInFrame`) and `/robot/battery`
//!   (`robobrain.Battery`): one each per telemetry event.
//! - `/log` (`foxglove.Log`): the `log`, `error` and `decision` events as
//!   lines for Foxglove's Log panel.
//! - `/map` (`foxglove.SceneUpdate`): the map, once, at the first event.
//! - `/camera/evidence` (`foxglove.CompressedImage`): the frames `watch`
//!   kept as evidence of an alert, read from the file the alert names. The
//!   frames `watch` looks at otherwise are not kept, nor in the event
//!   stream, so they are not in the recording.
//!
//! Messages are JSON; each one's log and publish time is its event's sim
//! time (nanoseconds from the run's start) and its sequence number the
//! event's `seq`. A `robobrain` metadata record names the thread.
//!
//! [`McapLog`] writes a recording as a run goes (the session builder gives
//! a run one beside its JSONL log); [`record`] converts the events of a
//! JSONL log that exists (`robobrain export mcap`). The JSONL log stays the
//! record: a run killed before it closes its MCAP file leaves the file
//! without its index, and `export mcap` rebuilds it from the log.
//!
//! - `schemas.rs`: the channels and their JSON Schemas.
//! - `views.rs`: events as Foxglove messages (pure).
//! - `scene.rs`: the map as a `foxglove.SceneUpdate` (pure).

mod scene;
pub mod schemas;
pub mod views;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use ::mcap::records::{MessageHeader, Metadata};
use ::mcap::{WriteOptions, Writer};
use serde_json::Value;
use thiserror::Error;

pub use scene::scene;
pub use schemas::View;

use crate::mapview::MapView;
use crate::protocol::{Event, EventKind};

/// Why a recording could not be written, or a log not converted.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum McapError {
    /// The file could not be created or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The MCAP file.
        path: PathBuf,
        /// The IO error.
        source: io::Error,
    },
    /// The MCAP writer refused.
    #[error("{}: {source}", path.display())]
    Mcap {
        /// The MCAP file.
        path: PathBuf,
        /// What the writer said.
        source: ::mcap::McapError,
    },
    /// An event of a kind with no channel (robobrain.json lacks the kind).
    #[error("{}: no channel for events of kind `{kind}`", path.display())]
    NoChannel {
        /// The MCAP file.
        path: PathBuf,
        /// The kind.
        kind: String,
    },
}

/// What a finished recording holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recorded {
    /// Events recorded (one message each on `/events/<kind>`).
    pub events: u64,
    /// Messages in all, views included.
    pub messages: u64,
    /// Messages per topic, every channel listed.
    pub per_topic: BTreeMap<String, u64>,
    /// Evidence frames an alert named that could not be read (not recorded).
    pub missing_frames: Vec<String>,
}

/// The ids of a recording's channels.
struct Channels {
    events: HashMap<String, u16>,
    views: HashMap<&'static str, u16>,
    topics: BTreeMap<u16, String>,
}

/// A recording being written: see the module's doc.
pub struct McapLog {
    writer: Writer<BufWriter<File>>,
    channels: Channels,
    path: PathBuf,
    /// The map, until the first event writes it.
    map: Option<MapView>,
    started: bool,
    frames: HashSet<String>,
    recorded: Recorded,
    /// Reused for each message's JSON.
    buf: Vec<u8>,
}

impl McapLog {
    /// Creates (or truncates) the file, and its folder if needed, with
    /// every channel; `map`, when given, is written with the first event.
    pub fn create(path: &Path, map: Option<MapView>) -> Result<Self, McapError> {
        let io_err = |source| McapError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io_err)?;
        }
        let file = File::create(path).map_err(io_err)?;
        let mcap_err = |source| McapError::Mcap {
            path: path.to_path_buf(),
            source,
        };
        // One thread: the compression runs where the events are written,
        // beside the kernel, not on workers of its own.
        let options = WriteOptions::new()
            .profile("")
            .library(concat!("robobrain ", env!("CARGO_PKG_VERSION")))
            .compression_threads(0);
        let mut writer = options.create(BufWriter::new(file)).map_err(mcap_err)?;
        let channels = add_channels(&mut writer).map_err(mcap_err)?;
        let per_topic = channels.topics.values().map(|t| (t.clone(), 0)).collect();
        Ok(Self {
            writer,
            channels,
            path: path.to_path_buf(),
            map,
            started: false,
            frames: HashSet::new(),
            recorded: Recorded {
                per_topic,
                ..Recorded::default()
            },
            buf: Vec::with_capacity(1024),
        })
    }

    /// The file it writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Events recorded so far.
    pub fn written(&self) -> u64 {
        self.recorded.events
    }

    /// Records a batch of events and their views.
    pub fn write_batch(&mut self, events: &[Event]) -> Result<(), McapError> {
        for event in events {
            self.write_event(event)?;
        }
        Ok(())
    }

    fn write_event(&mut self, event: &Event) -> Result<(), McapError> {
        if !self.started {
            self.started = true;
            self.start(event)?;
        }
        let Some(&channel) = self.channels.events.get(event.kind.name()) else {
            return Err(McapError::NoChannel {
                path: self.path.clone(),
                kind: event.kind.name().to_string(),
            });
        };
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, event).map_err(|e| self.io_error(e.into()))?;
        self.put(channel, event)?;
        self.recorded.events += 1;
        if let EventKind::Telemetry {
            pose,
            battery_pct,
            charging,
            ..
        } = &event.kind
        {
            self.put_view(View::Pose, event, &views::pose_in_frame(event.time, *pose))?;
            self.put_view(
                View::Battery,
                event,
                &views::battery(event.time, *battery_pct, *charging),
            )?;
        } else {
            if let Some(line) = views::log_line(event) {
                self.put_view(View::Log, event, &line)?;
            }
            if let Some(frame) = views::evidence(event) {
                self.put_frame(event, frame)?;
            }
        }
        Ok(())
    }

    /// The first event: the metadata, and the map at its time.
    fn start(&mut self, first: &Event) -> Result<(), McapError> {
        let mut metadata = BTreeMap::from([
            ("thread_id".to_string(), first.thread_id.clone()),
            (
                "robobrain".to_string(),
                env!("CARGO_PKG_VERSION").to_string(),
            ),
            (
                "time".to_string(),
                "log_time is the event's sim time, nanoseconds from the run's start".to_string(),
            ),
            ("first_wall_ms".to_string(), first.wall_ms.to_string()),
        ]);
        if let Some(map) = &self.map {
            metadata.insert("world".to_string(), map.name.clone());
        }
        self.writer
            .write_metadata(&Metadata {
                name: "robobrain".into(),
                metadata,
            })
            .map_err(|e| self.mcap_error(e))?;
        if let Some(map) = self.map.take() {
            self.put_view(View::Map, first, &scene::scene(&map, first.time))?;
        }
        Ok(())
    }

    /// Records the PNG an alert names, once, when the file can be read.
    fn put_frame(&mut self, event: &Event, frame: &str) -> Result<(), McapError> {
        if !self.frames.insert(frame.to_string()) {
            return Ok(());
        }
        if let Ok(png) = std::fs::read(frame) {
            self.put_view(View::Camera, event, &views::png_image(event.time, &png))
        } else {
            self.recorded.missing_frames.push(frame.to_string());
            Ok(())
        }
    }

    fn put_view(&mut self, view: View, event: &Event, message: &Value) -> Result<(), McapError> {
        let channel = self.channels.views[view.topic()];
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, message).map_err(|e| self.io_error(e.into()))?;
        self.put(channel, event)
    }

    /// Writes `self.buf` on `channel` at `event`'s time.
    fn put(&mut self, channel: u16, event: &Event) -> Result<(), McapError> {
        let time = views::nanos(event.time);
        let header = MessageHeader {
            channel_id: channel,
            sequence: event.seq as u32,
            log_time: time,
            publish_time: time,
        };
        if let Err(e) = self.writer.write_to_known_channel(&header, &self.buf) {
            return Err(self.mcap_error(e));
        }
        self.recorded.messages += 1;
        if let Some(count) = self
            .channels
            .topics
            .get(&channel)
            .and_then(|t| self.recorded.per_topic.get_mut(t))
        {
            *count += 1;
        }
        Ok(())
    }

    fn io_error(&self, source: io::Error) -> McapError {
        McapError::Io {
            path: self.path.clone(),
            source,
        }
    }

    fn mcap_error(&self, source: ::mcap::McapError) -> McapError {
        McapError::Mcap {
            path: self.path.clone(),
            source,
        }
    }

    /// Writes the index and the summary, flushes, and says what the file holds.
    pub fn finish(mut self) -> Result<Recorded, McapError> {
        if let Err(e) = self.writer.finish() {
            return Err(self.mcap_error(e));
        }
        let recorded = std::mem::take(&mut self.recorded);
        let path = self.path.clone();
        let mut out = self.writer.into_inner();
        out.flush()
            .and_then(|()| out.get_ref().sync_data())
            .map_err(|source| McapError::Io { path, source })?;
        Ok(recorded)
    }
}

/// Adds the schemas and channels: every kind of event, then the views.
fn add_channels(writer: &mut Writer<BufWriter<File>>) -> Result<Channels, ::mcap::McapError> {
    let none = BTreeMap::new();
    let mut channels = Channels {
        events: HashMap::new(),
        views: HashMap::new(),
        topics: BTreeMap::new(),
    };
    for c in schemas::event_channels() {
        let schema =
            writer.add_schema(&c.schema_name, schemas::JSON_SCHEMA, c.schema.as_bytes())?;
        let id = writer.add_channel(schema, &c.topic, schemas::JSON, &none)?;
        channels.events.insert(c.kind, id);
        channels.topics.insert(id, c.topic);
    }
    for view in View::ALL {
        let (name, text) = view.schema();
        let schema = writer.add_schema(&name, schemas::JSON_SCHEMA, text.as_bytes())?;
        let id = writer.add_channel(schema, view.topic(), schemas::JSON, &none)?;
        channels.views.insert(view.topic(), id);
        channels.topics.insert(id, view.topic().to_string());
    }
    Ok(channels)
}

/// Records the events of a finished run (a JSONL log read back) as the
/// MCAP file `out`, with `map` (the world's, when known) on `/map`.
pub fn record(events: &[Event], out: &Path, map: Option<MapView>) -> Result<Recorded, McapError> {
    let mut recording = McapLog::create(out, map)?;
    recording.write_batch(events)?;
    recording.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario;
    use serde_json::json;
    use std::borrow::Cow;

    /// The events of a shipped scenario, run with its frames kept in `dir`.
    fn scenario_events(file: &str, dir: &Path) -> (Vec<Event>, MapView) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut s = scenario::load(&root.join(file)).unwrap();
        s.config.runs_dir = dir.to_path_buf();
        let map = MapView::of(&scenario::world_of(&s).unwrap());
        let engine = scenario::prepare(&s).unwrap();
        let mut events = Vec::new();
        let result = scenario::run(&s, engine, &mut |_, evs| events.extend_from_slice(evs));
        assert!(result.passed, "{file}: {}", result.report);
        (events, map)
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rb-mcap-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Every message of a file: topic, schema name, sequence, log time, data.
    fn messages(bytes: &[u8]) -> Vec<(String, String, u32, u64, Vec<u8>)> {
        ::mcap::MessageStream::new(bytes)
            .unwrap()
            .map(|m| {
                let m = m.unwrap();
                let schema = m.channel.schema.as_ref().map(|s| s.name.clone()).unwrap();
                let data: Cow<'_, [u8]> = m.data;
                (
                    m.channel.topic.clone(),
                    schema,
                    m.sequence,
                    m.log_time,
                    data.into_owned(),
                )
            })
            .collect()
    }

    /// The demo, a home scenario and an approval: every event is on its
    /// channel with the bytes of its JSONL line and valid against the
    /// channel's schema; the views are there, one per event they come from.
    #[test]
    fn every_event_is_recorded_as_logged_and_valid_against_its_schema() {
        let dir = temp("scenarios");
        let channels: HashMap<String, schemas::EventChannel> = schemas::event_channels()
            .into_iter()
            .map(|c| (c.kind.clone(), c))
            .collect();
        let mut kinds_seen = HashSet::new();
        for file in [
            "assets/scenarios/demo.toml",
            "tests/scenarios/h01_light_on_zh.toml",
            "tests/scenarios/05a_approval_approve.toml",
        ] {
            let (events, map) = scenario_events(file, &dir);
            let out = dir.join("run.mcap");
            let mut log = McapLog::create(&out, Some(map)).unwrap();
            // Batches of any size record the same.
            for chunk in events.chunks(7) {
                log.write_batch(chunk).unwrap();
            }
            let recorded = log.finish().unwrap();
            let bytes = std::fs::read(&out).unwrap();
            let got = messages(&bytes);
            let on_events: Vec<_> = got
                .iter()
                .filter(|m| m.0.starts_with(schemas::EVENTS_PREFIX))
                .collect();
            assert_eq!(on_events.len(), events.len(), "{file}");
            assert_eq!(recorded.events, events.len() as u64);
            assert_eq!(recorded.messages, got.len() as u64);
            for (event, (topic, schema_name, seq, time, data)) in events.iter().zip(&on_events) {
                let kind = event.kind.name();
                kinds_seen.insert(kind);
                let channel = &channels[kind];
                assert_eq!(topic, &channel.topic);
                assert_eq!(schema_name, &channel.schema_name);
                assert_eq!(u64::from(*seq), event.seq);
                assert_eq!(*time, views::nanos(event.time));
                assert_eq!(
                    data,
                    &serde_json::to_vec(event).unwrap(),
                    "{file}: seq {}",
                    event.seq
                );
                let schema: Value = serde_json::from_str(&channel.schema).unwrap();
                let value: Value = serde_json::from_slice(data).unwrap();
                let errors: Vec<String> = jsonschema::validator_for(&schema)
                    .unwrap()
                    .iter_errors(&value)
                    .map(|e| e.to_string())
                    .collect();
                assert!(errors.is_empty(), "{file}: {kind} {value}: {errors:?}");
            }
            let count = |topic: &str| got.iter().filter(|m| m.0 == topic).count();
            let of_kind = |kinds: &[&str]| {
                events
                    .iter()
                    .filter(|e| kinds.contains(&e.kind.name()))
                    .count()
            };
            assert_eq!(
                count(schemas::POSE_TOPIC),
                of_kind(&["telemetry"]),
                "{file}"
            );
            assert_eq!(
                count(schemas::BATTERY_TOPIC),
                of_kind(&["telemetry"]),
                "{file}"
            );
            assert_eq!(
                count(schemas::LOG_TOPIC),
                of_kind(&["log", "error", "decision"]),
                "{file}"
            );
            assert_eq!(count(schemas::MAP_TOPIC), 1, "{file}");
            let frames = events
                .iter()
                .filter_map(views::evidence)
                .collect::<HashSet<_>>();
            assert_eq!(count(schemas::CAMERA_TOPIC), frames.len(), "{file}");
            assert!(
                recorded.missing_frames.is_empty(),
                "{:?}",
                recorded.missing_frames
            );
            for (topic, n) in &recorded.per_topic {
                assert_eq!(*n as usize, count(topic), "{topic}");
            }
            // The views are valid against their Foxglove schemas.
            for view in View::ALL {
                let (name, text) = view.schema();
                let validator =
                    jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap();
                for m in got.iter().filter(|m| m.0 == view.topic()) {
                    assert_eq!(m.1, name);
                    let value: Value = serde_json::from_slice(&m.4).unwrap();
                    assert!(validator.is_valid(&value), "{name}: {value}");
                }
            }
            if file.contains("demo") {
                assert_eq!(frames.len(), 1, "the demo's smoke alert keeps one frame");
                let png = got.iter().find(|m| m.0 == schemas::CAMERA_TOPIC).unwrap();
                let image: Value = serde_json::from_slice(&png.4).unwrap();
                let data = base64::Engine::decode(
                    &base64::engine::general_purpose::STANDARD,
                    image["data"].as_str().unwrap(),
                )
                .unwrap();
                assert!(data.starts_with(b"\x89PNG"));
            }
        }
        for kind in [
            "snapshot",
            "decision",
            "mode",
            "approval",
            "speech",
            "telemetry",
            "device",
            "alert",
        ] {
            assert!(
                kinds_seen.contains(kind),
                "no {kind} event was checked: {kinds_seen:?}"
            );
        }
    }

    /// The panels of `assets/foxglove/robobrain-layout.json` and the topic
    /// (or message path) each shows.
    fn layout_paths(layout: &Value) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (id, config) in layout["configById"].as_object().unwrap() {
            let panel = id.split('!').next().unwrap().to_string();
            let mut add =
                |path: &Value| out.push((panel.clone(), path.as_str().unwrap().to_string()));
            match panel.as_str() {
                "3D" => config["topics"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .for_each(|t| add(&json!(t))),
                "Image" => add(&config["imageMode"]["imageTopic"]),
                "Plot" | "StateTransitions" => {
                    config["paths"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .for_each(|p| add(&p["value"]));
                }
                "RawMessages" => add(&config["topicPath"]),
                "RosOut" => add(&config["topicToRender"]),
                other => panic!("a panel the test does not know: {other}"),
            }
        }
        out
    }

    fn placed(tree: &Value, out: &mut Vec<String>) {
        if let Value::String(id) = tree {
            out.push(id.clone());
        } else {
            placed(&tree["first"], out);
            placed(&tree["second"], out);
        }
    }

    #[test]
    fn the_foxglove_layout_shows_what_a_recording_has() {
        let layout: Value =
            serde_json::from_str(include_str!("../../assets/foxglove/robobrain-layout.json"))
                .unwrap();
        let mut schemas_by_topic: HashMap<String, Value> = schemas::event_channels()
            .into_iter()
            .map(|c| (c.topic, serde_json::from_str(&c.schema).unwrap()))
            .collect();
        for view in View::ALL {
            schemas_by_topic.insert(
                view.topic().into(),
                serde_json::from_str(&view.schema().1).unwrap(),
            );
        }
        let paths = layout_paths(&layout);
        for (panel, path) in &paths {
            let (topic, fields) = path.split_once('.').unwrap_or((path.as_str(), ""));
            let schema = schemas_by_topic
                .get(topic)
                .unwrap_or_else(|| panic!("{panel} shows {topic}, which no recording has"));
            let mut at = schema;
            for field in fields.split('.').filter(|f| !f.is_empty()) {
                at = &at["properties"][field];
                assert!(
                    at.is_object(),
                    "{panel}: {path}: no field {field} in {topic}'s schema"
                );
            }
        }
        let panels: HashSet<&str> = paths.iter().map(|(p, _)| p.as_str()).collect();
        for want in ["3D", "Plot", "RawMessages", "RosOut", "Image"] {
            assert!(panels.contains(want), "no {want} panel: {panels:?}");
        }
        assert!(paths.contains(&("Plot".into(), "/robot/battery.battery_pct".into())));
        assert!(paths.contains(&("RawMessages".into(), "/events/decision".into())));
        let mut ids = Vec::new();
        placed(&layout["layout"], &mut ids);
        ids.sort();
        let mut configured: Vec<String> = layout["configById"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        configured.sort();
        assert_eq!(
            ids, configured,
            "every panel configured is placed, and only those"
        );
    }

    #[test]
    fn a_missing_evidence_frame_is_named_not_recorded() {
        let dir = temp("missing-frame");
        let (events, map) = scenario_events("assets/scenarios/demo.toml", &dir);
        std::fs::remove_dir_all(dir.join("frames")).unwrap();
        let out = dir.join("run.mcap");
        let mut log = McapLog::create(&out, Some(map)).unwrap();
        log.write_batch(&events).unwrap();
        let recorded = log.finish().unwrap();
        assert_eq!(recorded.per_topic[schemas::CAMERA_TOPIC], 0);
        assert_eq!(recorded.missing_frames.len(), 1, "{recorded:?}");
    }
}
