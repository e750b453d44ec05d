//! `robobrain fleet`: the fleet console on an MQTT broker, and `fleet up`
//! / `fleet down`: a local mosquitto (passwords, the fleet ACL) and N
//! simulated robots, each its own `robobrain headless` process, for a
//! laptop demo (docs/fleet.md).

use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Command as Process, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use robobrain_core::config::Config;
use robobrain_core::fleet::topics::mosquitto_acl;
use robobrain_core::fleet::vda5050::ConnectionState;
use robobrain_core::fleet::{ClientEvent, FleetClient, FleetView};

/// The operator's user name on a broker `fleet up` starts.
pub(crate) const OPERATOR: &str = "operator";
/// The fleet page's user there (`serve --fleet`, the desktop app): an
/// operator too, but a user of its own, because the broker gives each
/// connection its user name as client id (`use_username_as_clientid`), and
/// two connections of one user would take each other's place over and over.
const PAGE: &str = "page";
/// The viewer's user name there: it may read everything, command nothing.
const VIEWER: &str = "viewer";

/// Arguments of `robobrain fleet`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// `up`: start a local broker and robots; `down`: stop them.
    #[command(subcommand)]
    pub action: Option<Action>,
    /// The broker: mqtt://HOST:PORT or mqtts://HOST:PORT (default: config
    /// `[fleet] broker`, else mqtt://127.0.0.1:1883).
    #[arg(long, value_name = "URL")]
    pub broker: Option<String>,
    #[command(flatten)]
    pub login: crate::flags::BrokerLogin,
}

/// `fleet up` and `fleet down`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Action {
    /// Start a local mosquitto and N simulated robots (in the background),
    /// wait until every robot is visible, and say how to watch and stop them.
    Up {
        /// How many robots.
        #[arg(long, value_name = "N", default_value_t = 3)]
        robots: usize,
        /// The broker's port on 127.0.0.1.
        #[arg(long, value_name = "PORT", default_value_t = 1883)]
        port: u16,
        /// Sim seconds per wall second, for every robot.
        #[arg(long, value_name = "N", default_value_t = 1.0)]
        speed: f64,
        /// Say this to every robot at start (repeatable), e.g. `--say patrol`.
        #[arg(long, value_name = "TEXT")]
        say: Vec<String>,
        /// Where the broker's and robots' files go (default: <runs_dir>/fleet).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Stop what `fleet up` started (the robots, then the broker).
    Down {
        /// The folder `fleet up` used (default: <runs_dir>/fleet).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// Runs `robobrain fleet …`.
pub(crate) fn run(config: &Config, args: &Args, color: bool) -> Result<ExitCode> {
    match &args.action {
        Some(Action::Up {
            robots,
            port,
            speed,
            say,
            dir,
        }) => up(
            config,
            *robots,
            *port,
            (*speed, say),
            &folder(config, dir.as_deref()),
        ),
        Some(Action::Down { dir }) => down(&folder(config, dir.as_deref())),
        None => {
            let url = args
                .broker
                .clone()
                .or_else(|| config.fleet.broker.clone())
                .unwrap_or_else(|| "mqtt://127.0.0.1:1883".into());
            let mqtt = args
                .login
                .connection(&url, format!("robobrain-console-{}", std::process::id()))?;
            let ended = robobrain_tui::console::fleet(&mqtt, &url, color)?;
            Ok(ExitCode::from(ended.exit_status()))
        }
    }
}

fn folder(config: &Config, dir: Option<&Path>) -> PathBuf {
    dir.map_or_else(|| config.runs_dir.join("fleet"), Path::to_path_buf)
}

/// A fresh random password (hex), from the system's random source.
fn password() -> Result<String> {
    use std::io::Read;
    let mut buf = [0u8; 12];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .context("cannot read /dev/urandom")?;
    Ok(buf.iter().fold(String::new(), |mut hex, b| {
        let _ = write!(hex, "{b:02x}");
        hex
    }))
}

/// Writes `text` to a new file at `path`, readable and writable by its
/// owner only from its first byte (mode 0600 when it is created, never a
/// `chmod` after): what was at `path` (a file, a link) is removed first, so
/// an old file's wider mode is not kept and a planted link is not followed.
fn write_private(path: &Path, text: &str) -> Result<()> {
    create_private(path)?
        .write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// A new, empty file at `path` with mode 0600 (see [`write_private`]).
fn create_private(path: &Path) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot replace {}", path.display())),
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))
}

