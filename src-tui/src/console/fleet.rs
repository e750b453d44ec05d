//! The fleet console's state and the one place it changes
//! ([`FleetApp::update`]): every robot on the broker in one table, one
//! approval queue across the fleet, and — a robot selected and opened —
//! today's whole single-robot console ([`App`]) for that robot, fed from
//! its topics. No IO here: [`FleetEffect`] says what to send where.

use std::time::Instant;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use robobrain_core::fleet::view::ClientEvent;
use robobrain_core::fleet::{FleetApproval, FleetView, ReplyStatus};
use robobrain_core::protocol::{Command, Role};

use super::app::{self, App, Effect, Level};

/// What a key or a message means to the fleet console.
#[derive(Debug, Clone, PartialEq)]
pub enum FleetAction {
    /// Something heard on the broker.
    Heard(Box<ClientEvent>),
    /// Select the next robot (or approval, in the queue).
    Down,
    /// Select the previous one.
    Up,
    /// Switch between the robot table and the approval queue.
    SwitchPane,
    /// Open the selected robot's full console.
    Open,
    /// Back from a robot's console to the fleet.
    Back,
    /// Approve the selected approval.
    Approve,
    /// Reject the selected approval.
    Reject,
    /// E-stop the selected robot.
    EStop,
    /// E-stop every robot (asks first).
    EStopAll,
    /// Yes (to the question asked).
    Confirm,
    /// Leave.
    Quit,
    /// A key for the open robot's console.
    Robot(app::Action),
}

/// What the driver must do after an update.
#[derive(Debug, Clone, PartialEq)]
pub enum FleetEffect {
    /// Send this command to this robot.
    Send(String, Command),
    /// Send this command to every robot.
    SendAll(Command),
    /// Leave the console.
    Quit,
}

/// Which pane of the fleet view has the keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    /// The robot table.
    Robots,
    /// The approval queue.
    Approvals,
}

/// The fleet console.
pub struct FleetApp {
    /// Every robot heard of.
    pub view: FleetView,
    /// The pane with the keys.
    pub pane: Pane,
    /// The selected robot (index in the table).
    pub selected: usize,
    /// The selected approval (index in the queue).
    pub approval: usize,
    /// The opened robot and its console.
    pub robot: Option<(String, App)>,
    /// The last thing worth saying.
    pub notice: Option<(Level, String)>,
    /// "E-stop all?" is being asked.
    pub confirm_estop_all: bool,
    /// Whether the broker link is up.
    pub connected: bool,
    /// Where the broker is (`mqtt://…`), for the header.
    pub broker: String,
    /// Colours on.
    pub color: bool,
}

impl FleetApp {
    /// A fleet console for the broker at `broker`.
    pub fn new(broker: &str, color: bool) -> Self {
        Self {
            view: FleetView::default(),
            pane: Pane::Robots,
            selected: 0,
            approval: 0,
            robot: None,
            notice: None,
            confirm_estop_all: false,
            connected: false,
            broker: broker.to_string(),
            color,
        }
    }

    /// The selected robot's id.
    pub fn selected_robot(&self) -> Option<String> {
        self.view.robots().nth(self.selected).map(|r| r.id.clone())
    }

    /// The approvals waiting across the fleet.
    pub fn approvals(&self) -> Vec<FleetApproval> {
        self.view.approvals()
    }

