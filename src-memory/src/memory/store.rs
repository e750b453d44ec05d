//! The memory database (`<memory dir>/memory.db`, SQLite in WAL mode) with
//! its own versioned migrations (`PRAGMA user_version`), apart from the run
//! store: memory outlives runs and threads, and a separate chain keeps the
//! run store's migrations free for other features. Append migrations; never
//! edit a released one.
//!
//! Every message is kept (`messages`); long-term memories (`memories`) are
//! archived, never deleted, when evicted; preferences and session state
//! have their own tables ([`super::prefs`]).

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{MemoryError, now_ms};

/// The migrations, oldest first.
const MIGRATIONS: &[&str] = &[
    // 1: messages, long-term memories, preferences, session state.
    "CREATE TABLE messages (
        id         INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        window_id  INTEGER NOT NULL,
        turn_id    TEXT NOT NULL,
        role       TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
        content    TEXT NOT NULL,
        ts_ms      INTEGER NOT NULL
    );
    CREATE INDEX messages_session ON messages(session_id, id);
    CREATE TABLE memories (
        id           INTEGER PRIMARY KEY,
        kind         TEXT NOT NULL,
        content      TEXT NOT NULL,
        original     TEXT NOT NULL,
        analysis     TEXT NOT NULL,
        metadata     TEXT NOT NULL,
        session_id   TEXT NOT NULL,
        window_id    INTEGER NOT NULL,
        created_ms   INTEGER NOT NULL,
        last_used_ms INTEGER NOT NULL,
        uses         INTEGER NOT NULL DEFAULT 0,
        archived_ms  INTEGER
    );
    CREATE INDEX memories_live ON memories(archived_ms, last_used_ms);
    CREATE TABLE prefs (
        key        TEXT PRIMARY KEY,
        value      TEXT NOT NULL,
        source     TEXT NOT NULL,
        reason     TEXT NOT NULL,
        updated_ms INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE session_state (
        session_id TEXT NOT NULL,
        key        TEXT NOT NULL,
        value      TEXT NOT NULL,
        updated_ms INTEGER NOT NULL,
        PRIMARY KEY (session_id, key)
    ) WITHOUT ROWID;",
];

/// One conversation message (seed 004's ConversationMessage).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// `user` or `assistant`.
    pub role: String,
    /// What was said.
    pub content: String,
    /// Wall ms.
    pub ts_ms: u64,
    /// The turn it belongs to.
    pub turn_id: String,
    /// The session.
    pub session_id: String,
    /// The window it fell in.
    pub window_id: u64,
}

#[cfg(test)]
impl Message {
    /// A message of session `s`, window 0, for tests.
    pub(crate) fn said(role: &str, content: &str) -> Self {
        Self {
            role: role.into(),
            content: content.into(),
            ts_ms: 0,
            turn_id: String::new(),
            session_id: "s".into(),
            window_id: 0,
        }
    }
}

/// A long-term memory to store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewMemory {
    /// `conversation_summary`, `note`, `imported`.
    pub kind: String,
    /// The searchable text (the summary).
    pub content: String,
    /// What it was made from.
    pub original: String,
    /// The analyzer's result.
    pub analysis: Value,
    /// Anything else (who summarised, which window).
    pub metadata: Value,
    /// The session it came from.
    pub session_id: String,
    /// The window it came from.
    pub window_id: u64,
}

/// A stored long-term memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryRow {
    /// Its id (the index's document id).
    pub id: u64,
    /// What it is.
    pub kind: String,
    /// The searchable text.
    pub content: String,
    /// The analysis.
    pub analysis: Value,
    /// Metadata.
    pub metadata: Value,
    /// The session it came from.
    pub session_id: String,
    /// Wall ms it was made.
    pub created_ms: u64,
    /// Times it was retrieved for the model.
    pub uses: u64,
}

/// Counts for `memory stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DbStats {
    /// Messages kept.
    pub messages: u64,
    /// Sessions seen.
    pub sessions: u64,
    /// Searchable long-term memories.
    pub memories: u64,
    /// Evicted (archived, not searchable) memories.
    pub archived: u64,
    /// Preferences.
    pub prefs: u64,
}