fn program(name: &str) -> Result<PathBuf> {
    robobrain_core::places::find_program(name).with_context(|| {
        format!("`{name}` not found: install the Debian package mosquitto (./x setup)")
    })
}

/// Starts the broker and `robots` robots, each `headless` at `speed` and
/// told `say` at start, each writing its tick times to `ROBOT/ticks.json`
/// when stopped (docs/benchmarks/fleet.md).
fn up(
    config: &Config,
    robots: usize,
    port: u16,
    (speed, say): (f64, &[String]),
    dir: &Path,
) -> Result<ExitCode> {
    anyhow::ensure!(robots > 0, "--robots: expected at least one robot");
    prepare_folder(dir)?;
    let started = Instant::now();
    let ids: Vec<String> = (1..=robots).map(|i| format!("robot-{i}")).collect();
    let mut pids = Vec::new();
    let broker = start_broker(dir, port, &ids)?;
    pids.push(format!("broker {}", broker.id()));
    write_pids(dir, &pids)?;
    if let Err(e) = wait_for_broker(broker, dir, port) {
        let _ = std::fs::remove_file(dir.join("pids"));
        return Err(e);
    }
    let url = format!("mqtt://127.0.0.1:{port}");
    let exe = std::env::current_exe().context("where is robobrain?")?;
    for id in &ids {
        let pid = start_robot(config, dir, id, &url, &exe, (speed, say))?;
        pids.push(format!("{id} {pid}"));
        write_pids(dir, &pids)?;
    }
    wait_until_visible(dir, &url, robots, started)?;
    println!(
        "watch:  robobrain fleet --broker {url} --user {OPERATOR} --password-file {}/{OPERATOR}.password",
        dir.display()
    );
    println!(
        "page:   robobrain serve --fleet {url} --user {PAGE} --password-file {}/{PAGE}.password",
        dir.display()
    );
    println!(
        "stop:   robobrain fleet down --dir {}   (PIDs in {}/pids)",
        dir.display(),
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Creates the fleet's folder, refusing one that holds a running fleet.
fn prepare_folder(dir: &Path) -> Result<()> {
    if dir.join("pids").exists() {
        bail!(
            "{} holds a running fleet: stop it first with `robobrain fleet down --dir {}`",
            dir.display(),
            dir.display()
        );
    }
    // Others may go through the fleet's folder (run as root, mosquitto reads
    // it as its own user), never write into it; its files are 0600.
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))
}

/// Writes what was started so far (`NAME PID` per line) to `DIR/pids`, for
/// `fleet down`.
fn write_pids(dir: &Path, pids: &[String]) -> Result<()> {
    write_private(&dir.join("pids"), &(pids.join("\n") + "\n"))
}

/// Writes robot `id`'s config and folder and starts it, `headless` on the
/// broker at `url`; returns its process id.
fn start_robot(
    config: &Config,
    dir: &Path,
    id: &str,
    url: &str,
    exe: &Path,
    (speed, say): (f64, &[String]),
) -> Result<u32> {
    let robot_dir = dir.join(id);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&robot_dir)
        .with_context(|| format!("cannot create {}", robot_dir.display()))?;
    let toml = format!(
        "world = {world:?}\nruns_dir = {runs:?}\n\n[memory]\nenabled = false\n\n[speech]\nvoice = \"text\"\n\n\
         [fleet]\nbroker = {url:?}\nrobot_id = {id:?}\nusername = {id:?}\npassword_file = {pw:?}\n",
        world = config.world,
        runs = robot_dir.display().to_string(),
        pw = dir.join(format!("{id}.password")).display().to_string(),
    );
    let file = dir.join(format!("{id}.toml"));
    write_private(&file, &toml)?;
    let stderr = create_private(&robot_dir.join("stderr.log"))?;
    let child = Process::new(exe)
        .arg("--config")
        .arg(&file)
        .args(["headless", "--speed", &speed.to_string(), "--ticks"])
        .arg(robot_dir.join("ticks.json"))
        .args(say.iter().flat_map(|text| ["--say", text]))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .with_context(|| format!("cannot start {id}"))?;
    Ok(child.id())
}

