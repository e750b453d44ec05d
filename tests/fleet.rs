//! The fleet end to end: a real mosquitto with passwords and the fleet
//! ACL, two robots each in its own `robobrain headless` process, and the
//! fleet console (`robobrain fleet`) in tmux — one approval queue across
//! the fleet, a robot opened into the single-robot view, E-stop all, and a
//! robot frozen (SIGSTOP) that the broker reports CONNECTIONBROKEN within
//! its keep-alive and that comes back ONLINE when it thaws.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use robobrain_core::fleet::testkit::{OPERATOR, fleet_broker, robot_password};

use crate::console::{Tmux, console_then_shell};
use crate::support::{quiet_config, root, temp_dir};

/// A robot's config in `dir`: quiet, on the broker at `port` as `id`.
pub(crate) fn robot_config(dir: &Path, id: &str, port: u16) -> std::path::PathBuf {
    let config = quiet_config(dir);
    let password = dir.join("password");
    std::fs::write(&password, robot_password(id)).unwrap();
    let text = std::fs::read_to_string(&config).unwrap();
    let text = text
        + &format!(
            "[fleet]\nbroker = \"mqtt://127.0.0.1:{port}\"\nrobot_id = \"{id}\"\nusername = \"{id}\"\n\
         password_file = {:?}\nkeep_alive_s = 2\n",
            password.display().to_string()
        );
    std::fs::write(&config, text).unwrap();
    config
}

/// Robot `id` as its own process, saying `say` at start.
pub(crate) fn robot(name: &str, id: &str, port: u16, say: &[&str]) -> Child {
    let dir = temp_dir(&format!("fleet-{name}-{id}"));
    let config = robot_config(&dir, id, port);
    let mut args = vec![
        "--config",
        config.to_str().unwrap(),
        "headless",
        "--speed",
        "4",
    ];
    for s in say {
        args.extend(["--say", s]);
    }
    // Its JSONL goes nowhere (the run's own log keeps it); stdin stays open.
    Command::new(env!("CARGO_BIN_EXE_robobrain"))
        .args(&args)
        .current_dir(root())
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("stderr.log")).unwrap())
        .spawn()
        .unwrap()
}

pub(crate) fn signal(child: &Child, sig: &str) {
    let status = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {sig} {}", child.id());
}

/// The table row of `robot` on the screen.
fn row<'s>(screen: &'s str, robot: &str) -> &'s str {
    screen
        .lines()
        .find(|l| {
            l.trim_start_matches(['│', ' ', '>'])
                .starts_with(&format!("{robot} "))
        })
        .unwrap_or("")
}

#[test]
fn one_console_supervises_and_approves_across_the_fleet() {
    let broker = fleet_broker("e2e", &["r1", "r2"], |_| String::new());
    let mut r1 = robot("e2e", "r1", broker.port, &["go to the study"]);
    let mut r2 = robot("e2e", "r2", broker.port, &[]);

    let dir = temp_dir("fleet-console");
    let config = quiet_config(&dir);
    let args = format!(
        "fleet --broker mqtt://127.0.0.1:{} --user {} --password-env ROBOBRAIN_TEST_FLEET_PW",
        broker.port, OPERATOR.0
    );
    let command = format!(
        "export ROBOBRAIN_TEST_FLEET_PW={}; {}",
        OPERATOR.1,
        console_then_shell(&config, &args)
    );
    let tmux = Tmux::start(&command, 160, 40);

    // Both robots, and r1's approval in the fleet's queue.
    let s = tmux.wait_for("both robots and r1's approval", 60, |s| {
        row(s, "r1").contains("ONLINE") && row(s, "r2").contains("ONLINE") && s.contains("study")
    });
    assert!(s.contains("2/2 robots online"), "{s}");
    assert!(s.contains("1 approval(s) waiting"), "{s}");

    // Approve it from the queue: r1 goes on to the study.
    tmux.keys(&["Tab"]);
    tmux.keys(&["a"]);
    let s = tmux.wait_for("the approval answered", 30, |s| {
        s.contains("no approval waiting")
    });
    assert!(s.contains("r1: "), "{s}");
    tmux.wait_for("r1 on its way", 30, |s| row(s, "r1").contains("EXEC"));

    // Open r2: today's single-robot console; Ctrl-F comes back.
    tmux.keys(&["Tab", "Down", "Enter"]);
    tmux.wait_for("r2's own console", 20, |s| {
        s.contains("mode IDLE") && s.contains("r2")
    });
    tmux.keys(&["C-f"]);
    tmux.wait_for("the fleet again", 20, |s| s.contains("robobrain fleet"));

    // E-stop all, asked first.
    tmux.keys(&["E"]);
    tmux.wait_for("the question", 10, |s| s.contains("E-STOP EVERY ROBOT?"));
    tmux.keys(&["y"]);
    tmux.wait_for("every robot stopped", 30, |s| {
        row(s, "r1").contains("ESTOP") && row(s, "r2").contains("ESTOP")
    });

    // r2 frozen: the broker says CONNECTIONBROKEN (its last will) within
    // 1.5 keep-alives; thawed, it reconnects and says ONLINE again.
    signal(&r2, "-STOP");
    tmux.wait_for("r2 broken", 30, |s| {
        row(s, "r2").contains("CONNECTIONBROKEN")
    });
    signal(&r2, "-CONT");
    tmux.wait_for("r2 back", 30, |s| row(s, "r2").contains("ONLINE"));

    tmux.keys(&["q"]);
    tmux.wait_for("the console to end", 20, |s| s.contains("exit=0"));
    for robot in [&mut r1, &mut r2] {
        signal(robot, "-TERM");
        robot.wait().unwrap();
    }
}

