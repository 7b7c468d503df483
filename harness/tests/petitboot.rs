//! `vm-images/petitboot/pb-discover`, petitboot's network discovery as the
//! ppc64le netboot image runs it, checked rule by rule on this host: busybox
//! runs the script with a lease's variables, a fetcher that serves a folder
//! (and logs every URL asked for) and a kexec that records its arguments.

// Test code: a failed unwrap is a failed test, which is what it should be.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

const MAC: &str = "52:54:00:AB:0C:01";
const BOOTIF: &str = "BOOTIF=01-52-54-00-ab-0c-01";

fn busybox() -> PathBuf {
    let p = PathBuf::from("/bin/busybox");
    assert!(
        p.exists(),
        "/bin/busybox is missing (apt-get install busybox-static; ci/test installs it)"
    );
    p
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../vm-images/petitboot/pb-discover")
}

/// What one run did.
struct Run {
    code: i32,
    /// The console lines ("petitboot: ...").
    log: String,
    /// Every URL the script asked for, in order.
    fetched: Vec<String>,
    /// kexec's argument lists, one per call.
    kexec: Vec<String>,
}

/// Runs pb-discover with the lease `vars` against a server whose files are
/// `files` (URL → content); `kexec` fails when `kexec_fails`.
fn discover(vars: &[(&str, &str)], files: &[(&str, &str)]) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("srv");
    for (url, content) in files {
        let p = root.join(url.replace("://", "/"));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    let fetch = tmp.path().join("fetch");
    let fetched = tmp.path().join("fetched");
    std::fs::write(
        &fetch,
        format!(
            "echo \"$1\" >>{fetched}\nf={root}/$(echo \"$1\" | sed 's|://|/|')\n[ -f \"$f\" ] && cp \"$f\" \"$2\"\n",
            fetched = fetched.display(),
            root = root.display()
        ),
    )
    .unwrap();
    let kexec = tmp.path().join("kexec");
    let kexec_log = tmp.path().join("kexec.log");
    std::fs::write(
        &kexec,
        format!("printf '%s\\n' \"$*\" >>{}\n", kexec_log.display()),
    )
    .unwrap();
    let bb = busybox();
    let mut cmd = Command::new(&bb);
    cmd.arg("sh")
        .arg(script())
        .env_clear()
        .env("PATH", tmp.path().join("bin"))
        .env("mac", MAC)
        .env("interface", "eth0")
        .env("PB_WORK", tmp.path().join("work"))
        // No memory set aside unless a test says so (not the host's).
        .env("PB_CHOSEN", tmp.path().join("chosen"))
        .env(
            "PB_FETCH",
            format!("{} sh {}", bb.display(), fetch.display()),
        )
        .env(
            "PB_KEXEC",
            format!("{} sh {}", bb.display(), kexec.display()),
        );
    // Busybox applets as the commands the script runs.
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for applet in [
        "awk", "sed", "tr", "cat", "mkdir", "rm", "cp", "printf", "od",
    ] {
        std::os::unix::fs::symlink(&bb, bin.join(applet)).unwrap();
    }
    for (k, v) in vars {
        match *k {
            // "BASE SIZE": memory set aside with crashkernel=, as the
            // kernel exports it in /chosen (8 bytes, big-endian, each).
            "crashkernel" => {
                let chosen = tmp.path().join("chosen");
                std::fs::create_dir_all(&chosen).unwrap();
                let (base, size) = v.split_once(' ').unwrap();
                for (name, n) in [("base", base), ("size", size)] {
                    let n = u64::from_str_radix(n, 16).unwrap();
                    let file = chosen.join(format!("linux,crashkernel-{name}"));
                    std::fs::write(file, n.to_be_bytes()).unwrap();
                }
            }
            _ => {
                cmd.env(k, v);
            }
        }
    }
    let out = cmd.output().unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    Run {
        code: out.status.code().unwrap_or(-1),
        log: String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr),
        fetched: read(&fetched).lines().map(str::to_string).collect(),
        kexec: read(&kexec_log).lines().map(str::to_string).collect(),
    }
}

/// The `kexec -l` line, with the scratch folder replaced by `W`.
fn load_line(r: &Run) -> String {
    let l = r
        .kexec
        .first()
        .unwrap_or_else(|| panic!("no kexec:\n{}", r.log));
    let mut out = Vec::new();
    for w in l.split(' ') {
        out.push(match w.rsplit_once("/work/") {
            Some((head, tail)) if head.starts_with("--initrd=") => format!("--initrd=W/{tail}"),
            Some((_, tail)) => format!("W/{tail}"),
            None => w.to_string(),
        });
    }
    out.join(" ")
}