/// Watches as the operator until every robot is ONLINE with a snapshot (or
/// 120 s pass: a warning), and says how long that took since `started`.
fn wait_until_visible(dir: &Path, url: &str, robots: usize, started: Instant) -> Result<()> {
    let mut mqtt = robobrain_core::fleet::connection(
        url,
        Some(OPERATOR),
        None,
        Some(&dir.join(format!("{OPERATOR}.password"))),
        None,
    )?;
    mqtt.client_id = format!("robobrain-fleet-up-{}", std::process::id());
    let rt = crate::flags::async_runtime(1)?;
    let visible = rt.block_on(async {
        let mut client = FleetClient::connect(&mqtt);
        let mut view = FleetView::default();
        let wait = tokio::time::timeout(Duration::from_secs(120), async {
            loop {
                let event = client.recv().await?;
                view.apply(&event);
                let ready = view
                    .robots()
                    .filter(|r| {
                        r.connection == Some(ConnectionState::Online) && r.snapshot.is_some()
                    })
                    .count();
                if ready >= robots && matches!(event, ClientEvent::Snapshot { .. }) {
                    return Ok::<_, anyhow::Error>(ready);
                }
            }
        })
        .await;
        client.close().await;
        wait
    });
    let took = started.elapsed();
    match visible {
        Ok(Ok(n)) => println!(
            "fleet up: {n} robots visible on {url} after {:.2} s (broker and robots started in {})",
            took.as_secs_f64(),
            dir.display()
        ),
        Ok(Err(e)) => bail!("watching the fleet failed: {e}"),
        Err(_) => eprintln!(
            "warning: not every robot was visible within 120 s; see {}/robot-*/stderr.log",
            dir.display()
        ),
    }
    Ok(())
}

/// The broker's log: its stderr, in a file `fleet up` opens itself, so it
/// is written even when mosquitto cannot write into the fleet's folder.
const BROKER_LOG: &str = "mosquitto.log";