    /// Applies `action`; what to send, if anything.
    pub fn update(&mut self, action: FleetAction) -> Option<FleetEffect> {
        // What arrives from the broker is no answer to the question.
        if self.confirm_estop_all && !matches!(action, FleetAction::Heard(_)) {
            self.confirm_estop_all = false;
            if action == FleetAction::Confirm {
                self.notice = Some((Level::Error, "E-STOP sent to every robot".into()));
                return Some(FleetEffect::SendAll(Command::EStop));
            }
            self.notice = Some((Level::Info, "E-stop all: not sent".into()));
            return None;
        }
        match action {
            FleetAction::Heard(event) => {
                self.heard(*event);
                None
            }
            FleetAction::Robot(a) => {
                let (id, app) = self.robot.as_mut()?;
                match app.update(a) {
                    Some(Effect::Send(command)) => Some(FleetEffect::Send(id.clone(), command)),
                    // Leaving a robot's console is going back to the fleet.
                    Some(Effect::Quit) => {
                        self.robot = None;
                        None
                    }
                    None => None,
                }
            }
            FleetAction::Back => {
                self.robot = None;
                None
            }
            FleetAction::Down => {
                self.step(1);
                None
            }
            FleetAction::Up => {
                self.step(-1);
                None
            }
            FleetAction::SwitchPane => {
                self.pane = match self.pane {
                    Pane::Robots => Pane::Approvals,
                    Pane::Approvals => Pane::Robots,
                };
                None
            }
            FleetAction::Open => {
                self.open();
                None
            }
            FleetAction::Approve | FleetAction::Reject => {
                let queue = self.approvals();
                let a = queue.get(self.approval)?;
                let id = a.approval.approval_id.clone();
                let (command, word) = if action == FleetAction::Approve {
                    (
                        Command::Approve {
                            approval_id: id.clone(),
                        },
                        "approved",
                    )
                } else {
                    (
                        Command::Reject {
                            approval_id: id.clone(),
                            reason: "rejected from the fleet console".into(),
                        },
                        "rejected",
                    )
                };
                self.notice = Some((Level::Info, format!("{}: {id} {word}", a.robot)));
                Some(FleetEffect::Send(a.robot.clone(), command))
            }
            FleetAction::EStop => {
                let robot = self.selected_robot()?;
                self.notice = Some((Level::Error, format!("E-STOP sent to {robot}")));
                Some(FleetEffect::Send(robot, Command::EStop))
            }
            FleetAction::EStopAll => {
                self.confirm_estop_all = true;
                None
            }
            FleetAction::Confirm => None,
            FleetAction::Quit => Some(FleetEffect::Quit),
        }
    }

    fn heard(&mut self, event: ClientEvent) {
        self.view.apply(&event);
        match event {
            ClientEvent::Connected => {
                self.connected = true;
            }
            ClientEvent::Disconnected(why) => {
                self.connected = false;
                self.notice = Some((Level::Warn, format!("broker link lost: {why}")));
            }
            ClientEvent::Rejected { topic, why } => {
                self.notice = Some((Level::Warn, format!("rejected a message on {topic}: {why}")));
            }
            ClientEvent::Reply { robot, reply } => match reply.status {
                ReplyStatus::Accepted | ReplyStatus::Duplicate => {}
                ReplyStatus::Refused | ReplyStatus::Rejected => {
                    self.notice = Some((
                        Level::Warn,
                        format!("{robot} {:?}: {}", reply.status, reply.message).to_lowercase(),
                    ));
                }
            },
            ClientEvent::Event { robot, event } => {
                if let Some((id, app)) = &mut self.robot
                    && *id == robot
                {
                    app.set_clock(Instant::now());
                    app.update(app::Action::Core(event));
                }
            }
            ClientEvent::Snapshot { robot, snapshot } => {
                if let Some((id, app)) = &mut self.robot
                    && *id == robot
                {
                    app.update(app::Action::Snapshot(snapshot));
                }
            }
            ClientEvent::Hello { .. } | ClientEvent::Connection { .. } => {}
        }
        let n = self.view.len();
        self.selected = self.selected.min(n.saturating_sub(1));
        let q = self.approvals().len();
        self.approval = self.approval.min(q.saturating_sub(1));
    }

    fn step(&mut self, by: isize) {
        let (index, len) = match self.pane {
            Pane::Robots => (&mut self.selected, self.view.len()),
            Pane::Approvals => (&mut self.approval, self.view.approvals().len()),
        };
        if len == 0 {
            return;
        }
        *index = index.saturating_add_signed(by).min(len - 1);
    }

    fn open(&mut self) {
        let robot = match self.pane {
            Pane::Robots => self.selected_robot(),
            Pane::Approvals => self.approvals().get(self.approval).map(|a| a.robot.clone()),
        };
        let Some(id) = robot else {
            return;
        };
        let Some(entry) = self.view.robot(&id) else {
            return;
        };
        let (Some(hello), Some(snapshot)) = (&entry.hello, &entry.snapshot) else {
            self.notice = Some((Level::Warn, format!("{id}: nothing heard from it yet")));
            return;
        };
        let mut app = App::new(hello.world.clone(), snapshot.clone(), self.color)
            .with_skills(hello.skills.clone());
        app.attached(&format!("{} · {id}", self.broker), Role::Operator);
        self.robot = Some((id, app));
    }
}

