//! The in-process [`RobotLink`] over the simulator: requests are applied at
//! once, time passes only in [`RobotLink::advance`], and every advance ends
//! with one telemetry reply.

use crate::link::{LinkError, LinkReply, LinkRequest, RobotLink};

use super::simulator::Sim;
use crate::world::World;

/// A [`RobotLink`] to a simulated robot living in this process.
#[derive(Debug, Clone)]
pub struct SimLink {
    sim: Sim,
}

impl SimLink {
    /// A link to a fresh simulation of `world` seeded with `seed`.
    pub fn new(world: World, seed: u64) -> Self {
        Self {
            sim: Sim::new(world, seed),
        }
    }

    /// The simulation behind the link (for tests, benches and UIs).
    pub fn sim(&self) -> &Sim {
        &self.sim
    }

    /// The simulation behind the link, mutably.
    pub fn sim_mut(&mut self) -> &mut Sim {
        &mut self.sim
    }
}

impl RobotLink for SimLink {
    fn send(&mut self, request: LinkRequest) -> Result<(), LinkError> {
        self.sim.apply(request)
    }

    fn advance(&mut self, dt: f64) {
        self.sim.step(dt);
        self.sim.publish_telemetry();
    }

    fn drain(&mut self, out: &mut Vec<LinkReply>) {
        self.sim.drain(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::{Fault, GoalKind, Telemetry};

    fn trace(seed: u64) -> Vec<Telemetry> {
        let mut link = SimLink::new(World::builtin("apartment").unwrap(), seed);
        let route: Vec<String> = link.sim().world().route("default").unwrap().to_vec();
        let mut out = Vec::new();
        let mut telemetry = Vec::new();
        for (i, zone) in route.iter().enumerate() {
            let target = link.sim().world().zone(zone).unwrap().goal;
            link.send(LinkRequest::SendGoal {
                goal_id: format!("g{i}"),
                kind: GoalKind::Navigate { target, zone: None },
            })
            .unwrap();
            if i == 1 {
                link.send(LinkRequest::Inject {
                    fault: Fault::Block {
                        passage: "front_door".into(),
                    },
                })
                .unwrap();
            }
            for _ in 0..300 {
                link.advance(0.1);
            }
            link.drain(&mut out);
        }
        for r in out {
            if let LinkReply::Telemetry { telemetry: t } = r {
                telemetry.push(t);
            }
        }
        telemetry
    }

    #[test]
    fn one_telemetry_per_advance_and_the_same_seed_replays_exactly() {
        let a = trace(42);
        assert_eq!(a.len(), 5 * 300);
        assert_eq!(a, trace(42));
        assert_ne!(a, trace(43), "the seed drives wheel slip");
        let last = a.last().unwrap();
        assert_eq!(last.zone.as_deref(), Some("entrance"));
        assert_eq!(last.blocked_passages, vec!["front_door".to_string()]);
    }

    #[test]
    fn unknown_passages_are_refused_through_the_link() {
        let mut link = SimLink::new(World::builtin("apartment").unwrap(), 1);
        let e = link.send(LinkRequest::Inject {
            fault: Fault::Unblock {
                passage: "window".into(),
            },
        });
        assert!(matches!(e, Err(LinkError::Invalid(_))));
    }
}
