use serde_json::json;

use super::*;
use crate::link::{GoalKind, LinkRequest};
use crate::protocol::EventKind;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rb-store-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("robobrain.db")
}

fn event(seq: u64, step: u64) -> Event {
    Event {
        seq,
        time: 0.0,
        wall_ms: 0,
        thread_id: "t".into(),
        step,
        origin: None,
        kind: EventKind::Log {
            level: "info".into(),
            message: format!("event {seq}"),
        },
    }
}

fn row() -> ThreadRow {
    ThreadRow {
        status: "running".into(),
        mode: "EXEC".into(),
        pending_approval: None,
    }
}

fn commit(store: &mut Store, seq: u64, body: Option<CheckpointBody>) {
    store
        .commit(&Commit {
            thread: "t",
            step: seq * 2,
            seq,
            checkpoint: body,
            events: &[event(seq, seq * 2)],
            started: &[],
            updates: &[],
            row: row(),
            outward: false,
        })
        .unwrap();
}

#[test]
fn checkpoints_rebuild_from_the_last_full_one_and_its_deltas() {
    let mut store = Store::in_memory().unwrap();
    store.create_thread("t", "IDLE").unwrap();
    let v0 = json!({"state": {"time": 0.0, "queue": [1, 2]}, "runner": {"running": []}});
    let v1 = json!({"state": {"time": 0.1, "queue": [1, 2]}, "runner": {"running": []}});
    let v2 = json!({"state": {"time": 0.2, "queue": [1, 2, 3]}, "runner": {"running": []}});
    commit(&mut store, 1, Some(CheckpointBody::Full(v0.clone())));
    commit(
        &mut store,
        2,
        Some(CheckpointBody::Delta(delta::diff(&v0, &v1))),
    );
    commit(
        &mut store,
        3,
        Some(CheckpointBody::Delta(delta::diff(&v1, &v2))),
    );
    let r = store.restore("t").unwrap().unwrap();
    assert_eq!((r.step, r.seq, r.count), (6, 3, 3));
    assert_eq!(r.state, v2);
    let events = store.events("t").unwrap();
    assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
    // Retention: the newest checkpoints stay, the newest is full.
    store.finish("t", &v2, 2).unwrap();
    let (n, _) = store.checkpoint_bytes("t").unwrap();
    assert_eq!(n, 2);
    assert_eq!(store.restore("t").unwrap().unwrap().state, v2);
    assert_eq!(store.thread("t").unwrap().status, "finished");
}

#[test]
fn the_ledger_moves_from_started_to_done_in_commits() {
    let mut store = Store::in_memory().unwrap();
    store.create_thread("t", "IDLE").unwrap();
    let request = LinkRequest::SendGoal {
        goal_id: "t/g4.0".into(),
        kind: GoalKind::Dock,
    };
    let entry = LedgerEntry {
        step: 4,
        op: 0,
        goal_id: "t/g4.0".into(),
        skill: "dock".into(),
        request: request.clone(),
        status: LedgerStatus::Started,
        result: None,
    };
    let c = Commit {
        thread: "t",
        step: 4,
        seq: 1,
        checkpoint: None,
        events: &[],
        started: std::slice::from_ref(&entry),
        updates: &[],
        row: row(),
        outward: true,
    };
    store.commit(&c).unwrap();
    assert_eq!(store.open_ledger("t").unwrap(), vec![entry.clone()]);
    // The same key again is refused: one side effect, one row.
    assert!(store.commit(&c).is_err());
    let done = [(
        "t/g4.0".to_string(),
        LedgerStatus::Done,
        Some(json!({"status": "succeeded"})),
    )];
    store
        .commit(&Commit {
            updates: &done,
            started: &[],
            seq: 2,
            ..c
        })
        .unwrap();
    assert!(store.open_ledger("t").unwrap().is_empty());
    let all = store.ledger("t").unwrap();
    assert_eq!(all[0].status, LedgerStatus::Done);
    assert_eq!(all[0].request, request);
}

#[test]
fn a_resume_of_an_unknown_thread_lists_the_known_ones() {
    let mut store = Store::in_memory().unwrap();
    let e = store.thread("nope").unwrap_err();
    assert_eq!(
        e.to_string(),
        ":memory:: no thread `nope` to resume; the database holds no threads yet"
    );
    store.create_thread("patrol-1", "IDLE").unwrap();
    let e = store.thread("nope").unwrap_err();
    assert!(e.to_string().ends_with("known threads: patrol-1"), "{e}");
    let e = store.create_thread("patrol-1", "IDLE").unwrap_err();
    assert!(
        e.to_string()
            .contains("thread `patrol-1` already exists; add --resume"),
        "{e}"
    );
}

