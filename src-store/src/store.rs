//! Durable storage on SQLite: threads, checkpoints, the side-effect ledger,
//! approvals and events.
//!
//! One file (default `runs/robobrain.db`) in WAL mode. Everything one tick
//! produced — its events, the checkpoint after its nodes, the ledger rows of
//! the goals it is about to send and the thread's row — is written in one
//! transaction *before* any of those goals leaves for the robot, so a killed
//! brain never finds a side effect it has no record of. See
//! `docs/durability.md` for what `synchronous = normal | full` guarantees.
//!
//! - `schema.rs`: versioned migrations (`PRAGMA user_version`).
//! - `delta.rs`: checkpoint deltas (pure JSON diff and apply).
//! - `ledger.rs`: ledger rows and their states.
//! - `checkpointer.rs`: WAL checkpoints on a thread of their own, so no
//!   tick waits for one.
//! - `guard.rs`: the database file watched while a thread records into it
//!   (deleted, replaced or made read-only under a running brain).

pub mod audit;
mod checkpointer;
pub mod delta;
pub mod guard;
pub mod ledger;
pub mod schema;

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, ErrorCode, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

pub use ledger::{LedgerEntry, LedgerStatus};

use crate::protocol::{Event, EventKind};

/// How hard a commit waits for the disk (`[store] synchronous`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Synchronous {
    /// WAL; a commit that records an outward effect ([`Commit::outward`]:
    /// a goal or cancel about to go to the robot, a ledger change, an
    /// approval asked or answered, a device write) is on disk before it
    /// returns (SQLite's `synchronous=FULL` for that commit); the others
    /// (`synchronous=NORMAL`) reach the disk with the next one that syncs,
    /// at most [`GROUP_WINDOW`] later while the brain commits. A killed
    /// process loses nothing committed; a power cut may lose the records
    /// of the last effect-free ticks, never an effect's.
    #[default]
    Effects,
    /// WAL + `synchronous=NORMAL`: a killed process loses nothing committed;
    /// a power cut may lose the last commits, effects' records included
    /// (never corrupts).
    Normal,
    /// WAL + `synchronous=FULL`: every commit is on disk before it returns.
    Full,
}

/// Under [`Synchronous::Effects`], how long a commit without an outward
/// effect may stay in the WAL unsynced while the brain keeps committing:
/// the first commit after this window syncs (and with it every commit
/// before it), and a tick with nothing to commit asks the background
/// checkpointer to sync what is left.
pub const GROUP_WINDOW: std::time::Duration = std::time::Duration::from_millis(100);

/// Store settings (`[store]` in `robobrain.toml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// Database file (default `<runs_dir>/robobrain.db`).
    pub db: Option<PathBuf>,
    /// Durability of a commit.
    pub synchronous: Synchronous,
    /// Checkpoints kept per finished thread (the newest; at least 1).
    pub keep_checkpoints: u32,
    /// A full checkpoint every this many; deltas in between.
    pub full_every: u32,
}

impl StoreConfig {
    /// The first `[store]` key out of range, and what was expected.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        if self.keep_checkpoints == 0 {
            return Some((
                "store.keep_checkpoints",
                "expected at least 1 (the newest checkpoint is what a resume needs), found 0"
                    .into(),
            ));
        }
        if self.full_every == 0 {
            return Some(("store.full_every", "expected at least 1, found 0".into()));
        }
        None
    }
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            db: None,
            synchronous: Synchronous::Effects,
            keep_checkpoints: 10,
            full_every: 64,
        }
    }
}

/// Why the store refused.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The file is not a database, or is damaged.
    #[error("{}: the database is corrupt or not a robobrain database ({detail})", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// SQLite's words.
        detail: String,
    },
    /// Another process holds the database.
    #[error("{}: the database is locked by another process (is another robobrain using it?)", path.display())]
    Locked {
        /// The file.
        path: PathBuf,
    },
    /// The file or its folder cannot be written.
    #[error("{}: the database is read-only (check the permissions of the file and its folder)", path.display())]
    ReadOnly {
        /// The file.
        path: PathBuf,
    },
    /// The disk is full.
    #[error("{}: the disk is full", path.display())]
    Full {
        /// The file.
        path: PathBuf,
    },
    /// The database file was deleted, or another file put in its place,
    /// while a thread was recording into it.
    #[error("{}: the database file was {what} while the thread was recording", path.display())]
    FileGone {
        /// The file.
        path: PathBuf,
        /// `deleted` or `replaced by another file`.
        what: &'static str,
    },
    /// The file cannot be opened or created.
    #[error("{}: cannot open the database ({detail})", path.display())]
    CannotOpen {
        /// The file.
        path: PathBuf,
        /// Why.
        detail: String,
    },
    /// The database was written by a newer robobrain.
    #[error("{}: schema version {found} is newer than this robobrain supports ({supported}); upgrade robobrain or use another --db", path.display())]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// Version in the file.
        found: u32,
        /// Newest version this build knows.
        supported: u32,
    },
    /// A resume named a thread the database does not hold.
    #[error("{}: no thread `{id}` to resume; {}", path.display(), known_list(known))]
    UnknownThread {
        /// The file.
        path: PathBuf,
        /// The id asked for.
        id: String,
        /// The threads it does hold, newest first.
        known: Vec<String>,
    },
    /// A resume named a thread whose checkpoints are gone: starting it
    /// again from step 0 would write a second history over the first.
    #[error("{}: thread `{id}` has no checkpoint to resume from; nothing was written (restore the file from a copy, or start another --thread)", path.display())]
    NoCheckpoint {
        /// The file.
        path: PathBuf,
        /// The thread.
        id: String,
    },
    /// A new run named a thread that already exists.
    #[error("{}: thread `{id}` already exists; add --resume to continue it or pick another --thread", path.display())]
    ThreadExists {
        /// The file.
        path: PathBuf,
        /// The id.
        id: String,
    },
    /// A stored row cannot be decoded.
    #[error("{}: {what} cannot be decoded: {detail}", path.display())]
    Decode {
        /// The file.
        path: PathBuf,
        /// Which row.
        what: String,
        /// Why.
        detail: String,
    },
    /// Any other SQLite failure.
    #[error("{}: {source}", path.display())]
    Sqlite {
        /// The file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
}

