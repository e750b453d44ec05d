//! The in-process [`RobotLink`] over the simulator: requests are applied at
//! once, time passes only in [`RobotLink::advance`], and every advance ends
//! with one telemetry reply.

use crate::link::{LinkError, LinkReply, LinkRequest, RobotLink};

use super::simulator::Sim;
use super::world::World;

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