/// What `key` means to the fleet console now, if anything.
pub fn action(fleet: &FleetApp, key: KeyEvent) -> Option<FleetAction> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    if let Some((_, app)) = &fleet.robot {
        // Ctrl-F: back to the fleet; everything else is the robot console's.
        if key.code == KeyCode::Char('f') && ctrl {
            return Some(FleetAction::Back);
        }
        return super::keys::action(app, key).map(FleetAction::Robot);
    }
    if fleet.confirm_estop_all {
        return Some(match key.code {
            KeyCode::Char('y' | 'Y') | KeyCode::Enter => FleetAction::Confirm,
            _ => FleetAction::Back,
        });
    }
    match key.code {
        KeyCode::F(12) => Some(FleetAction::EStop),
        KeyCode::Char('x' | 'X') if ctrl => Some(FleetAction::EStop),
        KeyCode::Char('E') => Some(FleetAction::EStopAll),
        KeyCode::Char('c') if ctrl => Some(FleetAction::Quit),
        KeyCode::Char('q') => Some(FleetAction::Quit),
        KeyCode::Down | KeyCode::Char('j') => Some(FleetAction::Down),
        KeyCode::Up | KeyCode::Char('k') => Some(FleetAction::Up),
        KeyCode::Tab | KeyCode::BackTab => Some(FleetAction::SwitchPane),
        KeyCode::Enter => Some(FleetAction::Open),
        KeyCode::F(3) | KeyCode::Char('a') if fleet.pane == Pane::Approvals => {
            Some(FleetAction::Approve)
        }
        KeyCode::F(8) | KeyCode::Char('r') if fleet.pane == Pane::Approvals => {
            Some(FleetAction::Reject)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use robobrain_core::fleet::vda5050::ConnectionState;
    use robobrain_core::protocol::{ApprovalView, Op, Snapshot};

    fn snapshot_with_approval(id: &str) -> Box<Snapshot> {
        let mut s = Snapshot::default();
        s.approvals.push(ApprovalView {
            approval_id: id.into(),
            task_id: "t1".into(),
            op: Op::Wait { seconds: 1.0 },
            reason: "restricted zone".into(),
            risk: "high".into(),
            requested_by: None,
        });
        Box::new(s)
    }

    fn heard(app: &mut FleetApp, event: ClientEvent) {
        app.update(FleetAction::Heard(Box::new(event)));
    }

    #[test]
    fn approvals_are_answered_on_the_robot_they_wait_on() {
        let mut app = FleetApp::new("mqtt://b:1", false);
        heard(
            &mut app,
            ClientEvent::Snapshot {
                robot: "r1".into(),
                snapshot: Box::default(),
            },
        );
        heard(
            &mut app,
            ClientEvent::Snapshot {
                robot: "r2".into(),
                snapshot: snapshot_with_approval("a7"),
            },
        );
        let a = KeyEvent::from(KeyCode::Char('a'));
        assert_eq!(action(&app, a), None, "the queue needs the keys first");
        app.update(FleetAction::SwitchPane);
        assert_eq!(
            app.update(FleetAction::Approve),
            Some(FleetEffect::Send(
                "r2".into(),
                Command::Approve {
                    approval_id: "a7".into()
                }
            ))
        );
    }

    #[test]
    fn e_stop_goes_to_the_selected_robot_and_e_stop_all_asks_first() {
        let mut app = FleetApp::new("mqtt://b:1", false);
        for r in ["r1", "r2"] {
            heard(
                &mut app,
                ClientEvent::Connection {
                    robot: r.into(),
                    state: ConnectionState::Online,
                },
            );
        }
        app.update(FleetAction::Down);
        assert_eq!(
            app.update(FleetAction::EStop),
            Some(FleetEffect::Send("r2".into(), Command::EStop))
        );
        assert_eq!(app.update(FleetAction::EStopAll), None);
        assert!(app.confirm_estop_all);
        assert_eq!(
            app.update(FleetAction::Confirm),
            Some(FleetEffect::SendAll(Command::EStop))
        );
        app.update(FleetAction::EStopAll);
        heard(&mut app, ClientEvent::Connected);
        assert!(app.confirm_estop_all, "a message is no answer");
        assert_eq!(app.update(FleetAction::Back), None);
        assert!(!app.confirm_estop_all);
    }
}