fn known_list(known: &[String]) -> String {
    if known.is_empty() {
        "the database holds no threads yet".into()
    } else {
        format!("known threads: {}", known.join(", "))
    }
}

impl StoreError {
    pub(crate) fn from_sqlite(path: &Path, e: rusqlite::Error) -> Self {
        let path = path.to_path_buf();
        let code = e.sqlite_error_code();
        match code {
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => Self::Corrupt {
                path,
                detail: e.to_string(),
            },
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Self::Locked { path },
            Some(ErrorCode::ReadOnly) => Self::ReadOnly { path },
            Some(ErrorCode::DiskFull) => Self::Full { path },
            Some(ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => Self::CannotOpen {
                path,
                detail: e.to_string(),
            },
            _ => Self::Sqlite { path, source: e },
        }
    }
}

/// A thread as `robobrain threads` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadInfo {
    /// Thread id.
    pub id: String,
    /// `running`, `awaiting_approval`, `idle`, `halted` or `finished`.
    pub status: String,
    /// Kernel mode at the last commit.
    pub mode: String,
    /// Step number at the last commit.
    pub last_step: u64,
    /// Event sequence number at the last commit.
    pub last_seq: u64,
    /// The approval it waits for, if any.
    pub pending_approval: Option<String>,
    /// Wall ms of the last commit that rewrote the thread's row: the last
    /// commit's, or at most a second older while the thread runs.
    pub updated_ms: u64,
}

/// A checkpoint body: the whole state, or the changes since the previous one.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckpointBody {
    /// The whole state.
    Full(Value),
    /// `[pointer, value]` pairs from [`delta::diff`].
    Delta(Vec<(String, Value)>),
}

/// The thread row written with each commit.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadRow {
    /// See [`ThreadInfo::status`].
    pub status: String,
    /// Kernel mode.
    pub mode: String,
    /// The approval it waits for, if any.
    pub pending_approval: Option<String>,
}

/// Everything one tick writes, in one transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Commit<'a> {
    /// Thread id.
    pub thread: &'a str,
    /// Step after the tick's nodes.
    pub step: u64,
    /// Last event sequence number.
    pub seq: u64,
    /// The checkpoint, if the state changed.
    pub checkpoint: Option<CheckpointBody>,
    /// The tick's events.
    pub events: &'a [Event],
    /// Ledger rows for goals about to be sent.
    pub started: &'a [LedgerEntry],
    /// Ledger rows that moved on: goal id, new status, result.
    pub updates: &'a [(String, LedgerStatus, Option<Value>)],
    /// The thread's row.
    pub row: ThreadRow,
    /// Whether the tick had an effect outside the brain that this record
    /// must reach the disk before (or, for a device write, right after):
    /// under [`Synchronous::Effects`] such a commit is synced before
    /// [`Store::commit`] returns.
    pub outward: bool,
}

/// A restored checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct Restored {
    /// Step at the checkpoint.
    pub step: u64,
    /// Event sequence number at the checkpoint.
    pub seq: u64,
    /// The state, rebuilt from the last full checkpoint and the deltas after it.
    pub state: Value,
    /// Checkpoints written so far (the next is number `count`).
    pub count: u64,
}

