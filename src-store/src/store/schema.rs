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
    // 2: the per-tick records as append-only rowid tables, read in the
    // order they were written (`id`). A `WITHOUT ROWID` table keyed on
    // (thread, number) splits its last leaf by rebalancing it with its
    // neighbours, so appending one tick rewrote about five of its pages; a
    // rowid table appends to a new leaf. A tick's events are one row (a
    // JSON array). Only full checkpoints are indexed (a resume starts from
    // the newest and reads the deltas after it by `id`), so a tick writes
    // no index page. The ledger is keyed by its goal id alone (which names
    // its thread, step and op): one b-tree where there were three.
    "CREATE TABLE event_batches (
        id        INTEGER PRIMARY KEY,
        thread_id TEXT NOT NULL REFERENCES threads(id),
        first_seq INTEGER NOT NULL,
        last_seq  INTEGER NOT NULL,
        step      INTEGER NOT NULL,
        body      TEXT NOT NULL
    );
    INSERT INTO event_batches (thread_id, first_seq, last_seq, step, body)
        SELECT thread_id, seq, seq, step, '[' || body || ']' FROM events ORDER BY thread_id, seq;
    DROP TABLE events;
    CREATE TABLE checkpoints_log (
        id        INTEGER PRIMARY KEY,
        thread_id TEXT NOT NULL REFERENCES threads(id),
        n         INTEGER NOT NULL,
        step      INTEGER NOT NULL,
        seq       INTEGER NOT NULL,
        kind      TEXT NOT NULL CHECK (kind IN ('full', 'delta')),
        body      TEXT NOT NULL
    );
    INSERT INTO checkpoints_log (thread_id, n, step, seq, kind, body)
        SELECT thread_id, n, step, seq, kind, body FROM checkpoints ORDER BY thread_id, n;
    DROP TABLE checkpoints;
    ALTER TABLE checkpoints_log RENAME TO checkpoints;
    CREATE UNIQUE INDEX checkpoints_full ON checkpoints (thread_id, n) WHERE kind = 'full';
    CREATE TABLE ledger_by_goal (
        goal_id    TEXT PRIMARY KEY,
        thread_id  TEXT NOT NULL REFERENCES threads(id),
        step       INTEGER NOT NULL,
        op         INTEGER NOT NULL,
        skill      TEXT NOT NULL,
        request    TEXT NOT NULL,
        status     TEXT NOT NULL CHECK (status IN ('started', 'accepted', 'done')),
        result     TEXT,
        updated_ms INTEGER NOT NULL
    ) WITHOUT ROWID;
    INSERT INTO ledger_by_goal
        SELECT goal_id, thread_id, step, op, skill, request, status, result, updated_ms FROM ledger;
    DROP TABLE ledger;
    ALTER TABLE ledger_by_goal RENAME TO ledger;",
    // 3: each event record's CRC-32 (of its body's bytes), so that a
    // resume verifies a thread's whole history by checksum instead of
    // parsing every record; records written before have none and are
    // parsed as before.
    "ALTER TABLE event_batches ADD COLUMN crc INTEGER;",
];

/// The schema version this build writes.
pub fn current_version() -> u32 {
    MIGRATIONS.len() as u32
}
