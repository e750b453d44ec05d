//! The store's VFS: SQLite's own file layer, with a commit's WAL frames
//! written in one system call.
//!
//! SQLite writes each WAL frame with two `pwrite`s, its 24-byte header
//! and then its page; a tick's commit of six pages was twelve system
//! calls, a fifth of the tick (docs/benchmarks/durable.md). This layer
//! sits on the platform's default VFS (`unix`) and forwards every call to
//! it unchanged, except that the writes to a `-wal` file that continue one
//! another are gathered and handed down as one write:
//!
//! - only appends are gathered: a write that does not continue the run
//!   gathered so far, or lands inside what this file already wrote since
//!   the WAL last started over (SQLite rewriting a frame's checksums, or a
//!   transaction it rolled back), first writes the run out and then goes
//!   down on its own, as before;
//! - a transaction ends with its commit frame, whose header carries the
//!   database's size (bytes 4–7, zero in every other frame): the page
//!   after such a header writes the run out before the write returns, so
//!   the commit's frames are in the file, and an error in writing them
//!   fails the commit, before SQLite publishes the commit to readers (in
//!   the shared-memory index, after the frames);
//! - any other call on the file (a read, a sync, its size, a truncation,
//!   a file control, closing it) writes the run out first;
//! - a run never holds more than [`MOST`] bytes (64 KiB: the unix VFS
//!   fails a write of 128 KiB or more);
//! - a WAL on a device without power-safe overwrite, where SQLite pads a
//!   commit to a sector and may split a frame around a sync, is written as
//!   SQLite writes it.
//!
//! So what is on disk when a commit returns, and what a reader or a
//! recovery after a kill sees, is what SQLite alone would have left; a
//! process killed during a commit loses the frames of a commit that had
//! not returned, as it would between SQLite's own writes. The database
//! file, the shared memory and the locks are not touched.
#![allow(unsafe_code)]

use std::ffi::{CStr, c_int, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, Ordering};

use rusqlite::ffi;

/// The name the layer is registered under.
pub(crate) const NAME: &CStr = c"robobrain-wal";

/// The most a run gathers: the unix VFS writes at most 128 KiB − 1 in
/// one call (`seekAndWriteFd` masks the length to 17 bits, and a longer
/// write fails as a full disk). A page is at most 64 KiB, so a run that
/// would pass this is written out before the write that would pass it.
const MOST: usize = 1 << 16;

/// The size of a WAL frame's header; every other write to a WAL is its
/// 32-byte file header or a page.
const FRAME_HEADER: usize = 24;

/// Tests: writes to `-wal` files handed down so far, in this process (a
/// commit of several frames is one).
#[cfg(test)]
static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts a write handed down (tests only).
fn handed_down() {
    #[cfg(test)]
    WRITES.fetch_add(1, Ordering::Relaxed);
}

/// The layer's name once it is registered; `None` when SQLite has no
/// default VFS to stand on (the store then opens with the default).
pub(crate) fn name() -> Option<&'static CStr> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    REGISTERED.get_or_init(register).then_some(NAME)
}

/// The default VFS this one stands on.
static BELOW: AtomicPtr<ffi::sqlite3_vfs> = AtomicPtr::new(std::ptr::null_mut());

fn register() -> bool {
    // SAFETY: `sqlite3_vfs_find(NULL)` returns the default VFS or NULL;
    // the copy keeps every method and field of it but its name, its file
    // size and `xOpen`, and is leaked: SQLite keeps it (and links it into
    // its list) for the life of the process. This runs once.
    unsafe {
        if ffi::sqlite3_initialize() != ffi::SQLITE_OK {
            return false;
        }
        let below = ffi::sqlite3_vfs_find(std::ptr::null());
        if below.is_null() || (*below).xOpen.is_none() {
            return false;
        }
        BELOW.store(below, Ordering::Release);
        let mut this = *below;
        this.zName = NAME.as_ptr();
        this.pNext = std::ptr::null_mut();
        this.szOsFile = (*below).szOsFile + HEADER as c_int;
        this.xOpen = Some(open);
        let this: &'static mut ffi::sqlite3_vfs = Box::leak(Box::new(this));
        ffi::sqlite3_vfs_register(this, 0) == ffi::SQLITE_OK
    }
}

/// A file of this layer: its methods, the run it gathers (WAL files only)
/// and, after [`HEADER`] bytes, the file of the VFS below.
#[repr(C)]
struct File {
    base: ffi::sqlite3_file,
    run: *mut Run,
}

/// Room for [`File`], rounded so that the file below is aligned.
const HEADER: usize = std::mem::size_of::<File>().next_multiple_of(16);

