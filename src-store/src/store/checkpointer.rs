//! WAL checkpoints off the committing thread.
//!
//! In WAL mode a commit appends the changed pages to the `-wal` file; a
//! checkpoint copies them back into the database (with
//! `synchronous=NORMAL`, fsyncing the WAL before and the database after).
//! SQLite's automatic checkpoint runs inside the commit that crosses 1 000
//! pages, so every hundred-odd ticks one tick waited for two fsyncs. The
//! store turns it off (`wal_autocheckpoint=0`) and this thread, with its own
//! connection, runs a checkpoint when asked, in two passes:
//!
//! - `PASSIVE` copies what is in the WAL without blocking the writer (and
//!   fsyncs);
//! - `RESTART` then copies the few frames committed during the first pass,
//!   holding the write lock while it does (a commit that comes then waits
//!   for it, looking again every 50 µs: about half a millisecond, the two
//!   fsyncs), so that the WAL is wholly copied and the next
//!   commit writes it again from its start. Without this second pass, ticks
//!   committing back to back always landed during the passive pass, the WAL
//!   was never wholly copied, never restarted, and grew without end (620 MB
//!   after 14 000 iterations of the durable bench), every commit appending
//!   to new blocks of the file, which the kernel first zeroes (a fifth of a
//!   tick's CPU).
//!
//! What a commit guarantees is unchanged: a commit is durable against a
//! killed process once it is in the WAL, checkpointed or not
//! (docs/durability.md).

use std::path::Path;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

use rusqlite::Connection;

/// Commits between two checkpoint requests: a tick writes a handful of
/// pages, so this keeps the WAL around SQLite's default of 1 000 pages.
pub(super) const EVERY: u32 = 128;

/// When a connection that writes the run's database asks for a
/// checkpoint: every [`EVERY`] of its commits, starting the thread the
/// first time (none for a database in memory).
#[derive(Default)]
pub(super) struct Schedule {
    /// The thread, once started.
    pub(super) checkpointer: Option<Checkpointer>,
    /// Commits since it was last asked to run.
    since: u32,
}

impl Schedule {
    /// Counts a commit to `path`; every [`EVERY`] asks for a checkpoint.
    pub(super) fn after_commit(&mut self, path: &Path) {
        self.since += 1;
        if self.since < EVERY {
            return;
        }
        self.now(path);
    }

    /// Asks for a checkpoint now (it syncs the WAL before copying it).
    pub(super) fn now(&mut self, path: &Path) {
        if path == Path::new(":memory:") {
            return;
        }
        self.since = 0;
        if self.checkpointer.is_none() {
            self.checkpointer = Checkpointer::start(path);
        }
        if let Some(c) = &self.checkpointer {
            c.request();
        }
    }
}

/// The checkpoint thread; dropping it lets the thread finish its current
/// checkpoint and waits for it.
pub(super) struct Checkpointer {
    wake: Option<SyncSender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Opens a second connection to `path` and starts the thread; `None`
    /// when either fails (the WAL then grows until the store is closed,
    /// when SQLite checkpoints it).
    pub(super) fn start(path: &Path) -> Option<Self> {
        let conn = Connection::open(path).ok()?;
        // No waiting: `RESTART` that cannot take the write lock at once, or
        // finds a reader (`robobrain threads` in another process) still on
        // the WAL, does what `PASSIVE` would and returns, so it never holds
        // the lock while it waits.
        conn.busy_timeout(std::time::Duration::ZERO).ok()?;
        let (wake, asked) = sync_channel::<()>(1);
        let thread = std::thread::Builder::new()
            .name("store-checkpoint".into())
            .spawn(move || {
                while asked.recv().is_ok() {
                    // Busy (another process holds the database) or failed:
                    // the next request tries again; the commits do not depend on it.
                    for pass in ["PASSIVE", "RESTART"] {
                        let sql = format!("PRAGMA wal_checkpoint({pass})");
                        if conn.query_row(&sql, [], |_| Ok(())).is_err() {
                            break;
                        }
                    }
                }
            })
            .ok()?;
        Some(Self {
            wake: Some(wake),
            thread: Some(thread),
        })
    }

    /// Asks for a checkpoint; a request already waiting covers this one.
    pub(super) fn request(&self) {
        if let Some(wake) = &self.wake {
            let _ = wake.try_send(());
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.wake.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
