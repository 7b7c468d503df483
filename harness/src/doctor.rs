//! `shoal-harness doctor`: whether this host has what the real-VM
//! scenarios need. Prints one line per required file (`ok` or `MISSING`
//! with the Debian package to install) and Ironic's Python, then which
//! scenarios the host can run; success only when it can run them all.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::lab;

/// Checks this host, printing what it found; the exit code says whether
/// every VM scenario can run here.
pub fn run() -> ExitCode {
    let missing = lab::missing();
    for (p, pkg) in lab::NEEDS
        .iter()
        .chain(lab::NEEDS_PPC64LE)
        .chain(lab::NEEDS_IRONIC)
    {
        let ok = Path::new(p).exists();
        println!(
            "{:<8} {p:<40} {}",
            if ok { "ok" } else { "MISSING" },
            if ok {
                String::new()
            } else {
                format!("install {pkg}")
            }
        );
    }
    let ppc64le = lab::missing_ppc64le();
    let venv = std::env::var_os("SHOAL_IRONIC_VENV").map(PathBuf::from);
    let ironic = crate::ironic::python(venv.as_deref());
    match &ironic {
        Ok(py) => println!("{:<8} {:<40}", "ok", py.display()),
        Err(e) => println!("{:<8} {e}", "MISSING"),
    }
    let ironic_ready =
        ironic.is_ok() && lab::NEEDS_IRONIC.iter().all(|(p, _)| Path::new(p).exists());
    match (missing.is_empty(), ppc64le.is_empty()) {
        (true, true) if !ironic_ready => {
            eprintln!("this host can run the VM scenarios except the ironic-* ones");
            ExitCode::FAILURE
        }
        (true, true) => {
            println!("this host can run every VM scenario");
            ExitCode::SUCCESS
        }
        (true, false) => {
            eprintln!(
                "this host can run the x86_64 VM scenarios, not the ppc64le (petitboot) ones{}",
                if ironic_ready {
                    ""
                } else {
                    ", nor the ironic-* ones"
                }
            );
            ExitCode::FAILURE
        }
        _ => {
            eprintln!("{} requirement(s) missing for VM scenarios", missing.len());
            ExitCode::FAILURE
        }
    }
}