/// The writes gathered for one `-wal` file.
#[derive(Default)]
struct Run {
    /// Where the gathered bytes go.
    offset: i64,
    bytes: Vec<u8>,
    /// The end of the furthest write since the WAL last started over: a
    /// write before it rewrites what is there.
    end: i64,
    /// The last write gathered was a commit frame's header: its page,
    /// the next write, ends the commit.
    commit_next: bool,
}

/// The file below `file`.
///
/// # Safety
/// `file` is a [`File`] this layer opened, of `szOsFile` bytes.
unsafe fn below(file: *mut ffi::sqlite3_file) -> *mut ffi::sqlite3_file {
    unsafe { file.cast::<u8>().add(HEADER).cast() }
}

/// The methods of the file below `file`.
///
/// # Safety
/// As [`below`]; the file below is open.
unsafe fn methods(file: *mut ffi::sqlite3_file) -> &'static ffi::sqlite3_io_methods {
    unsafe { &*(*below(file)).pMethods }
}

unsafe extern "C" fn open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let below_vfs = BELOW.load(Ordering::Acquire);
    // SAFETY: SQLite hands a block of `szOsFile` bytes for `file`; the
    // file below gets the part after the header, and is opened by the VFS
    // below with what SQLite passed.
    unsafe {
        let ours = file.cast::<File>();
        (*ours).base.pMethods = std::ptr::null();
        (*ours).run = std::ptr::null_mut();
        let Some(open_below) = (*below_vfs).xOpen else {
            return ffi::SQLITE_ERROR;
        };
        let rc = open_below(below_vfs, name, below(file), flags, out_flags);
        if rc != ffi::SQLITE_OK || (*below(file)).pMethods.is_null() {
            // SQLite does not close a file whose methods are NULL.
            return rc;
        }
        // Without power-safe overwrite SQLite pads a commit to a sector
        // boundary and may split its frame around a sync: such a file is
        // written as SQLite writes it.
        let characteristics = methods(file)
            .xDeviceCharacteristics
            .map_or(0, |f| f(below(file)));
        if flags & ffi::SQLITE_OPEN_WAL != 0
            && characteristics & ffi::SQLITE_IOCAP_POWERSAFE_OVERWRITE != 0
        {
            (*ours).run = Box::into_raw(Box::default());
        }
        (*ours).base.pMethods = &raw const METHODS;
        rc
    }
}

/// Tests: the next write-out fails as a disk error would.
#[cfg(test)]
static FAIL_NEXT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Writes out what `file` gathered. A run that fails is kept, and written
/// again (the same bytes at the same place) by the next write-out: a
/// failure reported where SQLite ignores it (a hint) must not lose frames
/// SQLite counts as written, and the commit that needs them fails with it.
///
/// # Safety
/// `file` is an open [`File`].
unsafe fn write_out(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe {
        let run = (*file.cast::<File>()).run;
        if run.is_null() || (*run).bytes.is_empty() {
            return ffi::SQLITE_OK;
        }
        let run = &mut *run;
        let Some(write) = methods(file).xWrite else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        let Ok(len) = c_int::try_from(run.bytes.len()) else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        #[cfg(test)]
        if FAIL_NEXT.swap(false, Ordering::Relaxed) {
            return ffi::SQLITE_IOERR_WRITE;
        }
        handed_down();
        let rc = write(below(file), run.bytes.as_ptr().cast(), len, run.offset);
        if rc == ffi::SQLITE_OK {
            run.bytes.clear();
        }
        rc
    }
}

unsafe extern "C" fn write(
    file: *mut ffi::sqlite3_file,
    data: *const c_void,
    len: c_int,
    offset: i64,
) -> c_int {
    // SAFETY: SQLite passes an open file of this layer and `len` readable
    // bytes at `data`.
    unsafe {
        let run = (*file.cast::<File>()).run;
        let Some(direct) = methods(file).xWrite else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        if run.is_null() {
            return direct(below(file), data, len, offset);
        }
        let bytes =
            std::slice::from_raw_parts(data.cast::<u8>(), usize::try_from(len).unwrap_or(0));
        if offset == 0 {
            // The WAL's header: the log starts over.
            let rc = write_out(file);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            (*run).end = 0;
        }
        let r = &mut *run;
        let continues = if r.bytes.is_empty() {
            offset >= r.end
        } else {
            offset == r.offset + r.bytes.len() as i64
        };
        let end = offset + i64::from(len);
        if !continues {
            let rc = write_out(file);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            r.end = r.end.max(end);
            handed_down();
            return direct(below(file), data, len, offset);
        }
        if r.bytes.len() + bytes.len() > MOST {
            let rc = write_out(file);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
        }
        if r.bytes.is_empty() {
            r.offset = offset;
        }
        r.bytes.extend_from_slice(bytes);
        r.end = r.end.max(end);
        let ends_commit = r.commit_next;
        r.commit_next = bytes.len() == FRAME_HEADER && bytes[4..8] != [0; 4];
        if ends_commit {
            return write_out(file);
        }
        ffi::SQLITE_OK
    }
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: an open file of this layer; SQLite does not use it again.
    unsafe {
        let written = write_out(file);
        let ours = file.cast::<File>();
        if !(*ours).run.is_null() {
            drop(Box::from_raw((*ours).run));
            (*ours).run = std::ptr::null_mut();
        }
        let closed = methods(file)
            .xClose
            .map_or(ffi::SQLITE_OK, |close| close(below(file)));
        if written == ffi::SQLITE_OK {
            closed
        } else {
            written
        }
    }
}