/// The memory database.
pub struct MemoryDb {
    conn: Connection,
    path: PathBuf,
}

impl MemoryDb {
    /// Opens (creating and migrating) the database at `path`.
    pub fn open(path: &Path) -> Result<Self, MemoryError> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| MemoryError::Io {
                path: parent.to_path_buf(),
                detail: e.to_string(),
            })?;
        }
        let conn = Connection::open(path).map_err(|e| db(path, &e))?;
        let this = Self {
            conn,
            path: path.to_path_buf(),
        };
        this.migrate()?;
        Ok(this)
    }

    /// A database in RAM.
    pub fn in_memory() -> Result<Self, MemoryError> {
        let path = PathBuf::from(":memory:");
        let conn = Connection::open_in_memory().map_err(|e| db(&path, &e))?;
        let this = Self { conn, path };
        this.migrate()?;
        Ok(this)
    }

    fn migrate(&self) -> Result<(), MemoryError> {
        let e = |x: rusqlite::Error| db(&self.path, &x);
        self.conn
            .execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")
            .map_err(e)?;
        let version: u32 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|x| MemoryError::Db {
                path: self.path.clone(),
                detail: format!("not a memory database ({x})"),
            })?;
        let supported = MIGRATIONS.len() as u32;
        if version > supported {
            return Err(MemoryError::Db {
                path: self.path.clone(),
                detail: format!(
                    "schema version {version} is newer than this robobrain supports ({supported})"
                ),
            });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            let tx = self.conn.unchecked_transaction().map_err(e)?;
            tx.execute_batch(sql).map_err(e)?;
            tx.execute_batch(&format!("PRAGMA user_version = {}", i + 1))
                .map_err(e)?;
            tx.commit().map_err(e)?;
        }
        Ok(())
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection (for [`super::prefs`]).
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    fn err(&self, e: &rusqlite::Error) -> MemoryError {
        db(&self.path, e)
    }

    /// Keeps a message.
    pub fn add_message(&self, m: &Message) -> Result<(), MemoryError> {
        self.conn
            .execute(
                "INSERT INTO messages (session_id, window_id, turn_id, role, content, ts_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    m.session_id,
                    m.window_id as i64,
                    m.turn_id,
                    m.role,
                    m.content,
                    m.ts_ms as i64
                ],
            )
            .map_err(|e| self.err(&e))?;
        Ok(())
    }

    /// The last `n` messages of `session`, oldest first.
    pub fn last_messages(&self, session: &str, n: usize) -> Result<Vec<Message>, MemoryError> {
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT role, content, ts_ms, turn_id, session_id, window_id FROM messages
                 WHERE session_id = ?1 ORDER BY id DESC LIMIT ?2",
            )
            .map_err(|e| self.err(&e))?;
        let mut rows: Vec<Message> = st
            .query_map(params![session, n as i64], |r| {
                Ok(Message {
                    role: r.get(0)?,
                    content: r.get(1)?,
                    ts_ms: r.get::<_, i64>(2)? as u64,
                    turn_id: r.get(3)?,
                    session_id: r.get(4)?,
                    window_id: r.get::<_, i64>(5)? as u64,
                })
            })
            .and_then(Iterator::collect)
            .map_err(|e| self.err(&e))?;
        rows.reverse();
        Ok(rows)
    }

    /// Stores a memory; its id.
    pub fn add_memory(&mut self, m: &NewMemory) -> Result<u64, MemoryError> {
        Ok(self
            .add_memories(std::slice::from_ref(m))?
            .first()
            .copied()
            .unwrap_or(0))
    }

    /// Stores many memories in one transaction (imports); their ids.
    pub fn add_memories(&mut self, ms: &[NewMemory]) -> Result<Vec<u64>, MemoryError> {
        let path = self.path.clone();
        let tx = self.conn.transaction().map_err(|e| db(&path, &e))?;
        let mut ids = Vec::with_capacity(ms.len());
        {
            let now = now_ms() as i64;
            let mut st = tx
                .prepare_cached(
                    "INSERT INTO memories (kind, content, original, analysis, metadata, session_id,
                                           window_id, created_ms, last_used_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
                )
                .map_err(|e| db(&path, &e))?;
            for m in ms {
                st.execute(params![
                    m.kind,
                    m.content,
                    m.original,
                    m.analysis.to_string(),
                    m.metadata.to_string(),
                    m.session_id,
                    m.window_id as i64,
                    now
                ])
                .map_err(|e| db(&path, &e))?;
                ids.push(tx.last_insert_rowid() as u64);
            }
        }
        tx.commit().map_err(|e| db(&path, &e))?;
        Ok(ids)
    }

    /// The searchable memories: id and text.
    pub fn live(&self) -> Result<Vec<(u64, String)>, MemoryError> {
        let mut st = self
            .conn
            .prepare("SELECT id, content FROM memories WHERE archived_ms IS NULL ORDER BY id")
            .map_err(|e| self.err(&e))?;
        st.query_map([], |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)))
            .and_then(Iterator::collect)
            .map_err(|e| self.err(&e))
    }

    /// The memory `id`, archived or not.
    pub fn memory(&self, id: u64) -> Result<Option<MemoryRow>, MemoryError> {
        self.conn
            .query_row(
                "SELECT id, kind, content, analysis, metadata, session_id, created_ms, uses
                 FROM memories WHERE id = ?1",
                [id as i64],
                |r| {
                    Ok(MemoryRow {
                        id: r.get::<_, i64>(0)? as u64,
                        kind: r.get(1)?,
                        content: r.get(2)?,
                        analysis: serde_json::from_str(&r.get::<_, String>(3)?)
                            .unwrap_or(Value::Null),
                        metadata: serde_json::from_str(&r.get::<_, String>(4)?)
                            .unwrap_or(Value::Null),
                        session_id: r.get(5)?,
                        created_ms: r.get::<_, i64>(6)? as u64,
                        uses: r.get::<_, i64>(7)? as u64,
                    })
                },
            )
            .optional()
            .map_err(|e| self.err(&e))
    }

    /// The newest `n` memories of `session` (summaries of its closed windows), oldest first.
    pub fn session_memories(&self, session: &str, n: usize) -> Result<Vec<MemoryRow>, MemoryError> {
        let ids: Vec<i64> = {
            let mut st = self
                .conn
                .prepare_cached(
                    "SELECT id FROM memories WHERE session_id = ?1 ORDER BY id DESC LIMIT ?2",
                )
                .map_err(|e| self.err(&e))?;
            st.query_map(params![session, n as i64], |r| r.get(0))
                .and_then(Iterator::collect)
                .map_err(|e| self.err(&e))?
        };
        let mut out = Vec::new();
        for id in ids.into_iter().rev() {
            if let Some(m) = self.memory(id as u64)? {
                out.push(m);
            }
        }
        Ok(out)
    }

    /// Marks `ids` as used now (retrieved for the model).
    pub fn touch(&self, ids: &[u64]) -> Result<(), MemoryError> {
        let now = now_ms() as i64;
        for id in ids {
            self.conn
                .execute(
                    "UPDATE memories SET uses = uses + 1, last_used_ms = ?2 WHERE id = ?1",
                    params![*id as i64, now],
                )
                .map_err(|e| self.err(&e))?;
        }
        Ok(())
    }

    /// Archives the least recently used memories beyond `max` searchable
    /// ones (oldest first on a tie); their ids. Archived rows stay in the
    /// database (`memory stats` counts them).
    pub fn evict_over(&self, max: usize) -> Result<Vec<u64>, MemoryError> {
        let live: i64 = self
            .conn
            .query_row(
                "SELECT count(*) FROM memories WHERE archived_ms IS NULL",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.err(&e))?;
        let over = live - max as i64;
        if over <= 0 {
            return Ok(Vec::new());
        }
        let ids: Vec<i64> = {
            let mut st = self
                .conn
                .prepare(
                    "SELECT id FROM memories WHERE archived_ms IS NULL
                     ORDER BY last_used_ms, id LIMIT ?1",
                )
                .map_err(|e| self.err(&e))?;
            st.query_map([over], |r| r.get(0))
                .and_then(Iterator::collect)
                .map_err(|e| self.err(&e))?
        };
        let now = now_ms() as i64;
        for id in &ids {
            self.conn
                .execute(
                    "UPDATE memories SET archived_ms = ?2 WHERE id = ?1",
                    params![id, now],
                )
                .map_err(|e| self.err(&e))?;
        }
        Ok(ids.into_iter().map(|i| i as u64).collect())
    }

    /// Counts.
    pub fn stats(&self) -> Result<DbStats, MemoryError> {
        let count = |sql: &str| -> Result<u64, MemoryError> {
            self.conn
                .query_row(sql, [], |r| r.get::<_, i64>(0))
                .map(|n| n as u64)
                .map_err(|e| self.err(&e))
        };
        Ok(DbStats {
            messages: count("SELECT count(*) FROM messages")?,
            sessions: count("SELECT count(DISTINCT session_id) FROM messages")?,
            memories: count("SELECT count(*) FROM memories WHERE archived_ms IS NULL")?,
            archived: count("SELECT count(*) FROM memories WHERE archived_ms IS NOT NULL")?,
            prefs: count("SELECT count(*) FROM prefs")?,
        })
    }
}