/// An open database.
pub struct Store {
    /// Copies the WAL back into the database off the committing thread
    /// (started when first needed; none in memory). Declared first so it
    /// is dropped (and its thread joined) before `conn` closes.
    checkpoints: checkpointer::Schedule,
    conn: Connection,
    path: PathBuf,
    /// How hard a commit waits for the disk (the audit log opens with the same).
    synchronous: Synchronous,
    /// The thread this store last committed a checkpoint for and the
    /// number its next one takes, so a commit need not ask SQLite (that
    /// `SELECT MAX(n)` was an eighth of a durable tick). Set only after the
    /// transaction committed; anything else that writes checkpoints clears it.
    next_checkpoint: Option<(String, u64)>,
    /// Whether the connection's commits sync now (`synchronous=FULL`);
    /// under [`Synchronous::Effects`] it changes only when a commit needs
    /// the other level.
    syncing: bool,
    /// When the oldest commit not yet synced was made (under
    /// [`Synchronous::Effects`]).
    unsynced_since: Option<std::time::Instant>,
    /// The thread row this store last wrote, and when: a commit with a
    /// checkpoint rewrites it only when its status, mode or pending
    /// approval changed, or [`ROW_EVERY`] after the last time
    /// ([`Store::threads`] reads the step and `seq` from the newest
    /// checkpoint), which saves a page per tick.
    row_written: Option<(String, ThreadRow, std::time::Instant)>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (creating when absent) the database at `path` and migrates it.
    pub fn open(path: &Path, synchronous: Synchronous) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
            && !dir.exists()
        {
            std::fs::create_dir_all(dir).map_err(|e| match e.kind() {
                std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
                    StoreError::ReadOnly {
                        path: path.to_path_buf(),
                    }
                }
                _ => StoreError::CannotOpen {
                    path: path.to_path_buf(),
                    detail: format!("cannot create {}: {e}", dir.display()),
                },
            })?;
        }
        let conn = open_connection(path).map_err(|e| StoreError::from_sqlite(path, e))?;
        Self::setup(conn, path, synchronous)
    }

    /// A database in memory (tests and benchmarks).
    pub fn in_memory() -> Result<Self, StoreError> {
        let path = Path::new(":memory:");
        let conn = Connection::open_in_memory().map_err(|e| StoreError::from_sqlite(path, e))?;
        Self::setup(conn, path, Synchronous::Normal)
    }

    fn setup(conn: Connection, path: &Path, synchronous: Synchronous) -> Result<Self, StoreError> {
        let mut store = Self {
            checkpoints: checkpointer::Schedule::default(),
            conn,
            path: path.to_path_buf(),
            synchronous,
            next_checkpoint: None,
            syncing: synchronous == Synchronous::Full,
            unsynced_since: None,
            row_written: None,
        };
        store
            .conn
            .busy_handler(Some(retry_soon))
            .map_err(|e| store.err(e))?;
        // Reading the header first turns "not a database" into a clear error.
        let version: u32 = store
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| StoreError::from_sqlite(path, e))?;
        // A file damaged inside its pages reads as if nothing were wrong
        // (a history silently shorter): check every page before trusting it.
        if path != Path::new(":memory:")
            && let Some(detail) = store.damage()
        {
            return Err(StoreError::Corrupt {
                path: store.path.clone(),
                detail,
            });
        }
        let supported = schema::current_version();
        if version > supported {
            return Err(StoreError::NewerSchema {
                path: store.path.clone(),
                found: version,
                supported,
            });
        }
        let mode = configure(&mut store.conn, synchronous).map_err(|e| store.err(e))?;
        if mode != "wal" && mode != "memory" {
            return Err(StoreError::CannotOpen {
                path: store.path.clone(),
                detail: format!("WAL mode refused (journal mode is {mode})"),
            });
        }
        store
            .conn
            .execute_batch("PRAGMA foreign_keys=ON;")
            .map_err(|e| store.err(e))?;
        store.migrate(version)?;
        Ok(store)
    }

    fn migrate(&mut self, from: u32) -> Result<(), StoreError> {
        let path = self.path.clone();
        for (i, sql) in schema::MIGRATIONS.iter().enumerate().skip(from as usize) {
            let tx = self
                .conn
                .transaction()
                .map_err(|e| StoreError::from_sqlite(&path, e))?;
            tx.execute_batch(sql)
                .and_then(|()| tx.execute_batch(&format!("PRAGMA user_version={}", i + 1)))
                .and_then(|()| tx.commit())
                .map_err(|e| StoreError::from_sqlite(&path, e))?;
        }
        Ok(())
    }

    /// What `PRAGMA quick_check` finds wrong with the file (its first few
    /// findings), or `None` when it is sound.
    ///
    /// The check reads every page: through SQLite's memory-mapped reads
    /// (`mmap_size`, for this statement only) rather than a `pread` per
    /// page, a third of the time on the bench's 3 040-step thread (about
    /// 1 ms instead of 3, docs/benchmarks/durable.md). Commits never go
    /// through the map: it is off again before this returns.
    fn damage(&self) -> Option<String> {
        let mapped = self
            .conn
            .execute_batch(&format!("PRAGMA mmap_size={CHECK_MMAP_BYTES}"))
            .is_ok();
        let found: Result<Vec<String>, _> = self
            .conn
            .prepare(&format!("PRAGMA quick_check({QUICK_CHECK_FINDINGS})"))
            .and_then(|mut stmt| {
                stmt.query_map([], |r| r.get::<_, String>(0))
                    .and_then(Iterator::collect)
            });
        if mapped {
            // Failing to unmap leaves reads mapped, which SQLite supports;
            // the check's own finding is what matters here.
            let _ = self.conn.execute_batch("PRAGMA mmap_size=0");
        }
        match found {
            Ok(rows) if rows == ["ok"] => None,
            Ok(rows) => Some(format!(
                "PRAGMA quick_check: {}",
                rows.join("; ").replace('\n', " ")
            )),
            Err(e) => Some(format!("PRAGMA quick_check failed: {e}")),
        }
    }

    /// A failed read, described: an error that may come from damage is
    /// checked with `quick_check`, and a damaged file is reported as corrupt
    /// with what the check found.
    fn err(&self, e: rusqlite::Error) -> StoreError {
        let error = StoreError::from_sqlite(&self.path, e);
        match &error {
            StoreError::Corrupt { .. } | StoreError::Sqlite { .. } => match self.damage() {
                Some(detail) => StoreError::Corrupt {
                    path: self.path.clone(),
                    detail: format!("{error}; {detail}"),
                },
                None => error,
            },
            _ => error,
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How hard its commits wait for the disk.
    pub fn synchronous(&self) -> Synchronous {
        self.synchronous
    }

    /// Whether the last commit was synced before it returned (the engine's
    /// tests check that a tick with an outward effect synced).
    pub fn synced_last(&self) -> bool {
        self.syncing
    }

    /// Every thread, most recently updated first.
    pub fn threads(&self) -> Result<Vec<ThreadInfo>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, status, mode, last_step, last_seq, pending_approval, updated_ms
                 FROM threads ORDER BY updated_ms DESC, id",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(ThreadInfo {
                    id: r.get(0)?,
                    status: r.get(1)?,
                    mode: r.get(2)?,
                    last_step: r.get(3)?,
                    last_seq: r.get(4)?,
                    pending_approval: r.get(5)?,
                    updated_ms: r.get(6)?,
                })
            })
            .and_then(Iterator::collect)
            .map_err(|e| self.err(e))?;
        // A commit rewrites the row only now and then; the newest
        // checkpoint has the step and `seq` of the last commit (every
        // commit that moves them writes one).
        let mut newest = self
            .conn
            .prepare_cached(
                "SELECT step, seq FROM checkpoints WHERE thread_id = ?1 ORDER BY id DESC LIMIT 1",
            )
            .map_err(|e| self.err(e))?;
        let mut rows: Vec<ThreadInfo> = rows;
        for t in &mut rows {
            let last: Option<(u64, u64)> = newest
                .query_row([&t.id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .map_err(|e| self.err(e))?;
            if let Some((step, seq)) = last {
                t.last_step = t.last_step.max(step);
                t.last_seq = t.last_seq.max(seq);
            }
        }
        Ok(rows)
    }

    /// The thread `id`, or an error that lists the known threads.
    pub fn thread(&self, id: &str) -> Result<ThreadInfo, StoreError> {
        let threads = self.threads()?;
        if let Some(t) = threads.iter().find(|t| t.id == id) {
            return Ok(t.clone());
        }
        Err(StoreError::UnknownThread {
            path: self.path.clone(),
            id: id.to_string(),
            known: threads.into_iter().map(|t| t.id).collect(),
        })
    }

    /// Registers a new thread; refuses an id that exists.
    pub fn create_thread(&mut self, id: &str, mode: &str) -> Result<(), StoreError> {
        let now = wall_ms();
        let n = self
            .conn
            .execute(
                "INSERT OR IGNORE INTO threads (id, status, mode, created_ms, updated_ms)
                 VALUES (?1, 'running', ?2, ?3, ?3)",
                params![id, mode, now],
            )
            .map_err(|e| self.err(e))?;
        if n == 0 {
            return Err(StoreError::ThreadExists {
                path: self.path.clone(),
                id: id.to_string(),
            });
        }
        Ok(())
    }

    /// Writes one tick's record in one transaction; under
    /// [`Synchronous::Effects`] a commit with an outward effect, or the
    /// first after [`GROUP_WINDOW`], is on disk when this returns.
    pub fn commit(&mut self, c: &Commit<'_>) -> Result<(), StoreError> {
        let path = self.path.clone();
        let map = |e| StoreError::from_sqlite(&path, e);
        let sync = self.set_sync_level(c.outward).map_err(map)?;
        let now = wall_ms();
        // A commit without a checkpoint has nothing else that says its step
        // and `seq`: it writes the row.
        let write_row = c.checkpoint.is_none()
            || !self.row_written.as_ref().is_some_and(|(thread, row, at)| {
                thread == c.thread && *row == c.row && at.elapsed() < ROW_EVERY
            });
        let tx = self.conn.transaction().map_err(map)?;
        let written =
            write_tick(&tx, c, self.next_checkpoint.as_ref(), write_row, now).map_err(map)?;
        tx.commit().map_err(map)?;
        self.note_committed(c, write_row, written, sync);
        self.after_commit();
        Ok(())
    }

    /// Whether this commit syncs: under [`Synchronous::Effects`], one with
    /// an outward effect or the first after [`GROUP_WINDOW`]. Switches the
    /// connection's level to match before the transaction opens.
    fn set_sync_level(&mut self, outward: bool) -> rusqlite::Result<bool> {
        let sync = self.synchronous == Synchronous::Effects
            && (outward
                || self
                    .unsynced_since
                    .is_some_and(|t| t.elapsed() >= GROUP_WINDOW));
        if self.synchronous == Synchronous::Effects && sync != self.syncing {
            // SQLite refuses to change the level inside a transaction.
            self.conn.execute_batch(if sync {
                "PRAGMA synchronous=FULL"
            } else {
                "PRAGMA synchronous=NORMAL"
            })?;
            self.syncing = sync;
        }
        Ok(sync)
    }

    /// After the transaction committed: remembers the row and checkpoint
    /// number it wrote, and since when commits have gone unsynced.
    fn note_committed(
        &mut self,
        c: &Commit<'_>,
        write_row: bool,
        written: Option<u64>,
        sync: bool,
    ) {
        if write_row {
            self.row_written = Some((
                c.thread.to_string(),
                c.row.clone(),
                std::time::Instant::now(),
            ));
        }
        if let Some(n) = written {
            self.next_checkpoint = Some((c.thread.to_string(), n + 1));
        }
        if self.synchronous == Synchronous::Effects {
            if sync {
                self.unsynced_since = None;
            } else {
                self.unsynced_since
                    .get_or_insert_with(std::time::Instant::now);
            }
        }
    }

    /// On a tick with nothing to commit: under [`Synchronous::Effects`],
    /// commits left unsynced for [`GROUP_WINDOW`] are handed to the
    /// background checkpointer, whose checkpoint syncs the WAL first (the
    /// tick does not wait for it).
    pub fn sync_if_due(&mut self) {
        if self
            .unsynced_since
            .is_some_and(|t| t.elapsed() >= GROUP_WINDOW)
        {
            self.unsynced_since = None;
            self.checkpoints.now(&self.path);
        }
    }

    /// Every [`checkpointer::EVERY`] commits, asks the checkpointer thread
    /// to copy the WAL into the database (what SQLite's autocheckpoint did
    /// inside the commit that crossed 1 000 pages, fsyncs included).
    fn after_commit(&mut self) {
        self.checkpoints.after_commit(&self.path);
    }

    /// The newest checkpoint of `thread`, rebuilt.
    pub fn restore(&self, thread: &str) -> Result<Option<Restored>, StoreError> {
        let base: Option<(i64, u64, u64, u64, String)> = self
            .conn
            .query_row(
                "SELECT id, n, step, seq, body FROM checkpoints WHERE thread_id = ?1 AND kind = 'full'
                 ORDER BY n DESC LIMIT 1",
                [thread],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        let Some((id, n0, mut step, mut seq, body)) = base else {
            return Ok(None);
        };
        let decode = |what: String, detail: String| StoreError::Decode {
            path: self.path.clone(),
            what,
            detail,
        };
        let mut state: Value = serde_json::from_str(&body).map_err(|e| {
            decode(
                format!("checkpoint {n0} of thread `{thread}`"),
                e.to_string(),
            )
        })?;
        let mut count = n0 + 1;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT n, step, seq, body FROM checkpoints WHERE id > ?2 AND thread_id = ?1 ORDER BY id",
            )
            .map_err(|e| self.err(e))?;
        let rows: Vec<(u64, u64, u64, String)> = stmt
            .query_map(params![thread, id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .and_then(Iterator::collect)
            .map_err(|e| self.err(e))?;
        for (n, s, q, body) in rows {
            let what = || format!("checkpoint {n} of thread `{thread}`");
            let changes: Vec<(String, Value)> =
                serde_json::from_str(&body).map_err(|e| decode(what(), e.to_string()))?;
            delta::apply(&mut state, &changes).map_err(|e| decode(what(), e.to_string()))?;
            (step, seq, count) = (s, q, n + 1);
        }
        Ok(Some(Restored {
            step,
            seq,
            state,
            count,
        }))
    }

    /// Ledger rows of `thread` not yet `done`, oldest first.
    pub fn open_ledger(&self, thread: &str) -> Result<Vec<LedgerEntry>, StoreError> {
        self.ledger_where(thread, "AND status != 'done'")
    }

    /// Every ledger row of `thread`, oldest first.
    pub fn ledger(&self, thread: &str) -> Result<Vec<LedgerEntry>, StoreError> {
        self.ledger_where(thread, "")
    }

    fn ledger_where(&self, thread: &str, filter: &str) -> Result<Vec<LedgerEntry>, StoreError> {
        let sql = format!(
            "SELECT step, op, goal_id, skill, request, status, result FROM ledger
             WHERE thread_id = ?1 {filter} ORDER BY step, op"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(|e| self.err(e))?;
        let raw: Vec<RawLedgerRow> = stmt
            .query_map([thread], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                ))
            })
            .and_then(Iterator::collect)
            .map_err(|e| self.err(e))?;
        raw.into_iter()
            .map(|(step, op, goal_id, skill, request, status, result)| {
                let bad = |detail: String| StoreError::Decode {
                    path: self.path.clone(),
                    what: format!("ledger row for goal `{goal_id}`"),
                    detail,
                };
                Ok(LedgerEntry {
                    step,
                    op,
                    request: serde_json::from_str(&request).map_err(|e| bad(e.to_string()))?,
                    status: LedgerStatus::parse(&status)
                        .ok_or_else(|| bad(format!("unknown status `{status}`")))?,
                    result: result
                        .map(|r| serde_json::from_str(&r))
                        .transpose()
                        .map_err(|e| bad(e.to_string()))?,
                    goal_id,
                    skill,
                })
            })
            .collect()
    }

    /// The events of `thread`, in order: all of them, 1 to the thread's
    /// last recorded `seq`, or an error — never a shorter history.
    pub fn events(&self, thread: &str) -> Result<Vec<Event>, StoreError> {
        let last_seq = self.thread(thread)?.last_seq;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT first_seq, last_seq, body FROM event_batches WHERE thread_id = ?1 ORDER BY id",
            )
            .map_err(|e| self.err(e))?;
        let raw: Vec<(u64, u64, String)> = stmt
            .query_map([thread], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .and_then(Iterator::collect)
            .map_err(|e| self.err(e))?;
        let mut events: Vec<Event> = Vec::with_capacity(usize::try_from(last_seq).unwrap_or(0));
        for (first, last, body) in raw {
            let batch: Vec<Event> =
                serde_json::from_str(&body).map_err(|e| StoreError::Decode {
                    path: self.path.clone(),
                    what: format!("events {first} to {last} of thread `{thread}`"),
                    detail: e.to_string(),
                })?;
            events.extend(batch);
        }
        let gap = events
            .iter()
            .zip(1..)
            .find(|(e, want)| e.seq != *want)
            .map(|(_, want)| want);
        if gap.is_some() || events.len() as u64 != last_seq {
            let missing = gap.unwrap_or(events.len() as u64 + 1);
            let detail = format!(
                "thread `{thread}` has {} events stored where its record says {last_seq}; event {missing} is missing",
                events.len()
            );
            return Err(StoreError::Corrupt {
                path: self.path.clone(),
                detail: self
                    .damage()
                    .map_or(detail.clone(), |d| format!("{detail}; {d}")),
            });
        }
        Ok(events)
    }

    /// Checks that every event of `thread` is stored and readable before a
    /// resume writes after them: the batches run 1, 2, 3… to the thread's
    /// last recorded `seq`, and each one's body is the bytes written — its
    /// CRC-32 matches the one stored beside it — or, for a record written
    /// before schema 3 (no checksum), a JSON array of as many events as it
    /// says. Bytes damaged inside a record pass `quick_check` (the pages
    /// are sound, the record is not); this names the thread and the events
    /// of the first damaged record. Cheaper than [`Store::events`]: the
    /// bodies are summed, not decoded.
    pub fn check_events(&self, thread: &str) -> Result<(), StoreError> {
        let last_seq = self.thread(thread)?.last_seq;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT first_seq, last_seq, body, crc FROM event_batches WHERE thread_id = ?1 ORDER BY id",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query([thread]).map_err(|e| self.err(e))?;
        let mut next = 1;
        let damaged = |first: u64, last: u64, detail: String| StoreError::Decode {
            path: self.path.clone(),
            what: format!("events {first} to {last} of thread `{thread}`"),
            detail,
        };
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let (first, last): (u64, u64) = (
                row.get(0).map_err(|e| self.err(e))?,
                row.get(1).map_err(|e| self.err(e))?,
            );
            let crc: Option<u32> = row.get(3).map_err(|e| self.err(e))?;
            let body = row.get_ref(2).map_err(|e| self.err(e))?;
            let parsed = body
                .as_bytes()
                .map_err(|e| e.to_string())
                .and_then(|b| record_len(b, crc, (last + 1).saturating_sub(first)));
            match parsed {
                Err(detail) => return Err(damaged(first, last, detail)),
                Ok(n) if first != next || last < first || n != (last + 1).saturating_sub(first) => {
                    return Err(damaged(
                        first,
                        last,
                        format!(
                            "the record holds {n} events where its numbers say {}; event {next} was expected first",
                            (last + 1).saturating_sub(first)
                        ),
                    ));
                }
                Ok(_) => next = last + 1,
            }
        }
        if next != last_seq + 1 {
            return Err(StoreError::Corrupt {
                path: self.path.clone(),
                detail: format!(
                    "thread `{thread}` has events up to {} stored where its record says {last_seq}; event {next} is missing",
                    next - 1
                ),
            });
        }
        Ok(())
    }

    /// Marks `thread` finished and keeps only its newest `keep` checkpoints
    /// (the newest is always full, so the thread can still be resumed).
    pub fn finish(&mut self, thread: &str, full: &Value, keep: u32) -> Result<(), StoreError> {
        self.next_checkpoint = None;
        self.row_written = None;
        let path = self.path.clone();
        let map = |e| StoreError::from_sqlite(&path, e);
        let tx = self.conn.transaction().map_err(map)?;
        let last: Option<(u64, u64, u64, String)> = tx
            .query_row(
                "SELECT n, step, seq, kind FROM checkpoints WHERE thread_id = ?1 ORDER BY id DESC LIMIT 1",
                [thread],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()
            .map_err(map)?;
        if let Some((n, step, seq, kind)) = last {
            if kind != "full" {
                tx.execute(
                    "INSERT INTO checkpoints (thread_id, n, step, seq, kind, body) VALUES (?1, ?2, ?3, ?4, 'full', ?5)",
                    params![thread, n + 1, step, seq, full.to_string()],
                )
                .map_err(map)?;
            }
            tx.execute(
                "DELETE FROM checkpoints WHERE thread_id = ?1 AND n <= (
                   SELECT MAX(n) FROM checkpoints WHERE thread_id = ?1) - ?2",
                params![thread, keep.max(1)],
            )
            .map_err(map)?;
        }
        tx.execute(
            "UPDATE threads SET status = 'finished', updated_ms = ?2 WHERE id = ?1",
            params![thread, wall_ms()],
        )
        .map_err(map)?;
        tx.commit().map_err(map)
    }

    /// Checkpoints stored for `thread` and their total body bytes.
    pub fn checkpoint_bytes(&self, thread: &str) -> Result<(u64, u64), StoreError> {
        self.conn
            .query_row(
                "SELECT COUNT(*), COALESCE(SUM(LENGTH(body)), 0) FROM checkpoints WHERE thread_id = ?1",
                [thread],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| self.err(e))
    }
}