/// Forwards a method to the file below, after writing out what the file
/// gathered; `$missing` when the file below lacks the method.
macro_rules! forward {
    ($name:ident, $field:ident, $missing:expr, ($($arg:ident: $ty:ty),*)) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> c_int {
            // SAFETY: an open file of this layer, with SQLite's arguments.
            unsafe {
                let rc = write_out(file);
                if rc != ffi::SQLITE_OK {
                    return rc;
                }
                match methods(file).$field {
                    Some(f) => f(below(file) $(, $arg)*),
                    None => $missing,
                }
            }
        }
    };
}

forward!(read, xRead, ffi::SQLITE_IOERR_READ, (data: *mut c_void, len: c_int, offset: i64));
forward!(truncate, xTruncate, ffi::SQLITE_IOERR_TRUNCATE, (size: i64));
forward!(sync, xSync, ffi::SQLITE_IOERR_FSYNC, (flags: c_int));
forward!(file_size, xFileSize, ffi::SQLITE_IOERR_FSTAT, (size: *mut i64));
forward!(lock, xLock, ffi::SQLITE_IOERR_LOCK, (level: c_int));
forward!(unlock, xUnlock, ffi::SQLITE_IOERR_UNLOCK, (level: c_int));
forward!(check_reserved, xCheckReservedLock, ffi::SQLITE_IOERR_CHECKRESERVEDLOCK, (out: *mut c_int));
forward!(file_control, xFileControl, ffi::SQLITE_NOTFOUND, (op: c_int, arg: *mut c_void));
forward!(shm_map, xShmMap, ffi::SQLITE_IOERR_SHMMAP, (page: c_int, size: c_int, extend: c_int, out: *mut *mut c_void));
forward!(shm_lock, xShmLock, ffi::SQLITE_IOERR_SHMLOCK, (offset: c_int, n: c_int, flags: c_int));
forward!(shm_unmap, xShmUnmap, ffi::SQLITE_OK, (delete: c_int));
forward!(fetch, xFetch, { *out = std::ptr::null_mut(); ffi::SQLITE_OK }, (offset: i64, len: c_int, out: *mut *mut c_void));
forward!(unfetch, xUnfetch, ffi::SQLITE_OK, (offset: i64, page: *mut c_void));

unsafe extern "C" fn sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: an open file of this layer.
    unsafe { methods(file).xSectorSize.map_or(4096, |f| f(below(file))) }
}

unsafe extern "C" fn device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: an open file of this layer.
    unsafe {
        methods(file)
            .xDeviceCharacteristics
            .map_or(0, |f| f(below(file)))
    }
}

