//! Shared pieces of the benchmarks: an instant robot and engine builders.

#![allow(dead_code, clippy::expect_used)]

use robobrain_core::config::Config;
use robobrain_core::engine::Engine;
use robobrain_core::link::{
    GoalKind, GoalOutcome, GoalStatus, LinkError, LinkReply, LinkRequest, RobotLink, Telemetry,
};
use robobrain_core::protocol::{Command, Origin};
use robobrain_core::world::World;

/// The binaries' allocator, so that what is measured is what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A robot that finishes every goal at once: the benchmark then measures the
/// brain, not the physics.
#[derive(Default)]
pub(crate) struct InstantLink {
    replies: Vec<LinkReply>,
    telemetry: Telemetry,
}

impl RobotLink for InstantLink {
    fn send(&mut self, request: LinkRequest) -> Result<(), LinkError> {
        // A fresh instant robot after a resume: it never heard of the goal,
        // so the brain sends it again.
        if let LinkRequest::QueryGoal { goal_id } = &request {
            self.replies.push(LinkReply::GoalStatus {
                goal_id: goal_id.clone(),
                status: GoalStatus::Unknown,
            });
        }
        if let LinkRequest::SendGoal { goal_id, kind } = request
            && !matches!(kind, GoalKind::StopBase)
        {
            {
                self.replies.push(LinkReply::Accepted {
                    goal_id: goal_id.clone(),
                });
                self.replies.push(LinkReply::Result {
                    goal_id,
                    outcome: GoalOutcome::Succeeded {
                        navigation_time: 1.0,
                    },
                });
            }
        }
        Ok(())
    }

    fn advance(&mut self, dt: f64) {
        self.telemetry.time += dt;
        self.telemetry.battery_pct = 90.0;
    }

    fn drain(&mut self, out: &mut Vec<LinkReply>) {
        out.append(&mut self.replies);
        out.push(LinkReply::Telemetry {
            telemetry: self.telemetry.clone(),
        });
    }
}

/// The default configuration for thread `thread`, without a voice (a bench
/// times the brain, not espeak-ng).
pub(crate) fn config(thread: &str) -> Config {
    let mut config = Config {
        thread_id: Some(thread.into()),
        ..Config::default()
    };
    config.speech.voice = robobrain_core::voice::VoiceChoice::Text;
    config.skills.keep_frames = false;
    config
}

/// [`config`] with patrols that only go round (no `watch` at the
/// waypoints): what the loop itself costs.
pub(crate) fn loop_only_config(thread: &str) -> Config {
    let mut config = config(thread);
    config.patrol.look_around = false;
    config
}

/// The built-in apartment.
pub(crate) fn world() -> World {
    World::resolve("apartment").expect("built-in world")
}

/// An engine over the instant robot, already running a patrol of `steps`
/// waypoints (kitchen and bedroom in turn, so every step is a new goal).
pub(crate) fn instant_patrol(steps: usize) -> Engine {
    let mut config = loop_only_config("bench");
    // A long patrol is the point here, not the loop guard.
    config.kernel.max_iterations = u32::MAX;
    let mut world = world();
    let zones = ["kitchen", "bedroom"];
    let route: Vec<String> = (0..steps).map(|i| zones[i % 2].to_string()).collect();
    world.routes.push(("bench".into(), route));
    let mut engine = Engine::new(&config, world, Box::new(InstantLink::default())).expect("engine");
    engine.submit(
        Command::StartPatrol {
            route: Some("bench".into()),
        },
        Origin::console(),
    );
    let mut sink = Vec::new();
    engine.tick(&mut sink);
    engine
}

/// Times `iters` ticks of `engine` (each runs one ReAct iteration on a patrol).
pub(crate) fn time_ticks(engine: &mut Engine, iters: u64) -> std::time::Duration {
    let mut events = Vec::with_capacity(64);
    let start = std::time::Instant::now();
    for _ in 0..iters {
        engine.tick(&mut events);
        events.clear();
    }
    start.elapsed()
}