/// How many events a stored record holds, checked: with a checksum, the
/// bytes must be the ones written (and then hold the `numbered` events
/// they were written with); without one (written before schema 3), the
/// body is parsed as a JSON array.
fn record_len(body: &[u8], crc: Option<u32>, numbered: u64) -> Result<u64, String> {
    match crc {
        Some(crc) if crc32fast::hash(body) == crc => Ok(numbered),
        Some(crc) => Err(format!(
            "its checksum is {:08x} where {crc:08x} was written",
            crc32fast::hash(body)
        )),
        None => serde_json::from_slice::<Vec<serde::de::IgnoredAny>>(body)
            .map(|v| v.len() as u64)
            .map_err(|e| e.to_string()),
    }
}

/// How much of the file `quick_check` reads through a memory map (SQLite
/// maps at most the file's size).
const CHECK_MMAP_BYTES: u64 = 1 << 30;

/// How often a thread's row is rewritten while nothing in it but the step,
/// the `seq` and the time changes (its `updated_ms` is at most this old).
const ROW_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// How many of `quick_check`'s findings an error quotes.
const QUICK_CHECK_FINDINGS: u32 = 3;

/// A ledger row as SQLite returns it.
type RawLedgerRow = (u64, u32, String, String, String, String, Option<String>);