unsafe extern "C" fn shm_barrier(file: *mut ffi::sqlite3_file) {
    // SAFETY: an open file of this layer. Only the database file has
    // shared memory, and it gathers nothing.
    unsafe {
        if let Some(f) = methods(file).xShmBarrier {
            f(below(file));
        }
    }
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: Some(shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(shm_unmap),
    xFetch: Some(fetch),
    xUnfetch: Some(unfetch),
};

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use rusqlite::{Connection, OpenFlags};

    use super::*;

    fn folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rb-walvfs-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A connection through the layer, as the store opens it (WAL,
    /// `synchronous=NORMAL`, no automatic checkpoint).
    /// A fresh folder `name`, its database `w.db` and a connection to it
    /// through the layer.
    fn fresh(name: &str) -> (PathBuf, PathBuf, Connection) {
        let dir = folder(name);
        let db = dir.join("w.db");
        let conn = through_the_layer(&db);
        (dir, db, conn)
    }

    fn through_the_layer(path: &Path) -> Connection {
        let vfs = name().expect("the layer registers on the default VFS");
        let conn = Connection::open_with_flags_and_vfs(path, OpenFlags::default(), vfs).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0;
             CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body BLOB NOT NULL);",
        )
        .unwrap();
        conn
    }

    /// Rows `0..n`, each of `size` bytes.
    fn insert(conn: &Connection, n: i64, size: i64) {
        for i in 0..n {
            conn.execute(
                "INSERT INTO t (id, body) VALUES (?1, zeroblob(?2))",
                [i, size],
            )
            .unwrap();
        }
    }

    fn rows(conn: &Connection) -> (u64, u64) {
        conn.query_row(
            "SELECT count(*), coalesce(sum(length(body)), 0) FROM t",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
    }

    /// The database and its WAL as they are on disk, copied while the
    /// connection is open (as a killed process leaves them) into a folder
    /// of their own, opened there: SQLite's recovery reads the WAL and
    /// keeps a commit only if every frame's checksum holds.
    fn as_a_kill_leaves_it(db: &Path, name: &str) -> (PathBuf, Connection) {
        let copy = folder(name);
        for suffix in ["db", "db-wal"] {
            std::fs::copy(
                db.with_extension(suffix),
                copy.join("w").with_extension(suffix),
            )
            .unwrap();
        }
        let recovered = Connection::open(copy.join("w.db")).unwrap();
        (copy, recovered)
    }

    fn integrity(conn: &Connection) -> String {
        conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn a_commit_of_several_pages_is_one_write_and_other_connections_read_it() {
        let (_, db, mut conn) = fresh("one");
        let wal = std::fs::metadata(db.with_extension("db-wal")).map_or(0, |m| m.len());
        let before = WRITES.load(Ordering::Relaxed);
        let tx = conn.transaction().unwrap();
        insert(&tx, 3, 3000);
        tx.commit().unwrap();
        let frames = (std::fs::metadata(db.with_extension("db-wal"))
            .unwrap()
            .len()
            - wal.max(32))
            / (4096 + 24);
        assert!(frames >= 3, "the commit wrote {frames} frames");
        assert_eq!(
            WRITES.load(Ordering::Relaxed) - before,
            1,
            "{frames} frames in one write"
        );
        // A connection of SQLite's own VFS, in this process and the WAL's
        // index, reads what the commit wrote.
        let other = Connection::open(&db).unwrap();
        assert_eq!(rows(&other), (3, 9000));
        assert_eq!(integrity(&other), "ok");
    }

    /// A commit larger than the most a run gathers (and than the unix
    /// VFS writes in one call) goes down in several writes, whole.
    #[test]
    fn a_commit_larger_than_a_run_is_written_whole() {
        let (dir, db, mut conn) = fresh("large");
        let tx = conn.transaction().unwrap();
        insert(&tx, 100, 3000);
        tx.commit().unwrap();
        assert_eq!(rows(&Connection::open(&db).unwrap()), (100, 300_000));
        assert_eq!(integrity(&Connection::open(&db).unwrap()), "ok");
        drop(conn);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A commit whose frames cannot be written fails, and the next one
    /// writes over them: the database holds the second, whole.
    #[test]
    fn a_failed_write_out_fails_its_commit_and_the_next_one_is_whole() {
        let (dir, db, mut conn) = fresh("fail");
        FAIL_NEXT.store(true, Ordering::Relaxed);
        let tx = conn.transaction().unwrap();
        insert(&tx, 3, 3000);
        assert!(tx.commit().is_err(), "a commit whose frames failed");
        let tx = conn.transaction().unwrap();
        tx.execute("INSERT INTO t (id, body) VALUES (10, zeroblob(100))", [])
            .unwrap();
        tx.commit().unwrap();
        assert_eq!(rows(&conn), (1, 100));
        let (copy, recovered) = as_a_kill_leaves_it(&db, "fail-copy");
        assert_eq!(rows(&recovered), (1, 100));
        assert_eq!(integrity(&recovered), "ok");
        drop(conn);
        let _ = std::fs::remove_dir_all(dir);
        let _ = std::fs::remove_dir_all(copy);
    }

    #[test]
    fn a_transaction_that_rewrites_its_own_frames_is_whole_after_a_kill() {
        let (dir, db, mut conn) = fresh("kill");
        // A cache of a few pages spills the transaction's pages to the WAL
        // before the commit; updating them again overwrites those frames in
        // place, and the commit rewrites the frames' checksums.
        conn.execute_batch("PRAGMA cache_size=2; PRAGMA cache_spill=1;")
            .unwrap();
        let tx = conn.transaction().unwrap();
        insert(&tx, 200, 500);
        tx.execute("UPDATE t SET body = zeroblob(600)", []).unwrap();
        tx.commit().unwrap();
        // Killed now.
        let (copy, recovered) = as_a_kill_leaves_it(&db, "kill-copy");
        assert_eq!(rows(&recovered), (200, 120_000));
        assert_eq!(integrity(&recovered), "ok");
        drop(conn);
        let _ = std::fs::remove_dir_all(dir);
        let _ = std::fs::remove_dir_all(copy);
    }
}
