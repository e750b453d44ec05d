//! The JSONL event log every run writes: one event's wire JSON per line,
//! flushed after each tick's batch so a crash loses at most one tick, and a
//! reader that parses a log back into [`Event`]s for replay.
//!
//! The default file is `<runs_dir>/<thread_id>.jsonl`.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::protocol::Event;

/// Why a log could not be written or read back.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum EventLogError {
    /// The file could not be created, written or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The IO error.
        source: io::Error,
    },
    /// A line is not an event.
    #[error("{}:{line}: expected one event as JSON per line: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Line, from 1.
        line: usize,
        /// What serde said.
        message: String,
    },
}

/// The default log file of a run: `<runs_dir>/<thread_id>.jsonl`.
pub fn default_path(runs_dir: &Path, thread_id: &str) -> PathBuf {
    runs_dir.join(format!("{thread_id}.jsonl"))
}

/// Writes events as JSON lines.
pub struct EventLog<W: Write> {
    out: BufWriter<W>,
    path: PathBuf,
    written: u64,
}

impl EventLog<File> {
    /// Creates (or truncates) the log file, and its folder if needed.
    pub fn create(path: &Path) -> Result<Self, EventLogError> {
        let io_err = |source| EventLogError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io_err)?;
        }
        let file = File::create(path).map_err(io_err)?;
        Ok(Self::new(file, path))
    }
}

impl<W: Write> EventLog<W> {
    /// A log over any writer; `path` names it in errors.
    pub fn new(out: W, path: &Path) -> Self {
        Self {
            out: BufWriter::new(out),
            path: path.to_path_buf(),
            written: 0,
        }
    }

    /// The file it writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Events written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Appends one tick's events and flushes.
    pub fn write_batch(&mut self, events: &[Event]) -> Result<(), EventLogError> {
        self.write_batch_io(events)
            .map_err(|source| EventLogError::Io {
                path: self.path.clone(),
                source,
            })
    }

    fn write_batch_io(&mut self, events: &[Event]) -> io::Result<()> {
        for event in events {
            serde_json::to_writer(&mut self.out, event)?;
            self.out.write_all(b"\n")?;
            self.written += 1;
        }
        self.out.flush()
    }

    /// Flushes and returns the writer.
    pub fn into_inner(self) -> Result<W, EventLogError> {
        let path = self.path;
        self.out.into_inner().map_err(|e| EventLogError::Io {
            path,
            source: e.into_error(),
        })
    }
}

/// Parses log text back into events; blank lines are skipped; `path` names
/// the file in errors.
pub fn parse(text: &str, path: &Path) -> Result<Vec<Event>, EventLogError> {
    parse_with(text, path, &crate::progress::Silent)
}

/// [`parse`], telling `progress` how many of the log's lines are read
/// (every [`PROGRESS_EVERY`] lines and at the end): a long log's report or
/// export shows how far it is.
pub fn parse_with(
    text: &str,
    path: &Path,
    progress: &dyn crate::progress::Progress,
) -> Result<Vec<Event>, EventLogError> {
    let total = text.lines().count() as u64;
    let mut events = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if i % PROGRESS_EVERY == 0 {
            progress.update("log lines read", i as u64, total);
        }
        if line.trim().is_empty() {
            continue;
        }
        events.push(
            serde_json::from_str(line).map_err(|e| EventLogError::Parse {
                path: path.to_path_buf(),
                line: i + 1,
                message: e.to_string(),
            })?,
        );
    }
    progress.update("log lines read", total, total);
    Ok(events)
}

/// How many lines [`parse_with`] reads between two progress reports.
pub const PROGRESS_EVERY: usize = 1000;

/// Reads and parses a log file.
pub fn read(path: &Path) -> Result<Vec<Event>, EventLogError> {
    read_with(path, &crate::progress::Silent)
}

/// [`read`], reporting to `progress` as [`parse_with`] does.
pub fn read_with(
    path: &Path,
    progress: &dyn crate::progress::Progress,
) -> Result<Vec<Event>, EventLogError> {
    let text = std::fs::read_to_string(path).map_err(|source| EventLogError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_with(&text, path, progress)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{EventKind, Mode};

    fn event(seq: u64) -> Event {
        Event {
            seq,
            time: seq as f64 * 0.1,
            wall_ms: 0,
            thread_id: "th".into(),
            step: seq,
            origin: None,
            kind: EventKind::Mode {
                from: Mode::Idle,
                to: Mode::Exec,
                reason: "task t1".into(),
            },
        }
    }

    /// Counts what a parse reported.
    #[derive(Default)]
    struct Seen(std::cell::RefCell<Vec<(u64, u64)>>);

    impl crate::progress::Progress for Seen {
        fn update(&self, _what: &str, done: u64, total: u64) {
            self.0.borrow_mut().push((done, total));
        }
    }

    #[test]
    fn a_long_log_reports_how_far_it_is_read() {
        let lines = PROGRESS_EVERY * 2 + 5;
        let mut text = String::new();
        for seq in 1..=lines as u64 {
            text.push_str(&serde_json::to_string(&event(seq)).unwrap());
            text.push('\n');
        }
        let seen = Seen::default();
        let events = parse_with(&text, Path::new("long.jsonl"), &seen).unwrap();
        assert_eq!(events.len(), lines);
        let total = lines as u64;
        let reports = seen.0.into_inner();
        assert_eq!(
            reports,
            [(0, total), (1000, total), (2000, total), (total, total)]
        );
    }

    #[test]
    fn a_written_log_reads_back_the_same_events() {
        let mut log = EventLog::new(Vec::new(), Path::new("mem.jsonl"));
        log.write_batch(&[event(1), event(2)]).unwrap();
        log.write_batch(&[event(3)]).unwrap();
        assert_eq!(log.written(), 3);
        let bytes = log.into_inner().unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(text.starts_with(r#"{"seq":1,"#), "{text}");
        let back = parse(&text, Path::new("mem.jsonl")).unwrap();
        assert_eq!(back, vec![event(1), event(2), event(3)]);
    }

    #[test]
    fn bad_lines_are_numbered() {
        let good = serde_json::to_string(&event(1)).unwrap();
        let text = format!("{good}\n\n{{\"seq\": 2}}\n");
        let e = parse(&text, Path::new("r.jsonl")).unwrap_err().to_string();
        assert!(
            e.starts_with("r.jsonl:3: expected one event as JSON per line: missing field"),
            "{e}"
        );
    }

    #[test]
    fn files_are_created_with_their_folder() {
        let dir = std::env::temp_dir().join(format!("robobrain-eventlog-{}", std::process::id()));
        let path = default_path(&dir.join("runs"), "th");
        let mut log = EventLog::create(&path).unwrap();
        log.write_batch(&[event(1)]).unwrap();
        drop(log);
        assert_eq!(read(&path).unwrap(), vec![event(1)]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
