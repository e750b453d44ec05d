//! Which robot a run drives, named by a URL (`--robot`): `sim:` is the
//! simulator in this process, `tcp://HOST:PORT` one in another process
//! (`robobrain sim --listen`), `ros2://?domain=N&namespace=/NAME` a real
//! robot on ROS 2 and Nav2 (feature `ros2`; docs/ros2.md). A new kind of robot is one more variant and
//! one more arm in [`RobotUrl::connect`]; the kernel only ever sees a
//! [`RobotLink`].

use std::fmt;
use std::str::FromStr;

use crate::config::Config;
use crate::link::tcp::TcpLink;
use crate::link::{LinkError, RobotLink};
use crate::ros2::Ros2Options;
use crate::sim::SimLink;
use crate::world::World;

/// A robot, by URL.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum RobotUrl {
    /// The simulator, in this process (`sim:`): the default.
    #[default]
    Sim,
    /// A robot served over TCP (`tcp://HOST:PORT`; a bare `HOST:PORT` too).
    Tcp {
        /// `HOST:PORT`.
        addr: String,
    },
    /// A robot on ROS 2 and Nav2 (`ros2://?domain=0&namespace=/robot1`).
    Ros2(Box<Ros2Options>),
}

impl FromStr for RobotUrl {
    type Err = LinkError;

    fn from_str(url: &str) -> Result<Self, LinkError> {
        let url = url.trim();
        match url.split_once(':') {
            Some(("sim", "")) => Ok(Self::Sim),
            Some(("ros2", _)) => Ok(Self::Ros2(Box::new(Ros2Options::parse(url)?))),
            Some(("tcp", rest)) => match rest.strip_prefix("//") {
                Some(addr) if !addr.is_empty() => Ok(Self::Tcp { addr: addr.into() }),
                _ => Err(invalid(url)),
            },
            // No scheme: HOST:PORT (`127.0.0.1:7000`) is a TCP robot.
            Some((_, rest)) if !url.contains("://") && !rest.is_empty() => Ok(Self::Tcp {
                addr: url.to_string(),
            }),
            _ if url == "sim" => Ok(Self::Sim),
            _ => Err(invalid(url)),
        }
    }
}

fn invalid(url: &str) -> LinkError {
    LinkError::Invalid(format!(
        "robot `{url}`: expected sim: (the simulator in this process), tcp://HOST:PORT \
         or ros2://?domain=N&namespace=/NAME"
    ))
}

impl fmt::Display for RobotUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sim => f.write_str("sim:"),
            Self::Tcp { addr } => write!(f, "tcp://{addr}"),
            Self::Ros2(o) => o.fmt(f),
        }
    }
}

impl RobotUrl {
    /// The robot a run drives: the one given (`--robot`), else the config's
    /// `[robot] url`, else the simulator.
    pub fn chosen(given: Option<&RobotUrl>, config: &Config) -> Result<RobotUrl, LinkError> {
        match (given, &config.robot.url) {
            (Some(url), _) => Ok(url.clone()),
            (None, Some(url)) => url.parse(),
            (None, None) => Ok(Self::Sim),
        }
    }

    /// The link to this robot, for a run of `config` in `world` (the
    /// simulator is seeded with the config's seed).
    pub fn connect(&self, config: &Config, world: &World) -> Result<Box<dyn RobotLink>, LinkError> {
        Ok(match self {
            Self::Sim => Box::new(SimLink::new(world.clone(), config.seed)),
            Self::Tcp { .. } => {
                Box::new(TcpLink::connect(&self.to_string())?.with_deadman(config.link.deadman_s))
            }
            Self::Ros2(o) => o.connect(world)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn robot_urls_name_the_link() {
        let parse = |s: &str| s.parse::<RobotUrl>();
        assert_eq!(parse("sim:").unwrap(), RobotUrl::Sim);
        assert_eq!(parse("sim").unwrap(), RobotUrl::Sim);
        assert_eq!(
            parse("tcp://127.0.0.1:7000").unwrap(),
            RobotUrl::Tcp {
                addr: "127.0.0.1:7000".into()
            }
        );
        assert_eq!(
            parse("127.0.0.1:7000").unwrap().to_string(),
            "tcp://127.0.0.1:7000"
        );
        for bad in ["http://127.0.0.1:7000", "tcp://", "", "carrot"] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(
                e.contains("expected sim: (the simulator in this process), tcp://HOST:PORT"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn ros2_robots_parse_and_the_config_names_one_when_no_flag_does() {
        let url = "ros2://?domain=3&namespace=/robot1";
        let robot = url.parse::<RobotUrl>().unwrap();
        assert!(matches!(&robot, RobotUrl::Ros2(o) if o.domain == 3));
        assert_eq!(robot.to_string(), url);
        let mut config = Config::default();
        assert_eq!(RobotUrl::chosen(None, &config).unwrap(), RobotUrl::Sim);
        config.robot.url = Some(url.into());
        assert_eq!(RobotUrl::chosen(None, &config).unwrap(), robot);
        assert_eq!(
            RobotUrl::chosen(Some(&RobotUrl::Sim), &config).unwrap(),
            RobotUrl::Sim,
            "--robot wins"
        );
    }

    #[test]
    fn an_unreachable_robot_is_an_error_not_a_simulator() {
        let config = Config::default();
        let world = World::builtin("apartment").unwrap();
        assert!(RobotUrl::Sim.connect(&config, &world).is_ok());
        let e = "tcp://127.0.0.1:1"
            .parse::<RobotUrl>()
            .unwrap()
            .connect(&config, &world)
            .err()
            .unwrap();
        assert!(
            e.to_string()
                .contains("cannot reach the robot at tcp://127.0.0.1:1"),
            "{e}"
        );
    }
}
