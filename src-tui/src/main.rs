//! The `robobrain` binary: `demo`, `headless` and `scenario` (the console
//! comes later). Thin: the work is in `robobrain-core`.

mod cli;
mod headless;
mod pretty;

fn main() -> std::process::ExitCode {
    cli::main()
}