/// How long a statement waits for a lock another connection holds before
/// it fails as busy.
const BUSY_WAIT: std::time::Duration = std::time::Duration::from_millis(500);
/// How often it looks again meanwhile.
const BUSY_RETRY: std::time::Duration = std::time::Duration::from_micros(50);

/// SQLite's busy handler for the connections that write the run's database
/// (the store's and the audit log's): retries every
/// [`BUSY_RETRY`] for about [`BUSY_WAIT`]. SQLite's own (`busy_timeout`)
/// sleeps 1 ms, then 2, 5, 10…: a commit that met the checkpointer's
/// `RESTART` (which holds the write lock for a fraction of a millisecond,
/// `store/checkpointer.rs`) waited 1–3 ms for it, at almost every
/// checkpoint when ticks commit back to back.
fn retry_soon(attempt: i32) -> bool {
    let attempts = BUSY_WAIT.as_micros() / BUSY_RETRY.as_micros();
    if u128::try_from(attempt).unwrap_or(u128::MAX) >= attempts {
        return false;
    }
    std::thread::sleep(BUSY_RETRY);
    true
}

/// A connection to the run's database, SQLite's own file layer as it ships.
fn open_connection(path: &Path) -> rusqlite::Result<Connection> {
    Connection::open(path)
}