#[test]
fn a_corrupt_file_is_named_and_refused() {
    let path = temp("corrupt");
    std::fs::write(&path, vec![0x5a_u8; 8192]).unwrap();
    let e = Store::open(&path, Synchronous::Normal).unwrap_err();
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");
    let text = e.to_string();
    assert!(text.starts_with(&path.display().to_string()), "{text}");
    assert!(
        text.contains("corrupt or not a robobrain database"),
        "{text}"
    );
}

#[test]
fn a_database_from_a_newer_robobrain_is_refused() {
    let path = temp("newer");
    drop(Store::open(&path, Synchronous::Full).unwrap());
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("PRAGMA user_version = 99").unwrap();
    drop(conn);
    let e = Store::open(&path, Synchronous::Normal).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: schema version 99 is newer than this robobrain supports (3); upgrade robobrain or use another --db",
            path.display()
        )
    );
}

/// A file written before migration 2 (one `WITHOUT ROWID` row per event
/// and per checkpoint) opens with the same history, checkpoints and ledger,
/// and goes on from where it was.
#[test]
fn a_database_of_schema_1_is_migrated_with_its_history_whole() {
    let path = temp("schema1");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(schema::MIGRATIONS[0]).unwrap();
    conn.execute_batch("PRAGMA user_version = 1").unwrap();
    conn.execute(
        "INSERT INTO threads (id, status, mode, last_step, last_seq, created_ms, updated_ms)
         VALUES ('t', 'running', 'EXEC', 4, 2, 0, 0)",
        [],
    )
    .unwrap();
    for seq in 1..=2u64 {
        let body = serde_json::to_string(&event(seq, seq * 2)).unwrap();
        conn.execute(
            "INSERT INTO events (thread_id, seq, step, kind, body) VALUES ('t', ?1, ?2, 'log', ?3)",
            params![seq, seq * 2, body],
        )
        .unwrap();
    }
    for (step, status) in [(2u64, "done"), (4, "started")] {
        let goal_id = format!("t/g{step}.0");
        let request = LinkRequest::SendGoal {
            goal_id: goal_id.clone(),
            kind: GoalKind::Dock,
        };
        conn.execute(
            "INSERT INTO ledger VALUES ('t', ?1, 0, ?2, 'dock', ?3, ?4, NULL, 0)",
            params![
                step,
                goal_id,
                serde_json::to_string(&request).unwrap(),
                status
            ],
        )
        .unwrap();
    }
    let v0 = json!({"state": {"time": 0.0}});
    let v1 = json!({"state": {"time": 0.5}});
    let d = serde_json::to_string(&delta::diff(&v0, &v1)).unwrap();
    conn.execute_batch(&format!(
        "INSERT INTO checkpoints VALUES ('t', 0, 2, 1, 'full', '{v0}');
         INSERT INTO checkpoints VALUES ('t', 1, 4, 2, 'delta', '{d}');"
    ))
    .unwrap();
    drop(conn);

    let mut store = Store::open(&path, Synchronous::Normal).unwrap();
    let seqs = |store: &Store| {
        store
            .events("t")
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect::<Vec<_>>()
    };
    assert_eq!(seqs(&store), [1, 2]);
    let goals = |rows: Vec<LedgerEntry>| rows.into_iter().map(|l| l.goal_id).collect::<Vec<_>>();
    assert_eq!(goals(store.ledger("t").unwrap()), ["t/g2.0", "t/g4.0"]);
    assert_eq!(goals(store.open_ledger("t").unwrap()), ["t/g4.0"]);
    let r = store.restore("t").unwrap().unwrap();
    assert_eq!((r.step, r.seq, r.count, &r.state), (4, 2, 2, &v1));
    commit(&mut store, 3, Some(CheckpointBody::Full(v1.clone())));
    assert_eq!(seqs(&store), [1, 2, 3]);
    assert_eq!(store.restore("t").unwrap().unwrap().count, 3);
    let version: u32 = store
        .conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, schema::current_version());
}

#[test]
fn a_locked_database_is_a_clear_error_and_nothing_is_half_written() {
    let path = temp("locked");
    let mut store = Store::open(&path, Synchronous::Normal).unwrap();
    store.create_thread("t", "IDLE").unwrap();
    let other = Connection::open(&path).unwrap();
    other.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let e = store
        .commit(&Commit {
            thread: "t",
            step: 1,
            seq: 1,
            checkpoint: Some(CheckpointBody::Full(json!({}))),
            events: &[event(1, 1)],
            started: &[],
            updates: &[],
            row: row(),
            outward: false,
        })
        .unwrap_err();
    assert!(matches!(e, StoreError::Locked { .. }), "{e:?}");
    assert!(e.to_string().contains("locked by another process"), "{e}");
    other.execute_batch("ROLLBACK").unwrap();
    assert!(store.events("t").unwrap().is_empty());
    assert!(store.restore("t").unwrap().is_none());
}

