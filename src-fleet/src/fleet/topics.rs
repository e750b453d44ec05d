//! The fleet's topic names: robobrain's own protocol under
//! `robobrain/<robot>/…` and VDA 5050 under `uagv/v2/<manufacturer>/<serial>/…`,
//! and the reverse — which robot and which kind of message a topic is.

use std::fmt::Write as _;

/// The root of robobrain's own topic tree.
pub const ROOT: &str = "robobrain";

/// VDA 5050's interface name and major version in topics.
pub const VDA_PREFIX: &str = "uagv/v2";

/// What a topic of one robot carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Own protocol: the `hello` frame (retained).
    Hello,
    /// Own protocol: the newest snapshot (retained).
    Snapshot,
    /// Own protocol: every event, in `seq` order.
    Events,
    /// Own protocol: commands with ids, operator → robot.
    Command,
    /// Own protocol: the robot's answer to each command, and rejections.
    Reply,
    /// VDA 5050 `order`, master control → robot.
    Order,
    /// VDA 5050 `instantActions`, master control → robot.
    InstantActions,
    /// VDA 5050 `state`.
    State,
    /// VDA 5050 `visualization`.
    Visualization,
    /// VDA 5050 `connection` (retained; the last will).
    Connection,
    /// VDA 5050 `factsheet` (retained).
    Factsheet,
}

impl Kind {
    /// The last topic level.
    pub fn leaf(self) -> &'static str {
        match self {
            Self::Hello => "hello",
            Self::Snapshot => "snapshot",
            Self::Events => "events",
            Self::Command => "command",
            Self::Reply => "reply",
            Self::Order => "order",
            Self::InstantActions => "instantActions",
            Self::State => "state",
            Self::Visualization => "visualization",
            Self::Connection => "connection",
            Self::Factsheet => "factsheet",
        }
    }

    /// Whether it is a VDA 5050 topic.
    pub fn is_vda(self) -> bool {
        matches!(
            self,
            Self::Order
                | Self::InstantActions
                | Self::State
                | Self::Visualization
                | Self::Connection
                | Self::Factsheet
        )
    }

    const ALL: [Self; 11] = [
        Self::Hello,
        Self::Snapshot,
        Self::Events,
        Self::Command,
        Self::Reply,
        Self::Order,
        Self::InstantActions,
        Self::State,
        Self::Visualization,
        Self::Connection,
        Self::Factsheet,
    ];
}

/// One robot's topics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topics {
    /// The robot's id (its VDA 5050 serial number).
    pub robot: String,
    /// The VDA 5050 manufacturer.
    pub manufacturer: String,
}

impl Topics {
    /// The topics of `robot` made by `manufacturer`.
    pub fn new(manufacturer: &str, robot: &str) -> Self {
        Self {
            robot: robot.to_string(),
            manufacturer: manufacturer.to_string(),
        }
    }

    /// The full topic of `kind`.
    pub fn of(&self, kind: Kind) -> String {
        if kind.is_vda() {
            format!(
                "{VDA_PREFIX}/{}/{}/{}",
                self.manufacturer,
                self.robot,
                kind.leaf()
            )
        } else {
            format!("{ROOT}/{}/{}", self.robot, kind.leaf())
        }
    }

    /// Which of this robot's topics `topic` is.
    pub fn kind(&self, topic: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| self.of(*k) == topic)
    }
}

/// The subscriptions a fleet console makes: every robot's own protocol
/// out-topics and VDA 5050 connection.
pub fn console_subscriptions() -> Vec<String> {
    [Kind::Hello, Kind::Snapshot, Kind::Events, Kind::Reply]
        .into_iter()
        .map(|k| format!("{ROOT}/+/{}", k.leaf()))
        .chain([format!("{VDA_PREFIX}/+/+/{}", Kind::Connection.leaf())])
        .collect()
}

/// Which robot and kind a topic a console hears is: `(robot, kind)`.
pub fn parse(topic: &str) -> Option<(String, Kind)> {
    let levels: Vec<&str> = topic.split('/').collect();
    let (robot, leaf) = match levels.as_slice() {
        [root, robot, leaf] if *root == ROOT => (*robot, *leaf),
        ["uagv", "v2", _manufacturer, robot, leaf] => (*robot, *leaf),
        _ => return None,
    };
    let kind = Kind::ALL.into_iter().find(|k| k.leaf() == leaf)?;
    (kind.is_vda() == topic.starts_with(VDA_PREFIX)).then(|| (robot.to_string(), kind))
}

/// The mosquitto ACL for a fleet (docs/fleet.md): every robot, logged in
/// with its id as user name, may write only its own out-topics and read
/// only its own in-topics; `operators` may do everything on both trees;
/// `viewers` may read them.
pub fn mosquitto_acl(operators: &[&str], viewers: &[&str]) -> String {
    let mut acl = String::from("# Robots: the user name is the robot id.\n");
    for kind in Kind::ALL {
        let access = match kind {
            Kind::Command | Kind::Order | Kind::InstantActions => "read",
            // Read too: the robot hears its ONLINE back, for a publish the
            // broker refuses is otherwise dropped without a word.
            Kind::Connection => "readwrite",
            _ => "write",
        };
        let topic = if kind.is_vda() {
            format!("{VDA_PREFIX}/+/%u/{}", kind.leaf())
        } else {
            format!("{ROOT}/%u/{}", kind.leaf())
        };
        let _ = writeln!(acl, "pattern {access} {topic}");
    }
    for user in operators {
        let _ = write!(
            acl,
            "\nuser {user}\ntopic readwrite {ROOT}/#\ntopic readwrite uagv/#\n"
        );
    }
    for user in viewers {
        let _ = write!(
            acl,
            "\nuser {user}\ntopic read {ROOT}/#\ntopic read uagv/#\n"
        );
    }
    acl
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_are_named_and_read_back() {
        let t = Topics::new("acme", "r1");
        assert_eq!(t.of(Kind::Snapshot), "robobrain/r1/snapshot");
        assert_eq!(t.of(Kind::InstantActions), "uagv/v2/acme/r1/instantActions");
        assert_eq!(t.kind("uagv/v2/acme/r1/order"), Some(Kind::Order));
        assert_eq!(t.kind("uagv/v2/acme/r2/order"), None);
        assert_eq!(
            parse("uagv/v2/acme/r7/connection"),
            Some(("r7".into(), Kind::Connection))
        );
        assert_eq!(
            parse("robobrain/r7/events"),
            Some(("r7".into(), Kind::Events))
        );
        assert_eq!(parse("robobrain/r7/state"), None);
        assert_eq!(parse("uagv/v2/acme/r7/snapshot"), None);
        assert_eq!(parse("elsewhere/r7/events"), None);
    }

    #[test]
    fn the_acl_lets_a_robot_write_only_its_own_topics() {
        let acl = mosquitto_acl(&["operator"], &["viewer"]);
        assert!(
            acl.contains("pattern write robobrain/%u/snapshot\n"),
            "{acl}"
        );
        assert!(acl.contains("pattern read robobrain/%u/command\n"), "{acl}");
        assert!(
            acl.contains("pattern readwrite uagv/v2/+/%u/connection\n"),
            "{acl}"
        );
        assert!(acl.contains("pattern read uagv/v2/+/%u/order\n"), "{acl}");
        assert!(!acl.contains("pattern write robobrain/%u/command"), "{acl}");
        assert!(
            acl.contains("user operator\ntopic readwrite robobrain/#\n"),
            "{acl}"
        );
        assert!(
            acl.contains("user viewer\ntopic read robobrain/#\n"),
            "{acl}"
        );
    }
}