const CONFIG: &str = "default deploy\nlabel deploy\nkernel deploy_kernel\ninitrd deploy_ramdisk\nappend ipa-debug=1\n";

#[test]
fn option_209_as_a_url_is_the_config_and_paths_resolve_beside_it() {
    let r = discover(
        &[
            ("ip", "192.168.1.5"),
            ("pxeconffile", "http://10.0.0.1:8080/node/config"),
        ],
        &[
            ("http://10.0.0.1:8080/node/config", CONFIG),
            ("http://10.0.0.1:8080/node/deploy_kernel", "K"),
            ("http://10.0.0.1:8080/node/deploy_ramdisk", "R"),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.log);
    assert_eq!(
        r.fetched,
        [
            "http://10.0.0.1:8080/node/config",
            "http://10.0.0.1:8080/node/deploy_kernel",
            "http://10.0.0.1:8080/node/deploy_ramdisk"
        ]
    );
    assert_eq!(
        load_line(&r),
        "-l --initrd=W/initrd --append=ipa-debug=1 W/kernel"
    );
    assert_eq!(r.kexec[1], "-e");
    assert!(
        r.log
            .contains("petitboot: default label deploy in http://10.0.0.1:8080/node/config"),
        "{}",
        r.log
    );
}

/// Memory set aside with crashkernel= is where every segment of the
/// loaded kernel goes (the kexec window: memory that holds no task of the
/// running kernel); without it kexec-tools places them as it likes.
#[test]
fn the_kernel_is_loaded_into_the_memory_set_aside_at_boot() {
    let files = [
        ("http://10.0.0.1:8080/node/config", CONFIG),
        ("http://10.0.0.1:8080/node/deploy_kernel", "K"),
        ("http://10.0.0.1:8080/node/deploy_ramdisk", "R"),
    ];
    let r = discover(
        &[
            ("ip", "192.168.1.5"),
            ("pxeconffile", "http://10.0.0.1:8080/node/config"),
            ("crashkernel", "10000000 8000000"),
        ],
        &files,
    );
    assert_eq!(r.code, 0, "{}", r.log);
    assert_eq!(
        load_line(&r),
        "-l --initrd=W/initrd --mem-min=0x10000000 --mem-max=0x17ffffff --append=ipa-debug=1 W/kernel"
    );
    assert!(
        r.log
            .contains("petitboot: kexec window 0x10000000-0x17ffffff"),
        "{}",
        r.log
    );
    let r = discover(
        &[
            ("ip", "192.168.1.5"),
            ("pxeconffile", "http://10.0.0.1:8080/node/config"),
            ("crashkernel", "0 0"),
        ],
        &files,
    );
    assert_eq!(
        load_line(&r),
        "-l --initrd=W/initrd --append=ipa-debug=1 W/kernel"
    );
}

#[test]
fn option_210_as_a_url_is_joined_with_209_as_text() {
    // Ironic's petitboot spec: 210 = http_url, 209 = <uuid>/config.
    let r = discover(
        &[
            ("ip", "192.168.1.5"),
            ("pxepathprefix", "http://10.0.0.1/ironic/"),
            ("pxeconffile", "1be26c0b/config"),
        ],
        &[
            (
                "http://10.0.0.1/ironic/1be26c0b/config",
                "DEFAULT x\nLABEL x\nKERNEL k\n",
            ),
            ("http://10.0.0.1/ironic/1be26c0b/k", "K"),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.log);
    assert_eq!(r.fetched[0], "http://10.0.0.1/ironic/1be26c0b/config");
    assert_eq!(r.fetched[1], "http://10.0.0.1/ironic/1be26c0b/k");
    assert_eq!(load_line(&r), "-l --append= W/kernel");
}

#[test]
fn without_209_the_mac_file_is_probed_first_under_the_tftp_prefix() {
    // Ironic's pxe interface: tftp_root/pxelinux.cfg/01-<mac> pointing at
    // <uuid>/config; 210 is a path, so the server is option 66 / siaddr.
    let r = discover(
        &[("ip", "192.168.1.5"), ("siaddr", "10.0.0.9"), ("pxepathprefix", "/tftpboot/")],
        &[
            (
                "tftp://10.0.0.9/tftpboot/pxelinux.cfg/01-52-54-00-ab-0c-01",
                "default deploy\nlabel deploy\nkernel /u1/deploy_kernel\nappend initrd=u1/deploy_ramdisk ipa-debug=1\nipappend 2\n",
            ),
            ("tftp://10.0.0.9/tftpboot/u1/deploy_kernel", "K"),
            ("tftp://10.0.0.9/tftpboot/u1/deploy_ramdisk", "R"),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.log);
    assert_eq!(
        r.fetched,
        [
            "tftp://10.0.0.9/tftpboot/pxelinux.cfg/01-52-54-00-ab-0c-01",
            "tftp://10.0.0.9/tftpboot/u1/deploy_kernel",
            "tftp://10.0.0.9/tftpboot/u1/deploy_ramdisk"
        ]
    );
    // initrd= stays in the arguments; IPAPPEND 2 adds BOOTIF where it stands.
    assert_eq!(
        load_line(&r),
        format!(
            "-l --initrd=W/initrd --append=initrd=u1/deploy_ramdisk ipa-debug=1 {BOOTIF} W/kernel"
        )
    );
}

#[test]
fn the_ip_is_probed_in_hex_one_digit_shorter_at_a_time_then_default() {
    let probe = "tftp://10.0.0.9/pxelinux.cfg/";
    let r = discover(
        &[("ip", "192.168.1.5"), ("serverid", "10.0.0.9")],
        &[
            (&format!("{probe}C0A8"), CONFIG),
            ("tftp://10.0.0.9/deploy_kernel", "K"),
            ("tftp://10.0.0.9/deploy_ramdisk", "R"),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.log);
    let want: Vec<String> = [
        "01-52-54-00-ab-0c-01",
        "C0A80105",
        "C0A8010",
        "C0A801",
        "C0A80",
        "C0A8",
    ]
    .iter()
    .map(|f| format!("{probe}{f}"))
    .collect();
    assert_eq!(&r.fetched[..6], &want[..], "{}", r.log);

    let r = discover(
        &[("ip", "10.1.2.3"), ("serverid", "10.0.0.9")],
        &[
            (&format!("{probe}default"), CONFIG),
            ("tftp://10.0.0.9/deploy_kernel", "K"),
            ("tftp://10.0.0.9/deploy_ramdisk", "R"),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.log);
    let names: Vec<&str> = r
        .fetched
        .iter()
        .map(|u| u.trim_start_matches(probe))
        .collect();
    assert_eq!(
        &names[..11],
        [
            "01-52-54-00-ab-0c-01",
            "0A010203",
            "0A01020",
            "0A0102",
            "0A010",
            "0A01",
            "0A0",
            "0A",
            "0",
            "default",
            "tftp://10.0.0.9/deploy_kernel"
        ]
    );
}

#[test]
fn option_66_beats_siaddr_and_the_bootfile_folder_is_the_base() {
    let r = discover(
        &[
            ("ip", "192.168.1.5"),
            ("tftp", "10.0.0.66"),
            ("siaddr", "10.0.0.9"),
            ("boot_file", "/boot/ppc/core.elf"),
        ],
        &[("tftp://10.0.0.66/boot/ppc/pxelinux.cfg/default", CONFIG)],
    );
    // The kernel is missing: found config, then a download failure (exit 2).
    assert_eq!(r.code, 2, "{}", r.log);
    assert!(r
        .fetched
        .contains(&"tftp://10.0.0.66/boot/ppc/pxelinux.cfg/default".to_string()));
    assert_eq!(
        r.fetched.last().unwrap(),
        "tftp://10.0.0.66/boot/ppc/deploy_kernel"
    );
    assert!(
        r.log
            .contains("petitboot: download failed: tftp://10.0.0.66/boot/ppc/deploy_kernel"),
        "{}",
        r.log
    );
    assert!(r.kexec.is_empty());
}

#[test]
fn keywords_are_case_insensitive_and_default_must_come_first() {
    let cfg = "LABEL other\nKERNEL other_k\n# a comment\nDeFault Deploy\nLabel Deploy\n  Kernel\t\"k\"\nIPAPPEND 2\nAppend a=1\nLINUX ignored\n::\n";
    let files = [
        ("http://h/c", cfg),
        ("http://h/k", "K"),
        ("http://h/other_k", "O"),
    ];
    let r = discover(&[("pxeconffile", "http://h/c")], &files);
    assert_eq!(r.code, 0, "{}", r.log);
    assert_eq!(r.fetched[1], "http://h/k");
    assert_eq!(load_line(&r), format!("-l --append={BOOTIF} a=1 W/kernel"));

    // A DEFAULT after its LABEL does not make it the default: nothing boots.
    let late = "label deploy\nkernel k\ndefault deploy\n";
    let r = discover(&[("pxeconffile", "http://h/c")], &[("http://h/c", late)]);
    assert_eq!(r.code, 1, "{}", r.log);
    assert!(
        r.log.contains("no default label with a kernel"),
        "{}",
        r.log
    );
    assert_eq!(r.fetched, ["http://h/c"]);
}

#[test]
fn server_root_paths_and_urls_in_the_config() {
    let cfg = "default d\nlabel d\nkernel ::/images/k\ninitrd tftp://other/r\n";
    let r = discover(
        &[("pxeconffile", "http://h/a/b/c")],
        &[
            ("http://h/a/b/c", cfg),
            ("http://h/images/k", "K"),
            ("tftp://other/r", "R"),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.log);
    assert_eq!(r.fetched[1..], ["http://h/images/k", "tftp://other/r"]);
}

#[test]
fn a_missing_209_config_is_not_followed_by_probing() {
    let r = discover(
        &[
            ("ip", "192.168.1.5"),
            ("siaddr", "10.0.0.9"),
            ("pxeconffile", "u1/config"),
        ],
        &[("tftp://10.0.0.9/pxelinux.cfg/default", CONFIG)],
    );
    assert_eq!(r.code, 1, "{}", r.log);
    assert_eq!(r.fetched, ["tftp://10.0.0.9/u1/config"]);
    assert!(
        r.log.contains("petitboot: no configuration found"),
        "{}",
        r.log
    );
}

#[test]
fn no_server_at_all_is_reported() {
    let r = discover(&[("ip", "192.168.1.5")], &[]);
    assert_eq!(r.code, 1, "{}", r.log);
    assert!(r.log.contains("no tftp server"), "{}", r.log);
    assert!(r.fetched.is_empty());
}

#[test]
fn a_dhcpv6_bootfile_url_is_the_config_when_no_server_is_named() {
    // udhcpc6's lease: an address and option 59, no siaddr or server-id.
    let r = discover(
        &[
            ("ipv6", "fd00:5e:1::150"),
            ("bootfile_url", "http://[fd00:5e:1::1]:8080/u1/config"),
        ],
        &[
            ("http://[fd00:5e:1::1]:8080/u1/config", CONFIG),
            ("http://[fd00:5e:1::1]:8080/u1/deploy_kernel", "K"),
            ("http://[fd00:5e:1::1]:8080/u1/deploy_ramdisk", "R"),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.log);
    assert_eq!(
        r.fetched,
        [
            "http://[fd00:5e:1::1]:8080/u1/config",
            "http://[fd00:5e:1::1]:8080/u1/deploy_kernel",
            "http://[fd00:5e:1::1]:8080/u1/deploy_ramdisk"
        ]
    );
    assert!(
        r.log.contains(
            "petitboot: DHCPv6 bootfile-url (option 59): http://[fd00:5e:1::1]:8080/u1/config"
        ),
        "{}",
        r.log
    );
}

#[test]
fn a_named_server_beats_the_dhcpv6_bootfile_url() {
    // user_event_parse_conf_url looks at option 59 only without a host.
    let r = discover(
        &[
            ("ip", "192.168.1.5"),
            ("serverid", "10.0.0.9"),
            ("bootfile_url", "http://[fd00:5e:1::1]:8080/u1/config"),
        ],
        &[
            ("tftp://10.0.0.9/pxelinux.cfg/default", CONFIG),
            ("tftp://10.0.0.9/deploy_kernel", "K"),
            ("tftp://10.0.0.9/deploy_ramdisk", "R"),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.log);
    assert_eq!(
        r.fetched.first().map(String::as_str),
        Some("tftp://10.0.0.9/pxelinux.cfg/01-52-54-00-ab-0c-01")
    );
    assert!(
        !r.fetched.iter().any(|u| u.contains("fd00")),
        "{:?}",
        r.fetched
    );
}
