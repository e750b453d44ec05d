//! A real mosquitto broker for the tests: started on loopback on a free
//! port with a config of its own in a temp folder, stopped with SIGTERM (so
//! that it saves its retained messages, as a service restart would), and
//! started again on the same port.

// A test helper: failing the test is what it is for.
#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One mosquitto process (or none while stopped) on a fixed loopback port.
pub struct Mosquitto {
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl Mosquitto {
    /// Starts a broker on a free port; panics with what to install when mosquitto is missing.
    pub fn start(name: &str) -> Self {
        Self::start_with(name, |_| "allow_anonymous true\n".into())
    }

    /// Starts a broker whose listener has the settings `listener` returns
    /// (given the broker's folder, to write a password file or certificates
    /// into) in place of `allow_anonymous true`.
    pub fn start_with(name: &str, listener: impl FnOnce(&std::path::Path) -> String) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free loopback port");
        let dir = std::env::temp_dir().join(format!(
            "robobrain-mosquitto-{}-{name}-{port}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("a temp folder for mosquitto");
        let conf = format!(
            "listener {port} 127.0.0.1\n{}persistence true\n\
             persistence_location {}/\nlog_dest file {}/mosquitto.log\nuser root\n",
            listener(&dir),
            dir.display(),
            dir.display()
        );
        std::fs::write(dir.join("mosquitto.conf"), conf).expect("writing mosquitto.conf");
        let mut broker = Self {
            port,
            dir,
            child: None,
        };
        broker.spawn();
        broker
    }

    fn spawn(&mut self) {
        // On PATH, or Debian's /usr/sbin (not on a user's PATH).
        let binary = crate::testing::program("mosquitto", "./x setup (Debian package mosquitto)");
        let child = Command::new(binary)
            .arg("-c")
            .arg(self.dir.join("mosquitto.conf"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start mosquitto: {e}"));
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                let log =
                    std::fs::read_to_string(self.dir.join("mosquitto.log")).unwrap_or_default();
                panic!("mosquitto exited ({status}) on port {}:\n{log}", self.port);
            }
            assert!(
                Instant::now() < deadline,
                "mosquitto did not listen on {} within 10 s",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops it with SIGTERM (it saves its retained messages), killing it after 5 s.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// What it has logged so far (connections, refusals, takeovers).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("mosquitto.log")).unwrap_or_default()
    }

    /// Starts it again on the same port, with the same stored messages.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }
}

impl Drop for Mosquitto {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `program args…` in `dir`, panicking with its output when it fails.
pub fn run(dir: &Path, program: &str, args: &[&str]) {
    let path = crate::testing::program(program, "./x setup (Debian packages mosquitto, openssl)");
    let out = Command::new(path)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A password file for mosquitto with `robot` / `s3cret`.
pub fn password_file(dir: &Path) -> String {
    users(dir, &[("robot", "s3cret")])
}

/// A password file for mosquitto with these users and passwords: the
/// listener's settings that use it.
pub fn users(dir: &Path, users: &[(&str, &str)]) -> String {
    for (i, (user, password)) in users.iter().enumerate() {
        let mut args = vec!["-b", "passwd", user, password];
        if i == 0 {
            args.insert(0, "-c");
        }
        run(dir, "mosquitto_passwd", &args);
    }
    format!(
        "allow_anonymous false\npassword_file {}/passwd\n",
        dir.display()
    )
}

/// A throw-away CA and a server certificate for 127.0.0.1 signed by it.
pub fn certificates(dir: &Path) {
    let days = ["-days", "2"];
    run(
        dir,
        "openssl",
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-subj",
            "/CN=robobrain test CA",
            days[0],
            days[1],
        ],
    );
    run(
        dir,
        "openssl",
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    );
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    run(
        dir,
        "openssl",
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-extfile",
            "san.ext",
            days[0],
            days[1],
        ],
    );
    // A second CA that signed nothing of the broker's.
    run(
        dir,
        "openssl",
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "other.key",
            "-out",
            "other.crt",
            "-subj",
            "/CN=someone else",
            days[0],
            days[1],
        ],
    );
}
