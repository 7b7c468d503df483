//! `shoal-emulator`: parse the command line, set up logging, run the server.

use clap::Parser;
use tracing_subscriber::EnvFilter;

// Rendering Redfish JSON is allocation-bound: mimalloc serves the many
// small short-lived allocations of a request markedly faster than glibc's
// allocator (see the README's performance section).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = shoal_emulator::cli::Cli::parse();
    let settings = cli.settings()?;
    shoal_emulator::server::run(settings).await
}
