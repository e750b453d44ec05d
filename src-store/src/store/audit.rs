//! The audit log of tool calls (seed 001 §3.2, §6): one row per call —
//! trace, session, plan and step ids, the tool, a summary of its arguments,
//! the result and the latency, and where the request came from (its
//! [`Origin`](crate::protocol::Origin), in words). Kept in the same SQLite file as the rest of
//! the store (its own connection, WAL lets both write). The table is created
//! with `IF NOT EXISTS` when the log opens rather than as a numbered
//! migration, so that branches adding migrations of their own merge cleanly.

use std::path::Path;

use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

use super::{StoreError, Synchronous, checkpointer};

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS audit (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    at_ms        INTEGER NOT NULL,
    trace_id     TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    plan_id      TEXT NOT NULL,
    step_id      TEXT NOT NULL,
    tool         TEXT NOT NULL,
    args_summary TEXT NOT NULL,
    result       TEXT NOT NULL,
    ok           INTEGER NOT NULL,
    latency_us   INTEGER NOT NULL,
    origin       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS audit_trace ON audit(trace_id);";

/// The `origin` column, for a table made before it existed.
const ADD_ORIGIN: &str = "ALTER TABLE audit ADD COLUMN origin TEXT NOT NULL DEFAULT ''";

/// The `result` of a row written before its call goes out: the call is
/// under way — or the brain stopped before it ended, and a resume finds the
/// row with [`AuditLog::unfinished`] and settles it. A row never says a call
/// ended before it did.
pub const STARTED: &str = "started";

/// One audited tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRow {
    /// Row id (0 before it is written).
    pub id: i64,
    /// Wall clock, Unix milliseconds.
    pub at_ms: i64,
    /// The run (thread) it belongs to.
    pub trace_id: String,
    /// The conversation.
    pub session_id: String,
    /// The plan.
    pub plan_id: String,
    /// The step in the plan.
    pub step_id: String,
    /// The tool (`devices.invoke`).
    pub tool: String,
    /// Its arguments, shortened.
    pub args_summary: String,
    /// `ok …`, `confirmation_required …`, or the error code and message.
    pub result: String,
    /// Whether it succeeded.
    pub ok: bool,
    /// Wall microseconds the call took.
    pub latency_us: i64,
    /// Where the request came from, in words (`web: ws#3 127.0.0.1:51234`;
    /// empty when nobody asked: the robot's own task, or a row written
    /// before origins were kept).
    #[serde(default)]
    pub origin: String,
}

/// Which rows to list (every filter given must hold).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditFilter {
    /// Only this trace.
    pub trace_id: Option<String>,
    /// Only this plan.
    pub plan_id: Option<String>,
    /// Only tools whose name contains this.
    pub tool: Option<String>,
    /// Only failures (true) or successes (false).
    pub ok: Option<bool>,
    /// At most this many, newest last.
    pub limit: Option<u32>,
}

/// The audit table.
pub struct AuditLog {
    /// Its own WAL checkpoints, as the store's (declared first: dropped,
    /// and its thread joined, before `conn` closes).
    checkpoints: std::cell::RefCell<checkpointer::Schedule>,
    conn: Connection,
    path: std::path::PathBuf,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl AuditLog {
    /// Opens the log in the database at `path` (created when absent), its
    /// commits waiting for the disk as the default store's do.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_with(path, Synchronous::default())
    }