/// Overwrites the middle page of the file with bytes no page has.
fn scribble_over_a_live_page(path: &Path) {
    let mut data = std::fs::read(path).unwrap();
    let page = usize::from(u16::from_be_bytes([data[16], data[17]]));
    let at = (data.len() / page / 2) * page;
    data[at..at + page].fill(0xa5);
    std::fs::write(path, data).unwrap();
}

#[test]
fn a_file_damaged_inside_its_pages_is_refused_when_opened() {
    let path = temp("damaged");
    {
        let mut store = Store::open(&path, Synchronous::Normal).unwrap();
        store.create_thread("t", "IDLE").unwrap();
        for seq in 1..=500 {
            commit(&mut store, seq, None);
        }
    } // closed: the WAL is checkpointed into the file
    scribble_over_a_live_page(&path);
    let e = Store::open(&path, Synchronous::Normal).unwrap_err();
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");
    let text = e.to_string();
    assert!(text.starts_with(&path.display().to_string()), "{text}");
    assert!(text.contains("quick_check"), "{text}");
}

#[test]
fn a_history_shorter_than_its_record_is_an_error_not_a_short_list() {
    let mut store = Store::in_memory().unwrap();
    store.create_thread("t", "IDLE").unwrap();
    for seq in 1..=3 {
        commit(&mut store, seq, None);
    }
    store
        .conn
        .execute("DELETE FROM event_batches WHERE first_seq = 2", [])
        .unwrap();
    let e = store.events("t").unwrap_err();
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");
    assert!(e.to_string().contains("event 2 is missing"), "{e}");
    store
        .conn
        .execute("DELETE FROM event_batches WHERE first_seq = 3", [])
        .unwrap();
    let e = store.events("t").unwrap_err();
    assert!(
        e.to_string()
            .contains("1 events stored where its record says 3"),
        "{e}"
    );
}

/// The checkpointer copies the WAL back and the writer then starts it
/// again from its beginning: the `-wal` file stops growing (it grew without
/// end while commits came back to back, 620 MB in a bench run).
#[test]
fn the_wal_is_written_again_from_its_start_after_a_checkpoint() {
    let path = temp("wal");
    let mut store = Store::open(&path, Synchronous::Normal).unwrap();
    store.create_thread("t", "EXEC").unwrap();
    let wal = || {
        std::fs::metadata(format!("{}-wal", path.display()))
            .unwrap()
            .len()
    };
    let mut seq = 0;
    let mut commits = |store: &mut Store, n: u64| {
        for _ in 0..n {
            seq += 1;
            commit(store, seq, Some(CheckpointBody::Full(json!({"seq": seq}))));
        }
    };
    commits(&mut store, 2 * u64::from(checkpointer::EVERY) + 20);
    // A last request while nothing commits: its `RESTART` pass meets no
    // writer. (One that met a commit, as the 20 after the last request
    // may on a loaded machine, leaves the WAL to the next request.)
    store
        .checkpoints
        .checkpointer
        .as_ref()
        .expect("the checkpointer ran")
        .request();
    // Dropping the checkpointer lets it finish what it was asked.
    assert!(
        store.checkpoints.checkpointer.take().is_some(),
        "the checkpointer ran"
    );
    let copied = wal();
    commits(&mut store, 60);
    assert_eq!(wal(), copied, "60 commits written over the copied WAL");
    // And the numbers of the checkpoints kept in memory follow the table.
    let (count, _) = store.checkpoint_bytes("t").unwrap();
    assert_eq!(count, seq);
    drop(store);
    let store = Store::open(&path, Synchronous::Normal).unwrap();
    assert_eq!(store.restore("t").unwrap().unwrap().count, seq);
}

/// The store's busy handler retries in small steps and gives up after
/// about [`BUSY_WAIT`] in all (a locked database is then an error:
/// `a_locked_database_is_a_clear_error_and_nothing_is_half_written`).
#[test]
fn a_busy_store_retries_in_small_steps_then_gives_up() {
    let attempts = i32::try_from(BUSY_WAIT.as_micros() / BUSY_RETRY.as_micros()).unwrap();
    assert_eq!(attempts, 10_000);
    assert!(retry_soon(0));
    assert!(retry_soon(attempts - 1));
    assert!(!retry_soon(attempts));
    assert!(!retry_soon(i32::MAX));
}