/// Writes the broker's users, ACL and config into `dir` and starts
/// mosquitto on 127.0.0.1:`port`. Every robot (`ids`, each its own user)
/// and the operator get a fresh password, kept in `USER.password`; no
/// password is ever on a command line (`ps` shows those to every user):
/// they go to `mosquitto_passwd -U` in a plaintext file of mode 0600,
/// which it hashes in place. Run as root, mosquitto drops to the user
/// `mosquitto` before it reads the password file and the ACL, so those two
/// are handed to that user.
fn start_broker(dir: &Path, port: u16, ids: &[String]) -> Result<std::process::Child> {
    // A port another program listens on would answer in mosquitto's place.
    drop(
        std::net::TcpListener::bind(("127.0.0.1", port)).with_context(|| {
            format!("cannot listen on 127.0.0.1:{port} (is the port taken? --port picks another)")
        })?,
    );
    let mut logins = String::new();
    for user in ids
        .iter()
        .map(String::as_str)
        .chain([OPERATOR, PAGE, VIEWER])
    {
        let secret = password()?;
        write_private(&dir.join(format!("{user}.password")), &secret)?;
        let _ = writeln!(logins, "{user}:{secret}");
    }
    let passwd = dir.join("passwd");
    write_private(&passwd, &logins)?;
    let hashed = Process::new(program("mosquitto_passwd")?)
        .arg("-U")
        .arg(&passwd)
        .stdin(Stdio::null())
        .output()
        .context("cannot run mosquitto_passwd")?;
    if !hashed.status.success() {
        let _ = std::fs::remove_file(&passwd);
        bail!(
            "mosquitto_passwd -U {} failed: {}",
            passwd.display(),
            String::from_utf8_lossy(&hashed.stderr).trim()
        );
    }
    let acl = dir.join("acl");
    write_private(&acl, &mosquitto_acl(&[OPERATOR, PAGE], &[VIEWER]))?;
    // A client's id is its user name: nobody takes over another's session
    // by connecting with its client id.
    let conf = format!(
        "listener {port} 127.0.0.1\nallow_anonymous false\nuse_username_as_clientid true\n\
         password_file {0}/passwd\nacl_file {0}/acl\nmessage_size_limit 1048576\n\
         max_queued_messages 10000\npersistence false\nlog_dest stderr\n",
        dir.display()
    );
    let conf_file = dir.join("mosquitto.conf");
    write_private(&conf_file, &conf)?;
    if owned_by_root(&conf_file)?
        && let Some(broker) = broker_user()
    {
        for file in [&passwd, &acl] {
            std::os::unix::fs::chown(file, Some(broker.uid), Some(broker.gid))
                .with_context(|| format!("cannot hand {} to the user mosquitto", file.display()))?;
        }
    }
    let log = create_private(&dir.join(BROKER_LOG))?;
    Process::new(program("mosquitto")?)
        .arg("-c")
        .arg(&conf_file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .context("cannot start mosquitto")
}

/// The user mosquitto drops to.
struct BrokerUser {
    uid: u32,
    gid: u32,
}

/// Whether `path` (a file `fleet up` just created) is root's: `fleet up`
/// runs as root, and mosquitto will drop to its own user.
fn owned_by_root(path: &Path) -> Result<bool> {
    use std::os::unix::fs::MetadataExt;
    Ok(std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .uid()
        == 0)
}

/// The user `mosquitto`, which mosquitto started by root reads its password
/// file and ACL as; `None` when the system has none (mosquitto then says
/// so in its log).
fn broker_user() -> Option<BrokerUser> {
    let users = std::fs::read_to_string("/etc/passwd").ok()?;
    users.lines().find_map(|line| {
        let mut fields = line.split(':');
        (fields.next() == Some("mosquitto")).then_some(())?;
        let uid = fields.nth(1)?.parse().ok()?;
        let gid = fields.next()?.parse().ok()?;
        Some(BrokerUser { uid, gid })
    })
}

/// Waits until the broker listens on 127.0.0.1:`port`; when it ends first,
/// says why from its log — plainly when it could not read the fleet's
/// folder (`dir`).
fn wait_for_broker(mut broker: std::process::Child, dir: &Path, port: u16) -> Result<()> {
    let log = dir.join(BROKER_LOG);
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Some(status) = broker.try_wait().context("waiting for mosquitto")? {
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            let as_root = owned_by_root(&dir.join("mosquitto.conf")).unwrap_or(false);
            bail!(
                "{}",
                broker_failed(dir, as_root, &said, &status.to_string(), &log)
            );
        }
        if Instant::now() > deadline {
            bail!(
                "mosquitto did not listen on 127.0.0.1:{port} within 10 s; its log: {}",
                log.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// Why the broker ended before it listened, from what it `said` (its log,
/// at `log`) and its exit `status`; `as_root`: it was started by root.
fn broker_failed(dir: &Path, as_root: bool, said: &str, status: &str, log: &Path) -> String {
    // Its lines are `TIME: TEXT`; the errors' texts begin with `Error`.
    fn text(line: &str) -> &str {
        line.split_once(": ").map_or(line, |(_, t)| t).trim()
    }
    let errors: Vec<&str> = said
        .lines()
        .map(text)
        .filter(|t| t.starts_with("Error"))
        .collect();
    let what = if errors.is_empty() {
        said.lines().last().map_or("nothing", text).to_string()
    } else {
        errors.join("; ")
    };
    let unreadable = said.contains("Unable to open") || said.contains("Permission denied");
    if unreadable {
        let closed = closed_folder(dir).map_or_else(String::new, |(folder, mode)| {
            format!(
                " ({} is mode {mode:03o}: other users cannot go through it)",
                folder.display()
            )
        });
        let why = if as_root {
            "started as root, mosquitto drops to the user `mosquitto` before it reads its \
             password file and ACL, and that user cannot reach them there. Use a folder every \
             user can go through (`--dir /tmp/robobrain-fleet`, say) or run `fleet up` as an \
             ordinary user"
        } else {
            "it cannot open its password file or ACL there"
        };
        format!(
            "mosquitto cannot read the fleet's folder {}{closed}: {why}. mosquitto said: {what}; \
             its log: {}",
            dir.display(),
            log.display()
        )
    } else if said.contains("Address already in use") {
        format!(
            "mosquitto could not listen: the port is taken (--port picks another); its log: {}",
            log.display()
        )
    } else {
        format!(
            "mosquitto stopped before it listened ({status}): {what}; its log: {}",
            log.display()
        )
    }
}

/// The first folder from the root down to `dir` that users other than its
/// owner cannot go through (no `x` for others), with its mode.
fn closed_folder(dir: &Path) -> Option<(PathBuf, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::fs::canonicalize(dir).ok()?;
    let mut folders: Vec<&Path> = dir.ancestors().collect();
    folders.reverse();
    folders.into_iter().find_map(|folder| {
        let mode = std::fs::metadata(folder).ok()?.permissions().mode() & 0o777;
        (mode & 0o001 == 0).then(|| (folder.to_path_buf(), mode))
    })
}

/// Whether process `pid` runs: it exists and is not a zombie (a process
/// that has ended and that nobody has reaped yet still answers `kill -0`).
fn running(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // `PID (NAME) STATE …`: the state follows the name's last `)`.
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

fn down(dir: &Path) -> Result<ExitCode> {
    let file = dir.join("pids");
    let text = std::fs::read_to_string(&file).with_context(|| {
        format!(
            "no fleet started in {} ({} is missing)",
            dir.display(),
            file.display()
        )
    })?;
    let mut entries: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(name, pid)| (name.to_string(), pid.trim().to_string()))
        .collect();
    // The robots first (they say OFFLINE through the broker), the broker last.
    entries.sort_by_key(|(name, _)| name == "broker");
    let alive = |pid: &str| running(pid);
    let (mut stopped, mut dead) = (0, Vec::new());
    for (name, pid) in &entries {
        if name == "broker" {
            // The robots have said OFFLINE through it: wait (5 s at most) until they are gone.
            let deadline = Instant::now() + Duration::from_secs(5);
            while entries.iter().any(|(n, p)| n != "broker" && alive(p))
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        if !alive(pid) {
            eprintln!("{name} (PID {pid}) was not running");
            dead.push(name.as_str());
            continue;
        }
        if Process::new("kill")
            .args(["-TERM", pid])
            .status()
            .is_ok_and(|s| s.success())
        {
            stopped += 1;
        }
    }
    std::fs::remove_file(&file)?;
    if dead.is_empty() {
        println!("fleet down: {stopped} processes stopped");
    } else {
        println!(
            "fleet down: {stopped} processes stopped; {} not running ({})",
            dead.len(),
            dead.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broker_that_cannot_read_its_folder_is_said_plainly() {
        let said = "1795889566: mosquitto version 2.0.11 starting\n\
                    1795889566: Config loaded from /srv/fleet/mosquitto.conf.\n\
                    1795889566: Error: Unable to open pwfile \"/srv/fleet/passwd\".\n\
                    1795889566: Error opening password file \"/srv/fleet/passwd\".\n";
        let log = Path::new("/srv/fleet/mosquitto.log");
        let e = broker_failed(Path::new("/srv/fleet"), true, said, "exit status: 13", log);
        assert!(
            e.starts_with("mosquitto cannot read the fleet's folder /srv/fleet")
                && e.contains("drops to the user `mosquitto`")
                && e.contains(
                    "mosquitto said: Error: Unable to open pwfile \"/srv/fleet/passwd\".; \
                     Error opening password file"
                )
                && e.ends_with("its log: /srv/fleet/mosquitto.log"),
            "{e}"
        );
        let e = broker_failed(Path::new("/srv/fleet"), false, said, "exit status: 13", log);
        assert!(
            !e.contains("root") && e.contains("cannot open its password file"),
            "{e}"
        );
        let other = "1: mosquitto version 2.0.11 starting\n2: Error: Invalid user 'mosquitto'.\n";
        let e = broker_failed(Path::new("/srv/fleet"), true, other, "exit status: 1", log);
        assert_eq!(
            e,
            "mosquitto stopped before it listened (exit status: 1): Error: Invalid user \
             'mosquitto'.; its log: /srv/fleet/mosquitto.log"
        );
    }

    #[test]
    fn private_files_are_0600_from_creation_and_replace_what_was_there() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("robobrain-private-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("secret");
        std::fs::write(&file, "old, world-readable").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let target = dir.join("elsewhere");
        std::fs::write(&target, "not to be touched").unwrap();
        let link = dir.join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_private(&file, "new").unwrap();
        write_private(&link, "new").unwrap();
        for path in [&file, &link] {
            let meta = std::fs::symlink_metadata(path).unwrap();
            assert!(meta.is_file(), "{}", path.display());
            assert_eq!(meta.permissions().mode() & 0o777, 0o600);
            assert_eq!(std::fs::read_to_string(path).unwrap(), "new");
        }
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "not to be touched"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