/// `fleet up` as an operator runs it on a laptop: a broker with fresh
/// passwords and the ACL and two robots, each told `--say patrol`; the
/// operator's password from the folder it wrote lets a console in, which
/// sees both robots patrol; `fleet down` stops them, and each robot writes
/// its tick times as it goes (`headless --ticks`, what the fleet bench reads).
#[test]
fn fleet_up_starts_a_broker_and_robots_and_fleet_down_stops_them() {
    use robobrain_core::fleet::{ClientEvent, FleetClient, FleetView};
    use robobrain_core::protocol::Activity;
    use robobrain_core::runtime::TickSummary;

    let dir = temp_dir("fleet-up");
    let config = quiet_config(&dir);
    let fleet = dir.join("fleet");
    let port = free_port();
    let (config, fleet_dir) = (config.to_str().unwrap(), fleet.to_str().unwrap());
    let up = crate::support::robobrain(
        &[
            "--config", config, "fleet", "up", "--robots", "2", "--port", &port, "--dir",
            fleet_dir, "--say", "patrol",
        ],
        "",
    );
    let said = &up.stdout;
    assert_eq!(up.code, 0, "{said}{}", up.stderr);
    assert!(
        said.contains("fleet up: 2 robots visible on mqtt://127.0.0.1:"),
        "{said}"
    );
    assert!(said.contains("robobrain fleet down --dir"), "{said}");

    let mqtt = operator_login(&fleet, &port, "fleet-up-test");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let patrolling = rt.block_on(async {
        let mut client = FleetClient::connect(&mqtt);
        let mut view = FleetView::default();
        let wait = tokio::time::timeout(std::time::Duration::from_secs(60), async {
            loop {
                let event: ClientEvent = client.recv().await.unwrap();
                view.apply(&event);
                let n = view
                    .robots()
                    .filter(|r| {
                        r.snapshot
                            .as_ref()
                            .is_some_and(|s| s.activity == Activity::Patrolling)
                    })
                    .count();
                if n == 2 {
                    return n;
                }
            }
        })
        .await;
        client.close().await;
        wait
    });
    let down = crate::support::robobrain(&["fleet", "down", "--dir", fleet_dir], "");
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert!(
        down.stdout.contains("fleet down: 3 processes stopped"),
        "{}",
        down.stdout
    );
    assert_eq!(patrolling, Ok(2), "both robots patrol, told at start");
    assert!(!fleet.join("pids").exists());
    for robot in ["robot-1", "robot-2"] {
        let file = fleet.join(robot).join("ticks.json");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !file.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{robot} wrote no tick times: {e}"));
        let ticks: TickSummary = serde_json::from_str(&text).unwrap();
        assert!(ticks.ticks > 0 && ticks.p99_us >= ticks.p50_us, "{ticks:?}");
    }
}

/// A free port on 127.0.0.1.
fn free_port() -> String {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string()
}