/// The settings every connection that writes the run's database takes
/// (the store's and the audit log's): the store's busy handler, WAL,
/// `synchronous` as configured, and no automatic checkpoint inside a
/// commit (the background checkpointer copies the WAL,
/// `store/checkpointer.rs`). Returns the journal mode SQLite reports
/// (`wal`, or `memory` for a database in memory).
fn configure(conn: &mut Connection, synchronous: Synchronous) -> rusqlite::Result<String> {
    conn.busy_handler(Some(retry_soon))?;
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    // Under `Effects` the store's commits start at NORMAL and switch per
    // commit (`Store::commit`).
    let sync = match synchronous {
        Synchronous::Normal | Synchronous::Effects => "NORMAL",
        Synchronous::Full => "FULL",
    };
    conn.execute_batch(&format!(
        "PRAGMA synchronous={sync}; PRAGMA wal_autocheckpoint=0;"
    ))?;
    Ok(mode)
}

/// Everything one tick writes, inside its transaction, in this order:
/// events, approvals, the checkpoint, new ledger rows, ledger updates and
/// (when `write_row`) the thread's row. `next` is the thread and number
/// of the next checkpoint when the store knows it. Returns the number of
/// the checkpoint written, if any.
fn write_tick(
    tx: &Connection,
    c: &Commit<'_>,
    next: Option<&(String, u64)>,
    write_row: bool,
    now: u64,
) -> rusqlite::Result<Option<u64>> {
    insert_events(tx, c)?;
    upsert_approvals(tx, c, now)?;
    let written = match &c.checkpoint {
        Some(body) => Some(insert_checkpoint(tx, c, body, next)?),
        None => None,
    };
    // Statements a tick may not need are looked up only when it does.
    for l in c.started {
        let request = serde_json::to_string(&l.request).unwrap_or_default();
        tx.prepare_cached(
            "INSERT INTO ledger (thread_id, step, op, goal_id, skill, request, status, updated_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'started', ?7)",
        )
        .and_then(|mut led| {
            led.execute(params![
                c.thread, l.step, l.op, l.goal_id, l.skill, request, now
            ])
        })?;
    }
    for (goal_id, status, result) in c.updates {
        let result = result.as_ref().map(Value::to_string);
        tx.prepare_cached(
            "UPDATE ledger SET status = ?2, result = COALESCE(?3, result), updated_ms = ?4
             WHERE goal_id = ?1 AND status != 'done'",
        )
        .and_then(|mut upd| upd.execute(params![goal_id, status.as_str(), result, now]))?;
    }
    if write_row {
        tx.prepare_cached(
            "UPDATE threads SET status = ?2, mode = ?3, last_step = ?4, last_seq = ?5,
               pending_approval = ?6, updated_ms = ?7 WHERE id = ?1",
        )
        .and_then(|mut s| {
            s.execute(params![
                c.thread,
                c.row.status,
                c.row.mode,
                c.step,
                c.seq,
                c.row.pending_approval,
                now
            ])
        })?;
    }
    Ok(written)
}

