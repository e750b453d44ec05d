//! The `robobrain` binary: the console (`tui`, the default on a terminal),
//! `demo`, `headless`, `mcp`, `serve` and `scenario`. Thin: the work is in `robobrain-core`
//! and the console in this crate's library.

mod assist;
mod audit;
mod cli;
mod export;
mod flags;
mod fleetcli;
mod headless;
mod mcpserve;
mod memorycli;
mod pretty;
mod progress;
mod serve;
mod simserve;
mod threads;

/// mimalloc: a durable tick allocates and frees much JSON, and it does so
/// about 10 % faster than the system's allocator (docs/benchmarks/durable.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
