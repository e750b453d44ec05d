//! Versioned migrations. `PRAGMA user_version` holds the number of
//! migrations applied; each runs once, in order, in one transaction.
//! Append new migrations; never edit a released one.

/// The migrations, oldest first. The schema version is their count.
pub const MIGRATIONS: &[&str] = &[
    // 1: threads, checkpoints, the side-effect ledger, approvals and events.
    "CREATE TABLE threads (
        id               TEXT PRIMARY KEY,
        status           TEXT NOT NULL,
        mode             TEXT NOT NULL,
        last_step        INTEGER NOT NULL DEFAULT 0,
        last_seq         INTEGER NOT NULL DEFAULT 0,
        pending_approval TEXT,
        created_ms       INTEGER NOT NULL,
        updated_ms       INTEGER NOT NULL
    );
    CREATE TABLE checkpoints (
        thread_id TEXT NOT NULL REFERENCES threads(id),
        n         INTEGER NOT NULL,
        step      INTEGER NOT NULL,
        seq       INTEGER NOT NULL,
        kind      TEXT NOT NULL CHECK (kind IN ('full', 'delta')),
        body      TEXT NOT NULL,
        PRIMARY KEY (thread_id, n)
    ) WITHOUT ROWID;
    CREATE TABLE ledger (
        thread_id  TEXT NOT NULL REFERENCES threads(id),
        step       INTEGER NOT NULL,
        op         INTEGER NOT NULL,
        goal_id    TEXT NOT NULL UNIQUE,
        skill      TEXT NOT NULL,
        request    TEXT NOT NULL,
        status     TEXT NOT NULL CHECK (status IN ('started', 'accepted', 'done')),
        result     TEXT,
        updated_ms INTEGER NOT NULL,
        PRIMARY KEY (thread_id, step, op)
    );
    CREATE TABLE approvals (
        thread_id   TEXT NOT NULL REFERENCES threads(id),
        approval_id TEXT NOT NULL,
        task_id     TEXT NOT NULL,
        op          TEXT NOT NULL,
        reason      TEXT NOT NULL,
        status      TEXT NOT NULL,
        updated_ms  INTEGER NOT NULL,
        PRIMARY KEY (thread_id, approval_id)
    ) WITHOUT ROWID;
    CREATE TABLE events (
        thread_id TEXT NOT NULL REFERENCES threads(id),
        seq       INTEGER NOT NULL,
        step      INTEGER NOT NULL,
        kind      TEXT NOT NULL,
        body      TEXT NOT NULL,
        PRIMARY KEY (thread_id, seq)
    ) WITHOUT ROWID;",
];

/// The schema version this build writes.
pub fn current_version() -> u32 {
    MIGRATIONS.len() as u32
}
