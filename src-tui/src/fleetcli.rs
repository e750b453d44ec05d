//! `robobrain fleet`: the fleet console on an MQTT broker, and `fleet up`
//! / `fleet down`: a local mosquitto (passwords, the fleet ACL) and N
//! simulated robots, each its own `robobrain headless` process, for a
//! laptop demo (docs/fleet.md).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command as Process, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use robobrain_core::config::Config;
use robobrain_core::fleet::topics::mosquitto_acl;
use robobrain_core::fleet::vda5050::ConnectionState;
use robobrain_core::fleet::{ClientEvent, FleetClient, FleetView};

/// The operator's user name on a broker `fleet up` starts.
pub const OPERATOR: &str = "operator";

/// Arguments of `robobrain fleet`.
#[derive(Debug, clap::Args)]
pub struct Args {
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
pub enum Action {
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
pub fn run(config: &Config, args: &Args, color: bool) -> Result<ExitCode> {
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

/// Writes `text` to `path`, readable by its owner only.
fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot restrict {}", path.display()))
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
    if dir.join("pids").exists() {
        bail!(
            "{} holds a running fleet: stop it first with `robobrain fleet down --dir {}`",
            dir.display(),
            dir.display()
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let started = Instant::now();
    let ids: Vec<String> = (1..=robots).map(|i| format!("robot-{i}")).collect();
    // Users: every robot (its id) and the operator, each with a fresh password.
    let passwd = dir.join("passwd");
    let _ = std::fs::remove_file(&passwd);
    std::fs::write(&passwd, "").context("cannot create the password file")?;
    let mosquitto_passwd = program("mosquitto_passwd")?;
    for user in ids.iter().map(String::as_str).chain([OPERATOR]) {
        let secret = password()?;
        write_private(&dir.join(format!("{user}.password")), &secret)?;
        let status = Process::new(&mosquitto_passwd)
            .args(["-b"])
            .arg(&passwd)
            .args([user, &secret])
            .status()
            .context("cannot run mosquitto_passwd")?;
        anyhow::ensure!(status.success(), "mosquitto_passwd failed for {user}");
    }
    std::fs::write(dir.join("acl"), mosquitto_acl(&[OPERATOR], &[]))?;
    let conf = format!(
        "listener {port} 127.0.0.1\nallow_anonymous false\npassword_file {0}/passwd\n\
         acl_file {0}/acl\nmessage_size_limit 1048576\nmax_queued_messages 10000\n\
         persistence false\nlog_dest file {0}/mosquitto.log\n",
        dir.display()
    );
    std::fs::write(dir.join("mosquitto.conf"), conf)?;
    let mut pids = Vec::new();
    let broker = Process::new(program("mosquitto")?)
        .arg("-c")
        .arg(dir.join("mosquitto.conf"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start mosquitto")?;
    pids.push(format!("broker {}", broker.id()));
    std::fs::write(dir.join("pids"), pids.join("\n") + "\n")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            bail!(
                "mosquitto did not listen on 127.0.0.1:{port} (is the port taken?); see {}/mosquitto.log",
                dir.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let url = format!("mqtt://127.0.0.1:{port}");
    let exe = std::env::current_exe().context("where is robobrain?")?;
    for id in &ids {
        let robot_dir = dir.join(id);
        std::fs::create_dir_all(&robot_dir)?;
        let toml = format!(
            "world = {world:?}\nruns_dir = {runs:?}\n\n[memory]\nenabled = false\n\n[speech]\nvoice = \"text\"\n\n\
             [fleet]\nbroker = {url:?}\nrobot_id = {id:?}\nusername = {id:?}\npassword_file = {pw:?}\n",
            world = config.world,
            runs = robot_dir.display().to_string(),
            pw = dir.join(format!("{id}.password")).display().to_string(),
        );
        let file = dir.join(format!("{id}.toml"));
        std::fs::write(&file, toml)?;
        let stderr = std::fs::File::create(robot_dir.join("stderr.log"))?;
        let child = Process::new(&exe)
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
        pids.push(format!("{id} {}", child.id()));
        std::fs::write(dir.join("pids"), pids.join("\n") + "\n")?;
    }
    // Watch as the operator until every robot is ONLINE with a snapshot.
    let mut mqtt = robobrain_core::fleet::connection(
        &url,
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
    println!(
        "watch:  robobrain fleet --broker {url} --user {OPERATOR} --password-file {}/{OPERATOR}.password",
        dir.display()
    );
    println!(
        "stop:   robobrain fleet down --dir {}   (PIDs in {}/pids)",
        dir.display(),
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
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
    let alive = |pid: &str| {
        Process::new("kill")
            .args(["-0", pid])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
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
            continue;
        }
        let _ = Process::new("kill").args(["-TERM", pid]).status();
    }
    std::fs::remove_file(&file)?;
    println!("fleet down: {} processes stopped", entries.len());
    Ok(ExitCode::SUCCESS)
}