    /// Opens the log in the database at `path` with the store's settings:
    /// WAL, `synchronous` as given, no automatic checkpoint inside a
    /// commit, its own background checkpointer.
    pub fn open_with(path: &Path, synchronous: Synchronous) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::CannotOpen {
                path: path.to_path_buf(),
                detail: format!("cannot create {}: {e}", dir.display()),
            })?;
        }
        let conn = super::open_connection(path).map_err(|e| StoreError::from_sqlite(path, e))?;
        Self::setup(conn, path, synchronous)
    }

    /// A log in memory (tests, scenarios without a database).
    pub fn in_memory() -> Result<Self, StoreError> {
        let path = Path::new(":memory:");
        let conn = Connection::open_in_memory().map_err(|e| StoreError::from_sqlite(path, e))?;
        Self::setup(conn, path, Synchronous::default())
    }

    fn setup(
        mut conn: Connection,
        path: &Path,
        synchronous: Synchronous,
    ) -> Result<Self, StoreError> {
        let err = |e| StoreError::from_sqlite(path, e);
        // The audit rows go into the run's database during a tick: the
        // same settings as the store's connection, so they meet the WAL
        // checkpointer as its commits do and never checkpoint in a tick.
        // Each audit row records a home tool call, an effect: under
        // `Effects` it is synced as the store's commits of effects are.
        let synchronous = match synchronous {
            Synchronous::Effects => Synchronous::Full,
            other => other,
        };
        super::configure(&mut conn, synchronous).map_err(err)?;
        conn.execute_batch(SCHEMA).map_err(err)?;
        let has_origin = conn
            .prepare("SELECT 1 FROM pragma_table_info('audit') WHERE name = 'origin'")
            .and_then(|mut s| s.exists([]))
            .map_err(err)?;
        if !has_origin {
            conn.execute_batch(ADD_ORIGIN).map_err(err)?;
        }
        Ok(Self {
            checkpoints: std::cell::RefCell::default(),
            conn,
            path: path.to_path_buf(),
        })
    }

    /// Appends a row; returns its id.
    pub fn record(&self, row: &AuditRow) -> Result<i64, StoreError> {
        self.conn
            .execute(
                "INSERT INTO audit (at_ms, trace_id, session_id, plan_id, step_id, tool, args_summary, result, ok, latency_us, origin)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    row.at_ms,
                    row.trace_id,
                    row.session_id,
                    row.plan_id,
                    row.step_id,
                    row.tool,
                    row.args_summary,
                    row.result,
                    row.ok,
                    row.latency_us,
                    row.origin
                ],
            )
            .map_err(|e| StoreError::from_sqlite(&self.path, e))?;
        self.checkpoints.borrow_mut().after_commit(&self.path);
        Ok(self.conn.last_insert_rowid())
    }

    /// Ends the row `id` (written with the result [`STARTED`] before the call
    /// went out): what the call did, whether it succeeded, how long it took.
    pub fn finish(
        &self,
        id: i64,
        result: &str,
        ok: bool,
        latency_us: i64,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE audit SET result = ?2, ok = ?3, latency_us = ?4 WHERE id = ?1",
                params![id, result, ok, latency_us],
            )
            .map_err(|e| StoreError::from_sqlite(&self.path, e))?;
        self.checkpoints.borrow_mut().after_commit(&self.path);
        Ok(())
    }

    /// The rows of the run `trace_id` whose call never ended on record
    /// (still [`STARTED`]), oldest first.
    pub fn unfinished(&self, trace_id: &str) -> Result<Vec<AuditRow>, StoreError> {
        let rows = self.list(&AuditFilter {
            trace_id: Some(trace_id.to_string()),
            ok: Some(false),
            ..AuditFilter::default()
        })?;
        Ok(rows.into_iter().filter(|r| r.result == STARTED).collect())
    }

    /// The rows that pass `filter`, oldest first (the newest `limit` when given).
    pub fn list(&self, filter: &AuditFilter) -> Result<Vec<AuditRow>, StoreError> {
        let sql = "SELECT id, at_ms, trace_id, session_id, plan_id, step_id, tool, args_summary, result, ok, latency_us, origin
             FROM audit
             WHERE (?1 IS NULL OR trace_id = ?1)
               AND (?2 IS NULL OR plan_id = ?2)
               AND (?3 IS NULL OR instr(tool, ?3) > 0)
               AND (?4 IS NULL OR ok = ?4)
             ORDER BY id DESC LIMIT ?5";
        let err = |e| StoreError::from_sqlite(&self.path, e);
        let mut stmt = self.conn.prepare(sql).map_err(err)?;
        let limit = i64::from(filter.limit.unwrap_or(u32::MAX));
        let rows = stmt
            .query_map(
                params![
                    filter.trace_id,
                    filter.plan_id,
                    filter.tool,
                    filter.ok,
                    limit
                ],
                |r| {
                    Ok(AuditRow {
                        id: r.get(0)?,
                        at_ms: r.get(1)?,
                        trace_id: r.get(2)?,
                        session_id: r.get(3)?,
                        plan_id: r.get(4)?,
                        step_id: r.get(5)?,
                        tool: r.get(6)?,
                        args_summary: r.get(7)?,
                        result: r.get(8)?,
                        ok: r.get(9)?,
                        latency_us: r.get(10)?,
                        origin: r.get(11)?,
                    })
                },
            )
            .map_err(err)?;
        let mut out: Vec<AuditRow> = rows.collect::<Result<_, _>>().map_err(err)?;
        out.reverse();
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(tool: &str, ok: bool) -> AuditRow {
        AuditRow {
            id: 0,
            at_ms: 1,
            trace_id: "t1".into(),
            session_id: "s1".into(),
            plan_id: "p1".into(),
            step_id: "1".into(),
            tool: tool.into(),
            args_summary: "{}".into(),
            result: if ok { "ok".into() } else { "offline".into() },
            ok,
            latency_us: 12,
            origin: "web: ws#1 127.0.0.1:5000".into(),
        }
    }

    #[test]
    fn rows_are_kept_in_a_file_and_filtered() {
        let dir = std::env::temp_dir().join(format!("rb-audit-{}", std::process::id()));
        let path = dir.join("a.db");
        let _ = std::fs::remove_file(&path);
        {
            let log = AuditLog::open(&path).unwrap();
            log.record(&row("devices.invoke", true)).unwrap();
            log.record(&row("devices.get_state", true)).unwrap();
            log.record(&row("devices.invoke", false)).unwrap();
        }
        let log = AuditLog::open(&path).unwrap();
        assert_eq!(log.list(&AuditFilter::default()).unwrap().len(), 3);
        let failed = log
            .list(&AuditFilter {
                ok: Some(false),
                ..AuditFilter::default()
            })
            .unwrap();
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].result, "offline");
        let invokes = log
            .list(&AuditFilter {
                tool: Some("invoke".into()),
                limit: Some(1),
                ..AuditFilter::default()
            })
            .unwrap();
        assert_eq!(invokes.len(), 1);
        assert!(!invokes[0].ok, "the newest one");
        assert_eq!(invokes[0].origin, "web: ws#1 127.0.0.1:5000");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A table made before origins were kept gains the column; its old
    /// rows read back with none.
    #[test]
    fn a_table_from_before_origins_gains_the_column() {
        let dir = std::env::temp_dir().join(format!("rb-audit-old-{}", std::process::id()));
        let path = dir.join("a.db");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(&SCHEMA.replace(",\n    origin       TEXT NOT NULL DEFAULT ''", ""))
                .unwrap();
            conn.execute(
                "INSERT INTO audit (at_ms, trace_id, session_id, plan_id, step_id, tool, args_summary, result, ok, latency_us)
                 VALUES (1, 't', 's', 'p', '1', 'devices.invoke', '{}', 'ok', 1, 3)",
                [],
            )
            .unwrap();
        }
        let log = AuditLog::open(&path).unwrap();
        log.record(&row("devices.invoke", true)).unwrap();
        let rows = log.list(&AuditFilter::default()).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].origin, "");
        assert_eq!(rows[1].origin, "web: ws#1 127.0.0.1:5000");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The audit connection writes the run's database with the store's
    /// settings: WAL, `synchronous` as the store's (under `effects` every
    /// audit row, the record of a home tool call, is synced), and no
    /// checkpoint inside a commit (SQLite's default would copy the WAL on
    /// the tick thread).
    #[test]
    fn the_log_writes_with_the_stores_settings() {
        let dir = std::env::temp_dir().join(format!("rb-audit-settings-{}", std::process::id()));
        let path = dir.join("a.db");
        let _ = std::fs::remove_dir_all(&dir);
        for (synchronous, level) in [
            (Synchronous::Normal, 1),
            (Synchronous::Full, 2),
            (Synchronous::Effects, 2),
        ] {
            let store = crate::store::Store::open(&path, synchronous).unwrap();
            let log = AuditLog::open_with(store.path(), store.synchronous()).unwrap();
            let pragma = |name: &str| -> String {
                log.conn
                    .query_row(&format!("PRAGMA {name}"), [], |r| {
                        r.get::<_, rusqlite::types::Value>(0)
                    })
                    .map(|v| match v {
                        rusqlite::types::Value::Integer(i) => i.to_string(),
                        rusqlite::types::Value::Text(t) => t,
                        other => format!("{other:?}"),
                    })
                    .unwrap()
            };
            assert_eq!(pragma("journal_mode"), "wal");
            assert_eq!(pragma("synchronous"), level.to_string());
            assert_eq!(pragma("wal_autocheckpoint"), "0");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_row_started_before_its_call_is_ended_or_found_unfinished() {
        let log = AuditLog::in_memory().unwrap();
        let mut started = row("devices.invoke", false);
        started.result = STARTED.into();
        let a = log.record(&started).unwrap();
        let b = log.record(&started).unwrap();
        assert_eq!(log.unfinished("t1").unwrap().len(), 2);
        log.finish(a, "ok", true, 42).unwrap();
        let open = log.unfinished("t1").unwrap();
        assert_eq!(open.iter().map(|r| r.id).collect::<Vec<_>>(), [b]);
        let done = log
            .list(&AuditFilter {
                ok: Some(true),
                ..AuditFilter::default()
            })
            .unwrap();
        assert_eq!(
            (done[0].id, done[0].result.as_str(), done[0].latency_us),
            (a, "ok", 42)
        );
        assert!(log.unfinished("another run").unwrap().is_empty());
    }
}
