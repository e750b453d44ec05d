//! The database file under a running thread.
//!
//! SQLite keeps writing through the descriptors it opened: a database
//! deleted, replaced or made read-only (`chmod a-w`; root writes through
//! any mode) under a running brain does not make a commit fail, and the
//! thread would go on recording into a file nobody will find. So every
//! tick (before its commit, or instead of one when there is nothing to
//! write) the engine looks at the path again (one `stat`, about a
//! microsecond) and treats a changed file as a failed store.

use std::path::{Path, PathBuf};

use super::StoreError;

/// The file a thread records into, as it was when the thread attached.
#[derive(Debug, Clone)]
pub struct FileGuard {
    path: PathBuf,
    /// Device and inode at attach time.
    id: Option<(u64, u64)>,
}

impl FileGuard {
    /// Watches `path` as it is now; `None` for a database in memory.
    pub fn new(path: &Path) -> Option<Self> {
        if path == Path::new(":memory:") {
            return None;
        }
        let id = std::fs::metadata(path).ok().map(|m| file_id(&m));
        Some(Self {
            path: path.to_path_buf(),
            id,
        })
    }

    /// Whether the file is still the one attached and may be written.
    pub fn check(&self) -> Result<(), StoreError> {
        let path = self.path.clone();
        let meta = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::FileGone {
                    path,
                    what: "deleted",
                });
            }
            // Not readable now (a folder's permissions): the commit will say.
            Err(_) => return Ok(()),
        };
        if self.id.is_some_and(|id| id != file_id(&meta)) {
            return Err(StoreError::FileGone {
                path,
                what: "replaced by another file",
            });
        }
        if meta.permissions().readonly() {
            return Err(StoreError::ReadOnly { path });
        }
        Ok(())
    }
}

#[cfg(unix)]
fn file_id(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn file_id(_meta: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deleted_replaced_or_read_only_file_is_a_failed_store() {
        let dir = std::env::temp_dir().join(format!("rb-guard-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("g.db");
        std::fs::write(&db, b"x").unwrap();
        let guard = FileGuard::new(&db).unwrap();
        guard.check().unwrap();
        // Held open as SQLite holds it: its inode cannot be reused while
        // the path is deleted and written anew.
        let _held = std::fs::File::open(&db).unwrap();

        let mut perms = std::fs::metadata(&db).unwrap().permissions();
        perms.set_readonly(true);
        std::fs::set_permissions(&db, perms.clone()).unwrap();
        let e = guard.check().unwrap_err().to_string();
        assert!(
            e.ends_with(
                "the database is read-only (check the permissions of the file and its folder)"
            ),
            "{e}"
        );
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&db, perms).unwrap();

        std::fs::remove_file(&db).unwrap();
        let e = guard.check().unwrap_err().to_string();
        assert!(
            e.ends_with("the database file was deleted while the thread was recording"),
            "{e}"
        );

        std::fs::write(&db, b"y").unwrap();
        let e = guard.check().unwrap_err().to_string();
        assert!(e.contains("replaced by another file"), "{e}");
        assert!(FileGuard::new(Path::new(":memory:")).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