/// The tick's events as one batch row, with its checksum (none for no events).
fn insert_events(tx: &Connection, c: &Commit<'_>) -> rusqlite::Result<()> {
    if let (Some(first), Some(last)) = (c.events.first(), c.events.last()) {
        let body = serde_json::to_string(c.events).unwrap_or_default();
        let crc = crc32fast::hash(body.as_bytes());
        tx.prepare_cached(
            "INSERT INTO event_batches (thread_id, first_seq, last_seq, step, body, crc)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .and_then(|mut s| s.execute(params![c.thread, first.seq, last.seq, c.step, body, crc]))?;
    }
    Ok(())
}

/// One row per approval the tick's events asked or answered, the newest
/// status and op winning.
fn upsert_approvals(tx: &Connection, c: &Commit<'_>, now: u64) -> rusqlite::Result<()> {
    for e in c.events {
        if let EventKind::Approval {
            approval_id,
            task_id,
            status,
            op,
            reason,
            ..
        } = &e.kind
        {
            let op = serde_json::to_string(op).unwrap_or_default();
            let status = serde_json::to_value(status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            tx.prepare_cached(
                "INSERT INTO approvals (thread_id, approval_id, task_id, op, reason, status, updated_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (thread_id, approval_id) DO UPDATE SET
                   op = excluded.op, status = excluded.status, updated_ms = excluded.updated_ms",
            )
            .and_then(|mut appr| {
                appr.execute(params![
                    c.thread,
                    approval_id,
                    task_id,
                    op,
                    reason,
                    status,
                    now
                ])
            })?;
        }
    }
    Ok(())
}

/// The tick's checkpoint, numbered after the thread's last one (asked of
/// SQLite only when `next` is not this thread's); returns its number.
fn insert_checkpoint(
    tx: &Connection,
    c: &Commit<'_>,
    body: &CheckpointBody,
    next: Option<&(String, u64)>,
) -> rusqlite::Result<u64> {
    let n: u64 = match next {
        Some((thread, n)) if thread == c.thread => *n,
        _ => tx
            .prepare_cached(
                "SELECT n + 1 FROM checkpoints WHERE thread_id = ?1 ORDER BY id DESC LIMIT 1",
            )
            .and_then(|mut s| s.query_row([c.thread], |r| r.get(0)).optional())?
            .unwrap_or(0),
    };
    let (kind, text) = match body {
        CheckpointBody::Full(v) => ("full", v.to_string()),
        CheckpointBody::Delta(d) => ("delta", serde_json::to_string(d).unwrap_or_default()),
    };
    tx.prepare_cached(
        "INSERT INTO checkpoints (thread_id, n, step, seq, kind, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )
    .and_then(|mut s| s.execute(params![c.thread, n, c.step, c.seq, kind, text]))?;
    Ok(n)
}

fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests;