/// The permission bits of `path`.
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// `fleet up` never puts a password on a command line: `mosquitto_passwd`
/// and `mosquitto` are wrapped to record every argument they are given
/// (and the mode of the password file `mosquitto_passwd` is handed), and
/// no password appears there. Under `umask 000`, every file it writes is
/// still 0600; the password file holds hashes only; the broker's config
/// ties each client's id to its user (a second login as `operator` under
/// another client id takes the first one's place).
#[test]
fn fleet_up_keeps_passwords_off_command_lines_and_its_files_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("fleet-up-private");
    let config = quiet_config(&dir);
    let fleet = dir.join("fleet");
    let wrappers = dir.join("bin");
    std::fs::create_dir_all(&wrappers).unwrap();
    let record = dir.join("argv.log");
    for program in ["mosquitto_passwd", "mosquitto"] {
        let real =
            robobrain_core::testing::program(program, "./x setup (Debian package mosquitto)");
        let script = format!(
            "#!/bin/sh\nfor f in \"$@\"; do [ -f \"$f\" ] && echo \"mode $(stat -c %a \"$f\") $f\" >> {record}; done\n\
             echo \"{program} $*\" >> {record}\nexec {real} \"$@\"\n",
            record = record.display(),
            real = real.display()
        );
        let path = wrappers.join(program);
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let port = free_port();
    let command = format!(
        "umask 000; exec {} --config {} fleet up --robots 1 --port {port} --dir {}",
        env!("CARGO_BIN_EXE_robobrain"),
        config.display(),
        fleet.display()
    );
    let path = format!("{}:{}", wrappers.display(), std::env::var("PATH").unwrap());
    let up = Command::new("sh")
        .args(["-c", &command])
        .env("PATH", path)
        .current_dir(crate::support::root())
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&up.stdout).to_string() + &String::from_utf8_lossy(&up.stderr);
    let private = [
        "passwd",
        "acl",
        "mosquitto.conf",
        "mosquitto.log",
        "pids",
        "robot-1.password",
        "operator.password",
        "page.password",
        "viewer.password",
        "robot-1.toml",
        "robot-1/stderr.log",
    ]
    .map(|f| (f, fleet.join(f).exists().then(|| mode(&fleet.join(f)))));
    let log = fleet.join("mosquitto.log");
    let took_over = up.status.success() && second_login_takes_the_first_ones_place(&fleet, &port);
    // A robot that died is not counted as stopped.
    let pids = std::fs::read_to_string(fleet.join("pids")).unwrap_or_default();
    if let Some(pid) = pids.lines().find_map(|l| l.strip_prefix("robot-1 ")) {
        let _ = Command::new("kill").args(["-KILL", pid.trim()]).status();
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    let down = crate::support::robobrain(&["fleet", "down", "--dir", fleet.to_str().unwrap()], "");
    assert!(up.status.success(), "{said}");
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert!(
        down.stdout
            .contains("fleet down: 1 processes stopped; 1 not running (robot-1)"),
        "{}",
        down.stdout
    );
    assert!(said.contains("fleet up: 1 robots visible"), "{said}");

    let argv = std::fs::read_to_string(&record).unwrap();
    assert!(argv.contains("mosquitto_passwd -U "), "{argv}");
    assert!(argv.contains("mosquitto -c "), "{argv}");
    let mut passwords = 0;
    for user in ["robot-1", "operator", "page", "viewer"] {
        let secret = std::fs::read_to_string(fleet.join(format!("{user}.password"))).unwrap();
        assert!(secret.len() >= 16, "{user}: {secret:?}");
        assert!(
            !argv.contains(secret.trim()),
            "{user}'s password on a command line:\n{argv}"
        );
        let hashed = std::fs::read_to_string(fleet.join("passwd")).unwrap();
        assert!(
            !hashed.contains(secret.trim()),
            "a plaintext password left in passwd"
        );
        assert!(hashed.contains(&format!("{user}:$7$")), "{hashed}");
        passwords += 1;
    }
    assert_eq!(passwords, 4);
    let acl = std::fs::read_to_string(fleet.join("acl")).unwrap();
    // The page's own operator login, so the console and the page do not
    // take each other's place (one client id per user), and its command.
    assert!(
        acl.contains("user page\ntopic readwrite robobrain/#\ntopic readwrite uagv/#"),
        "{acl}"
    );
    assert!(
        said.contains("page:   robobrain serve --fleet mqtt://127.0.0.1:")
            && said.contains("--user page --password-file "),
        "{said}"
    );
    assert!(
        acl.contains("user viewer\ntopic read robobrain/#\ntopic read uagv/#"),
        "the viewer docs/fleet.md describes: {acl}"
    );
    assert!(
        argv.contains(&format!("mode 600 {}", fleet.join("passwd").display())),
        "mosquitto_passwd was handed the plaintext file 0600: {argv}"
    );
    for (file, mode) in private {
        assert_eq!(
            mode,
            Some(0o600),
            "{file}: {:?}",
            mode.map(|m| format!("{m:o}"))
        );
    }
    let conf = std::fs::read_to_string(fleet.join("mosquitto.conf")).unwrap();
    assert!(
        conf.lines().any(|l| l == "use_username_as_clientid true"),
        "{conf}"
    );
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains("mosquitto version"),
        "the broker's log is written: {log}"
    );
    assert!(
        took_over,
        "two clients of one user with different client ids both stayed: the id is not the user's\n{log}"
    );
}