impl MemoryDb {
    /// Searchable memories and messages kept: the snapshot's `memory`.
    pub fn size(&self) -> Result<crate::protocol::MemorySize, MemoryError> {
        let count = |sql: &str| -> Result<u64, MemoryError> {
            self.conn
                .query_row(sql, [], |r| r.get::<_, i64>(0))
                .map(|n| n as u64)
                .map_err(|e| self.err(&e))
        };
        Ok(crate::protocol::MemorySize {
            memories: count("SELECT count(*) FROM memories WHERE archived_ms IS NULL")?,
            messages: count("SELECT count(*) FROM messages")?,
        })
    }
}

fn db(path: &Path, e: &dyn std::fmt::Display) -> MemoryError {
    MemoryError::Db {
        path: path.to_path_buf(),
        detail: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn memory(text: &str) -> NewMemory {
        NewMemory {
            kind: "note".into(),
            content: text.into(),
            original: text.into(),
            analysis: json!({}),
            metadata: json!({}),
            session_id: "s".into(),
            window_id: 0,
        }
    }

    #[test]
    fn memory_db_keeps_messages_and_archives_the_least_recently_used() {
        let mut db = MemoryDb::in_memory().unwrap();
        for (i, role) in ["user", "assistant", "user"].iter().enumerate() {
            db.add_message(&Message {
                role: (*role).into(),
                content: format!("m{i}"),
                ts_ms: i as u64,
                turn_id: format!("t{i}"),
                session_id: "s".into(),
                window_id: 0,
            })
            .unwrap();
        }
        let last = db.last_messages("s", 2).unwrap();
        assert_eq!(
            last.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(),
            ["m1", "m2"]
        );
        let a = db.add_memory(&memory("a")).unwrap();
        let b = db.add_memory(&memory("b")).unwrap();
        let c = db.add_memory(&memory("c")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(3));
        db.touch(&[a]).unwrap();
        assert_eq!(db.evict_over(2).unwrap(), [b]);
        assert_eq!(
            db.live().unwrap().iter().map(|m| m.0).collect::<Vec<_>>(),
            [a, c]
        );
        let s = db.stats().unwrap();
        assert_eq!((s.messages, s.memories, s.archived), (3, 2, 1));
        assert_eq!(db.memory(b).unwrap().map(|m| m.content), Some("b".into()));
    }

    #[test]
    fn memory_db_refuses_a_file_that_is_not_a_database() {
        let dir = std::env::temp_dir().join(format!("rb-memdb-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("memory.db");
        std::fs::write(&path, b"this is not sqlite at all, not even close........").unwrap();
        let e = MemoryDb::open(&path).err().unwrap().to_string();
        assert!(e.contains("memory.db"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
