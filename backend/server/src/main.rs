//! The `mobius` binary: the server by default, or an agent-facing subcommand.

fn main() -> std::process::ExitCode {
    mobius_sys::tune_allocator();
    mobius::cli::main(std::env::args().skip(1).collect())
}