/// The operator's login on the broker `fleet up` started in `fleet` on
/// `port`, as the client `id`.
fn operator_login(fleet: &Path, port: &str, id: &str) -> robobrain_core::devices::mqtt::MqttConfig {
    let mut mqtt = robobrain_core::fleet::connection(
        &format!("mqtt://127.0.0.1:{port}"),
        Some("operator"),
        None,
        Some(fleet.join("operator.password").as_path()),
        None,
    )
    .unwrap();
    mqtt.client_id = id.into();
    mqtt
}

/// Two consoles log in as `operator` with different client ids: with
/// `use_username_as_clientid` the broker gives both the id `operator`, so
/// the second takes the first one's place, and says so in its log.
fn second_login_takes_the_first_ones_place(fleet: &Path, port: &str) -> bool {
    use robobrain_core::fleet::FleetClient;
    let login = |id: &str| operator_login(fleet, port, id);
    let said = "Client operator already connected, closing old connection";
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        // Each hears the robot's retained hello once it is in.
        let mut first = FleetClient::connect(&login("console-a"));
        first.recv().await.unwrap();
        let mut second = FleetClient::connect(&login("console-b"));
        second.recv().await.unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let seen = loop {
            let log = std::fs::read_to_string(fleet.join("mosquitto.log")).unwrap();
            if log.contains(said) {
                break true;
            }
            if std::time::Instant::now() > deadline {
                break false;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        };
        first.close().await;
        second.close().await;
        seen
    })
}

/// Run as root, mosquitto drops to the user `mosquitto` before it reads its
/// password file: a fleet folder under a folder closed to other users
/// (0700) is out of its reach, and `fleet up` says so plainly — the
/// folder, why, what to do — and points to the broker's log, which holds
/// mosquitto's own words. As anyone else, mosquitto runs as them, and the
/// same folder works.
#[test]
fn fleet_up_says_plainly_when_mosquitto_cannot_read_its_folder() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = temp_dir("fleet-up-closed");
    let config = quiet_config(&dir);
    let closed = dir.join("closed");
    std::fs::create_dir_all(&closed).unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
    let fleet = closed.join("fleet");
    let port = free_port();
    let up = crate::support::robobrain(
        &[
            "--config",
            config.to_str().unwrap(),
            "fleet",
            "up",
            "--robots",
            "1",
            "--port",
            &port,
            "--dir",
            fleet.to_str().unwrap(),
        ],
        "",
    );
    let as_root = std::fs::metadata(&closed).unwrap().uid() == 0;
    if !as_root {
        let down =
            crate::support::robobrain(&["fleet", "down", "--dir", fleet.to_str().unwrap()], "");
        assert_eq!(
            up.code, 0,
            "not root: mosquitto runs as this user\n{}",
            up.stderr
        );
        assert_eq!(down.code, 0, "{}", down.stderr);
        return;
    }
    assert_ne!(up.code, 0, "{}{}", up.stdout, up.stderr);
    let log = fleet.join("mosquitto.log");
    let e = &up.stderr;
    assert!(
        e.contains(&format!(
            "mosquitto cannot read the fleet's folder {}",
            fleet.display()
        )) && e.contains(&format!("({} is mode 700", closed.display()))
            && e.contains("drops to the user `mosquitto`")
            && e.contains("--dir /tmp/robobrain-fleet")
            && e.contains("Unable to open pwfile")
            && e.contains(&format!("its log: {}", log.display())),
        "{e}"
    );
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(said.contains("Unable to open pwfile"), "{said}");
    assert!(!fleet.join("pids").exists(), "nothing is left running");
    assert!(!fleet.join("robot-1").exists(), "no robot was started");
}
