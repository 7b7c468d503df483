//! `shoal-emulator`: parse the command line, set up logging, run the server.

use clap::Parser;
use tracing_subscriber::EnvFilter;

// Rendering Redfish JSON is allocation-bound: mimalloc serves the many
// small short-lived allocations of a request markedly faster than glibc's
// allocator (see docs/performance.md).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = shoal_emulator::cli::Cli::parse();
    // --debug: Shoal's own decisions at debug level; the libraries under
    // it (TLS, HTTP) stay at info, where their lines say something.
    let level = if cli.debug {
        "info,shoal_emulator=debug,shoal_ipmi=debug"
    } else {
        "info"
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    raise_open_file_limit();
    let settings = cli.settings()?;
    shoal_emulator::server::run(settings).await
}

/// A rack of endpoints needs a listener each plus its clients' connections:
/// the soft limit on open files (often 1024) goes up to the hard one.
fn raise_open_file_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                tracing::warn!("could not raise the open-file limit");
            }
        }
    }
}
