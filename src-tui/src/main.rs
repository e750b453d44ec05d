//! The `robobrain` binary: `demo`, `headless` and `scenario` (the console
//! comes later). Thin: the work is in `robobrain-core`.

mod cli;
mod headless;
mod pretty;
mod simserve;
mod threads;

fn main() -> std::process::ExitCode {
    cli::main()
}
