//! `shoal-harness`: end-to-end boot scenarios against shoal-emulator.
//!
//! So far it has one subcommand, `doctor`, which reports whether this host
//! has what real-VM scenarios need (QEMU, libvirt, OVMF, dnsmasq, iproute2)
//! and fails when something is missing, so a CI run stops with a clear list
//! instead of timing out in a scenario. The scenario runner (`run`) comes
//! with the libvirt backend.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "shoal-harness", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check that this host can run real-VM scenarios.
    Doctor {
        /// Directories searched for programs (default: $PATH plus /usr/sbin).
        #[arg(long, env = "SHOAL_DOCTOR_PATH", value_delimiter = ':')]
        path: Option<Vec<PathBuf>>,
        /// Root under which firmware files are looked up (default: /).
        #[arg(long, env = "SHOAL_DOCTOR_ROOT", default_value = "/")]
        root: PathBuf,
    },
}

/// One requirement: a program on the path or a file under the root.
#[derive(Debug, Clone, Copy)]
enum Need {
    Program(&'static str),
    File(&'static str),
}

const NEEDS: &[(Need, &str)] = &[
    (
        Need::Program("qemu-system-x86_64"),
        "qemu-system-x86 (bookworm-backports)",
    ),
    (
        Need::Program("qemu-system-ppc64"),
        "qemu-system-ppc (bookworm-backports)",
    ),
    (Need::Program("libvirtd"), "libvirt-daemon-system"),
    (Need::Program("dnsmasq"), "dnsmasq-base"),
    (Need::Program("ip"), "iproute2"),
    (Need::File("usr/share/OVMF/OVMF_CODE_4M.fd"), "ovmf"),
    (Need::File("usr/share/OVMF/OVMF_VARS_4M.fd"), "ovmf"),
];

fn find_program(name: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    dirs.iter().map(|d| d.join(name)).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Checks every need; returns (line per need, number missing).
fn doctor(dirs: &[PathBuf], root: &Path) -> (Vec<String>, usize) {
    let mut missing = 0;
    let lines = NEEDS
        .iter()
        .map(|(need, package)| {
            let (what, found) = match need {
                Need::Program(p) => (*p, find_program(p, dirs)),
                Need::File(f) => (*f, Some(root.join(f)).filter(|p| p.is_file())),
            };
            match found {
                Some(p) => format!("ok       {what:<34} {}", p.display()),
                None => {
                    missing += 1;
                    format!("MISSING  {what:<34} install {package}")
                }
            }
        })
        .collect();
    (lines, missing)
}

fn default_path() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for extra in ["/usr/sbin", "/sbin"] {
        let extra = PathBuf::from(extra);
        if !dirs.contains(&extra) {
            dirs.push(extra);
        }
    }
    dirs
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Doctor { path, root } => {
            let (lines, missing) = doctor(&path.unwrap_or_else(default_path), &root);
            for l in &lines {
                println!("{l}");
            }
            if missing == 0 {
                println!("this host can run VM scenarios");
                ExitCode::SUCCESS
            } else {
                eprintln!("{missing} requirement(s) missing for VM scenarios");
                ExitCode::FAILURE
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn doctor_reports_what_is_missing_and_what_is_found() {
        let bin = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let exe = bin.path().join("dnsmasq");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Not executable: does not count.
        std::fs::write(bin.path().join("ip"), "").unwrap();
        std::fs::create_dir_all(root.path().join("usr/share/OVMF")).unwrap();
        std::fs::write(root.path().join("usr/share/OVMF/OVMF_CODE_4M.fd"), "").unwrap();
        let (lines, missing) = doctor(&[bin.path().to_path_buf()], root.path());
        assert_eq!(missing, NEEDS.len() - 2, "{lines:#?}");
        assert!(lines
            .iter()
            .any(|l| l.starts_with("ok") && l.contains("dnsmasq")));
        assert!(lines
            .iter()
            .any(|l| l.starts_with("MISSING") && l.contains("ip ") && l.contains("iproute2")));
        assert!(lines
            .iter()
            .any(|l| l.starts_with("ok") && l.contains("OVMF_CODE_4M.fd")));
        assert!(lines
            .iter()
            .any(|l| l.starts_with("MISSING") && l.contains("OVMF_VARS_4M.fd")));
    }
}
