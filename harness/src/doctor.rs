//! `shoal-harness doctor`: whether this host has what each kind of
//! real-VM scenario needs. Prints one line per required file (`ok` or
//! `MISSING` with the Debian package to install), then per kind of case
//! (every VM, the emulator's libvirt build, the Python drivers, Ironic,
//! ppc64le) whether it is ready or what to do, naming the real option or
//! command; success only when every kind is ready.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use crate::lab;

/// What was found; each kind of case is judged from it.
struct Found {
    /// The host files every VM scenario needs, missing ones.
    host: Vec<(&'static str, &'static str)>,
    ppc64le: Vec<(&'static str, &'static str)>,
    ironic_files: Vec<(&'static str, &'static str)>,
    /// The emulator the runner would start, and whether it links libvirt.
    emulator: Result<(PathBuf, bool), String>,
    /// The test venv's Python, and whether it imports sushy and pyghmi.
    python: Result<(PathBuf, bool), String>,
    ironic: Result<PathBuf, String>,
}

fn missing(list: &'static [(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    list.iter()
        .copied()
        .filter(|(p, _)| !Path::new(p).exists())
        .collect()
}

/// Each kind of case: its name and `Ok`, or what to do.
fn kinds(f: &Found) -> Vec<(&'static str, Result<(), String>)> {
    let install = |m: &[(&str, &str)]| {
        let pkgs: Vec<&str> = m.iter().map(|(_, p)| *p).collect();
        format!(
            "apt-get install {} (or run ci/test --only apt)",
            pkgs.join(" ")
        )
    };
    let files = |m: &[(&str, &str)]| {
        if m.is_empty() {
            Ok(())
        } else {
            Err(install(m))
        }
    };
    let vm = files(&f.host);
    let emulator = match &f.emulator {
        Ok((_, true)) => Ok(()),
        Ok((p, false)) => Err(format!(
            "{} is the fake-only build: build it with --features libvirt (cargo build \
             -p shoal-emulator --features libvirt) or pass run --emulator",
            p.display()
        )),
        Err(e) => Err(e.clone()),
    };
    let python = match &f.python {
        Ok((_, true)) => Ok(()),
        Ok((p, false)) => Err(format!(
            "{} cannot import sushy and pyghmi: build the test venv (ci/test --only venv)",
            p.display()
        )),
        Err(e) => Err(e.clone()),
    };
    let ironic = match (&f.ironic, files(&f.ironic_files)) {
        (Ok(_), r) => r,
        (Err(e), _) => Err(e.clone()),
    };
    vec![
        ("every VM scenario (libvirt, QEMU, dnsmasq, OVMF)", vm),
        ("the emulator's libvirt backend", emulator),
        ("sushy, pyghmi and proliantutils drivers", python),
        ("ironic-* scenarios", ironic),
        ("ppc64le (petitboot) scenarios", files(&f.ppc64le)),
    ]
}

/// The emulator `run` would start: `SHOAL_EMULATOR`, else the one beside
/// this program; whether it links libvirt (`ldd`).
fn emulator() -> Result<(PathBuf, bool), String> {
    let path = std::env::var_os("SHOAL_EMULATOR")
        .map(PathBuf::from)
        .or_else(|| Some(std::env::current_exe().ok()?.parent()?.join("shoal-emulator")))
        .filter(|p| p.exists())
        .ok_or("no shoal-emulator beside this program: build it, or pass run --emulator (SHOAL_EMULATOR)")?;
    let out = Command::new("ldd")
        .arg(&path)
        .output()
        .map_err(|e| format!("ldd: {e}"))?;
    let libvirt = String::from_utf8_lossy(&out.stdout).contains("libvirt.so");
    Ok((path, libvirt))
}

/// The Python `run` would use: `SHOAL_PYTHON`, else the test venv's.
fn python() -> Result<(PathBuf, bool), String> {
    let path = std::env::var_os("SHOAL_PYTHON")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("SHOAL_TEST_VENV").map(|v| PathBuf::from(v).join("bin/python")))
        .filter(|p| p.exists())
        .ok_or("the test venv is not set: SHOAL_TEST_VENV (or run --python); ci/test --only venv builds it")?;
    let imports = Command::new(&path)
        .args(["-c", "import sushy, pyghmi"])
        .output()
        .is_ok_and(|o| o.status.success());
    Ok((path, imports))
}

/// Checks this host, printing what it found; the exit code says whether
/// every kind of VM scenario can run here.
pub fn run() -> ExitCode {
    for (p, pkg) in lab::NEEDS
        .iter()
        .chain(lab::NEEDS_PPC64LE)
        .chain(lab::NEEDS_IRONIC)
    {
        let ok = Path::new(p).exists();
        let hint = if ok {
            String::new()
        } else {
            format!("install {pkg}")
        };
        println!("{:<8} {p:<40} {hint}", if ok { "ok" } else { "MISSING" });
    }
    let venv = std::env::var_os("SHOAL_IRONIC_VENV").map(PathBuf::from);
    let found = Found {
        host: missing(lab::NEEDS),
        ppc64le: missing(lab::NEEDS_PPC64LE),
        ironic_files: missing(lab::NEEDS_IRONIC),
        emulator: emulator(),
        python: python(),
        ironic: crate::ironic::python(venv.as_deref()).map_err(|e| e.to_string()),
    };
    let mut ready = true;
    for (kind, r) in kinds(&found) {
        match r {
            Ok(()) => println!("ready    {kind}"),
            Err(what) => {
                ready = false;
                println!("NOT      {kind}: {what}");
            }
        }
    }
    if ready {
        println!("this host can run every VM scenario");
        ExitCode::SUCCESS
    } else {
        eprintln!("this host cannot run every VM scenario (NOT above)");
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_there() -> Found {
        Found {
            host: vec![],
            ppc64le: vec![],
            ironic_files: vec![],
            emulator: Ok(("/x/shoal-emulator".into(), true)),
            python: Ok(("/v/bin/python".into(), true)),
            ironic: Ok("/i/bin/python".into()),
        }
    }

    #[test]
    fn a_host_is_ready_only_when_every_kind_is() {
        assert!(kinds(&all_there()).iter().all(|(_, r)| r.is_ok()));
        // The fake-only emulator and an unset venv: not ready, and said how.
        let mut f = all_there();
        f.emulator = Ok(("/x/shoal-emulator".into(), false));
        f.python = Err("the test venv is not set: SHOAL_TEST_VENV (or run --python)".into());
        let k = kinds(&f);
        let not: Vec<&String> = k.iter().filter_map(|(_, r)| r.as_ref().err()).collect();
        assert_eq!(not.len(), 2, "{k:?}");
        assert!(
            not[0].contains("--features libvirt") && not[0].contains("--emulator"),
            "{}",
            not[0]
        );
        assert!(not[1].contains("SHOAL_TEST_VENV"), "{}", not[1]);
        let mut f = all_there();
        f.ppc64le = vec![("/usr/bin/qemu-system-ppc64", "qemu-system-ppc")];
        let k = kinds(&f);
        assert!(k.iter().any(|(n, r)| n.contains("ppc64le")
            && r.as_ref()
                .is_err_and(|e| e.contains("apt-get install qemu-system-ppc"))));
    }
}
