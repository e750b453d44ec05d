//! What a run writes its events to: the JSONL log always, and an MCAP
//! recording beside it when asked (`--mcap`). Whoever writes a run's events
//! — the recorder task of a started run, or a face that ticks the engine
//! itself — writes them here, so every face records the same way.

use std::fs::File;
use std::path::Path;

use super::recorder::RecordError;
use crate::eventlog::EventLog;
use crate::mcap::{McapLog, Recorded};
use crate::protocol::Event;

/// A run's logs: see the module's doc.
pub struct RunLog {
    jsonl: Option<EventLog<File>>,
    /// The JSONL file, kept when the log has failed and is gone.
    path: std::path::PathBuf,
    mcap: Option<McapLog>,
    mcap_path: Option<std::path::PathBuf>,
}

impl RunLog {
    /// A run's logs: the JSONL `log`, and the MCAP recording when given.
    pub fn new(log: EventLog<File>, mcap: Option<McapLog>) -> Self {
        Self {
            path: log.path().to_path_buf(),
            jsonl: Some(log),
            mcap_path: mcap.as_ref().map(|m| m.path().to_path_buf()),
            mcap,
        }
    }

    /// The JSONL log's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The MCAP recording's file, when the run is recorded as MCAP.
    pub fn mcap_path(&self) -> Option<&Path> {
        self.mcap_path.as_deref()
    }

    /// Writes one tick's events to every log. A log that fails is no
    /// longer written (the others go on) and its error is returned, once.
    pub fn write_batch(&mut self, events: &[Event]) -> Result<(), RecordError> {
        let mut failed = None;
        if let Some(log) = &mut self.jsonl
            && let Err(e) = log.write_batch(events)
        {
            self.jsonl = None;
            failed = Some(RecordError::from(e));
        }
        if let Some(mcap) = &mut self.mcap
            && let Err(e) = mcap.write_batch(events)
        {
            self.mcap = None;
            failed.get_or_insert(RecordError::from(e));
        }
        failed.map_or(Ok(()), Err)
    }

    /// Closes the logs: the MCAP recording gets its index and summary.
    /// What the recording holds, when there is one.
    pub fn finish(self) -> Result<Option<Recorded>, RecordError> {
        match self.mcap {
            Some(mcap) => Ok(Some(mcap.finish()?)),
            None => Ok(None),
        }
    }
}
