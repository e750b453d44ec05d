//! `robobrain export`: a finished run's JSONL event log converted for other
//! tools — `export mcap RUN.jsonl -o RUN.mcap` for Foxglove (docs/foxglove.md).
//! The map is the world the log's first snapshot names (or `--world`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use robobrain_core::mapview::MapView;
use robobrain_core::protocol::{Event, EventKind};
use robobrain_core::world::World;

/// What to convert a log to.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum To {
    /// An MCAP file for Foxglove: every event on `/events/<kind>`, the
    /// pose, battery, log lines, map and evidence frames as Foxglove views.
    Mcap {
        /// The run's event log (`runs/<thread>.jsonl`).
        log: PathBuf,
        /// Where to write the MCAP file (default: the log's name, `.mcap`).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// Runs `robobrain export …`; `world` is `--world`, when given.
pub(crate) fn run(to: &To, world: Option<&str>) -> Result<ExitCode> {
    match to {
        To::Mcap { log, output } => mcap(log, output.as_deref(), world),
    }
}

fn mcap(log: &Path, output: Option<&Path>, world: Option<&str>) -> Result<ExitCode> {
    let out = output.map_or_else(|| log.with_extension("mcap"), Path::to_path_buf);
    // A malformed line stops here, naming the file and the line; nothing is written.
    let events = robobrain_core::eventlog::read_with(log, &crate::progress::Bar::on_stderr())?;
    let map = map_of(&events, world, "the recording has no /map");
    let recorded = robobrain_core::mcap::record(&events, &out, map)
        .with_context(|| format!("cannot export {} as MCAP", log.display()))?;
    for frame in &recorded.missing_frames {
        eprintln!("warning: the evidence frame {frame} cannot be read: not in the recording");
    }
    eprintln!(
        "wrote {} ({} events, {} messages)",
        out.display(),
        recorded.events,
        recorded.messages
    );
    Ok(ExitCode::SUCCESS)
}

/// The map of the world `world` names, else the one the log's first
/// snapshot names; `None` (with a warning ending in `without`) when neither
/// resolves.
pub(crate) fn map_of(events: &[Event], world: Option<&str>, without: &str) -> Option<MapView> {
    let named = events.iter().find_map(|e| match &e.kind {
        EventKind::Snapshot { snapshot } => Some(snapshot.world.clone()),
        _ => None,
    });
    let name = world.map(str::to_string).or(named)?;
    match World::resolve(&name) {
        Ok(world) => Some(MapView::of(&world)),
        Err(e) => {
            eprintln!("warning: the world {name:?}: {e}; {without}");
            None
        }
    }
}