/// Under `effects` (the default) a commit that records an outward effect
/// is made with SQLite's `synchronous=FULL` (synced before it returns),
/// one without it with `NORMAL`, and the first one after the group window
/// with `FULL` again, which syncs those before it.
#[test]
fn under_effects_a_commit_syncs_when_it_records_an_effect_or_the_window_ran_out() {
    let path = temp("effects");
    let mut store = Store::open(&path, Synchronous::default()).unwrap();
    assert_eq!(store.synchronous(), Synchronous::Effects);
    store.create_thread("t", "IDLE").unwrap();
    let level = |store: &Store| -> i64 {
        store
            .conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap()
    };
    let at = |store: &mut Store, seq: u64, outward: bool| {
        store
            .commit(&Commit {
                thread: "t",
                step: seq,
                seq,
                checkpoint: None,
                events: &[event(seq, seq)],
                started: &[],
                updates: &[],
                row: row(),
                outward,
            })
            .unwrap();
        level(store)
    };
    assert_eq!(at(&mut store, 1, false), 1, "NORMAL");
    assert!(store.unsynced_since.is_some());
    assert_eq!(at(&mut store, 2, true), 2, "FULL");
    assert!(
        store.unsynced_since.is_none(),
        "the effect's sync covers all before it"
    );
    assert_eq!(at(&mut store, 3, false), 1);
    std::thread::sleep(GROUP_WINDOW);
    assert_eq!(at(&mut store, 4, false), 2, "the window ran out");
    assert!(store.unsynced_since.is_none());
    // `normal` and `full` never switch.
    drop(store);
    for (synchronous, want) in [(Synchronous::Normal, 1), (Synchronous::Full, 2)] {
        let mut store = Store::open(&path, synchronous).unwrap();
        assert_eq!(at(&mut store, 10 + want as u64 * 2, true), want);
        assert_eq!(at(&mut store, 11 + want as u64 * 2, false), want);
    }
}

/// A record whose bytes changed after it was written — even into other
/// valid JSON, which parsing would take — is refused by its checksum,
/// naming its thread and events; a record from before schema 3 (no
/// checksum) is parsed as before.
#[test]
fn a_record_changed_after_it_was_written_fails_its_checksum() {
    let path = temp("crc");
    let mut store = Store::open(&path, Synchronous::Normal).unwrap();
    store.create_thread("t", "IDLE").unwrap();
    for seq in 1..=3 {
        commit(&mut store, seq, None);
    }
    store.check_events("t").unwrap();
    store
        .conn
        .execute(
            "UPDATE event_batches SET body = replace(body, 'event 2', 'event 9') WHERE first_seq = 2",
            [],
        )
        .unwrap();
    let e = store.check_events("t").unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("events 2 to 2 of thread `t` cannot be decoded: its checksum is"),
        "{text}"
    );
    store
        .conn
        .execute(
            "UPDATE event_batches SET crc = NULL WHERE first_seq = 2",
            [],
        )
        .unwrap();
    store.check_events("t").unwrap();
    store
        .conn
        .execute(
            "UPDATE event_batches SET body = '[{' WHERE first_seq = 2",
            [],
        )
        .unwrap();
    let text = store.check_events("t").unwrap_err().to_string();
    assert!(
        text.contains("events 2 to 2 of thread `t` cannot be decoded"),
        "{text}"
    );
}

/// A tick whose thread row would change only in its step, `seq` and time
/// does not rewrite it (a page less per commit); the thread still reads
/// its last step and `seq`, from the newest checkpoint. A change of status
/// rewrites it.
#[test]
fn the_thread_row_is_rewritten_only_when_it_changes_and_still_reads_current() {
    let path = temp("row");
    let mut store = Store::open(&path, Synchronous::Normal).unwrap();
    store.create_thread("t", "IDLE").unwrap();
    let v0 = json!({"state": {"seq": 1}});
    let v1 = json!({"state": {"seq": 2}});
    commit(&mut store, 1, Some(CheckpointBody::Full(v0.clone())));
    commit(
        &mut store,
        2,
        Some(CheckpointBody::Delta(delta::diff(&v0, &v1))),
    );
    let stored = |store: &Store| -> (u64, String) {
        store
            .conn
            .query_row(
                "SELECT last_seq, status FROM threads WHERE id = 't'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap()
    };
    assert_eq!(stored(&store).0, 1, "the second commit left the row alone");
    let t = store.thread("t").unwrap();
    assert_eq!((t.last_step, t.last_seq), (4, 2));
    store
        .commit(&Commit {
            thread: "t",
            step: 6,
            seq: 3,
            checkpoint: Some(CheckpointBody::Delta(vec![("/state/seq".into(), json!(3))])),
            events: &[event(3, 6)],
            started: &[],
            updates: &[],
            row: ThreadRow {
                status: "idle".into(),
                ..row()
            },
            outward: false,
        })
        .unwrap();
    assert_eq!(stored(&store), (3, "idle".to_string()));
    assert_eq!(store.events("t").unwrap().len(), 3);
}
