//! How a scenario talks to the BMC.
//!
//! - `sushy`: the real sushy library (`drivers/sushy_boot.py`, in the test
//!   venv), as Ironic's redfish interfaces use it.
//! - `ironic-sequence`: Ironic's request sequence for the redfish-https and
//!   redfish-virtual-media boot interfaces, in Rust: service root, session,
//!   the System, the UefiHttp AllowableValues check, ForceOff and polling,
//!   boot-mode sync, the Boot PATCH with `If-Match` from the last GET (and
//!   `BootSourceOverrideEnabled` left out when the BMC already says Once),
//!   then power on (retrying a 409). Its own module, `ironic_sequence`.

mod events;
mod ironic_sequence;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;

use crate::scenario::{Driver, Enabled, Method};
use ironic_sequence::IronicSequence;
use shoal_ipmi::boot::mailbox_blocks;

/// The IPMI account every BMC the harness starts is given (the emulator
/// has no built-in one) and its IPMI clients log in with: ipmitool here,
/// pyghmi and Ironic's ipmitool driver in `drivers/*.py`.
pub const IPMI_USER: &str = "admin";
pub const IPMI_PASSWORD: &str = "password";

/// The `--ipmi-user` value that gives a BMC that account.
pub fn ipmi_user_flag() -> String {
    format!("{IPMI_USER}:{IPMI_PASSWORD}")
}

/// One boot request: what to set, then power on.
#[derive(Debug, Clone)]
pub struct BootRequest {
    pub method: Method,
    /// The image or boot URI; `None` for HttpBootUri null.
    pub uri: Option<String>,
    pub enabled: Enabled,
    /// BIOS attributes staged before the override (the vendor route for
    /// the URI); with them, the override carries no HttpBootUri.
    pub bios: Vec<(String, String)>,
    /// The override also carries BootSourceOverrideMode.
    pub with_mode: bool,
    /// IPMI: text for the boot initiator mailbox (parameter 7).
    pub mailbox: Option<String>,
    /// IPMI: leave "set in progress" (parameter 0) after the request.
    pub lock_flags: bool,
    /// A CA (PEM) enrolled in the system's `Boot.Certificates` first, as
    /// an operator does before an HTTPS boot.
    pub enroll: Option<String>,
    /// Virtual media: once a line shows in this heartbeat log, the driver
    /// ejects the CD (Ironic's end of a deploy).
    pub eject_after: Option<PathBuf>,
    /// sushy: a firmware image's URL the driver updates with first
    /// (SimpleUpdate, its task followed to the end).
    pub firmware_update: Option<String>,
}

#[derive(Clone)]
pub struct Bmc {
    pub url: String,
    pub system: String,
    pub python: Option<PathBuf>,
    /// The BMC's IPMI over LAN (host, UDP port), when it listens.
    pub ipmi: Option<(String, u16)>,
}

impl Bmc {
    pub fn boot(&self, driver: Driver, req: &BootRequest) -> Result<()> {
        if req.method == Method::PowerOn && req.mailbox.is_none() {
            return self.power_on(driver);
        }
        match driver {
            Driver::Sushy => self.sushy(&self.sushy_args(req)),
            Driver::IronicSequence => IronicSequence::new(self)?.boot(req),
            Driver::Ironic => bail!("Ironic talks to the BMC itself (crate::ironic)"),
            Driver::Ipmitool => self.ipmitool_boot(req),
            Driver::Pyghmi => self.pyghmi(&pyghmi_args(req)?),
            Driver::Proliantutils => self.proliantutils(&proliantutils_args(req)?),
        }
    }

    /// Enrolls a CA (PEM) in the system's `Boot.Certificates`, as an
    /// operator does before Ironic boots the node over HTTPS.
    pub fn enroll_ca(&self, pem: &str) -> Result<()> {
        let seq = IronicSequence::new(self)?;
        let (_, sys) = seq.get(&seq.system)?;
        seq.enroll_ca(&sys, pem)
    }

    /// Powers on again (for a scenario's second start).
    pub fn power_on(&self, driver: Driver) -> Result<()> {
        match driver {
            Driver::Sushy => self.sushy(&["power-on".to_string()]),
            Driver::IronicSequence => IronicSequence::new(self)?.power_on(),
            Driver::Ironic => bail!("Ironic powers its nodes on itself (crate::ironic)"),
            Driver::Ipmitool => self.ipmitool(&["chassis", "power", "on"]).map(drop),
            Driver::Pyghmi => self.pyghmi(&["power-on".to_string()]),
            Driver::Proliantutils => self.proliantutils(&["power-on".to_string()]),
        }
    }

    /// ipmitool over lanplus against the BMC; its output.
    fn ipmitool(&self, args: &[&str]) -> Result<String> {
        let (host, port) = self
            .ipmi
            .as_ref()
            .ok_or_else(|| anyhow!("the BMC has no IPMI listener for ipmitool"))?;
        let port = port.to_string();
        let out = Command::new("ipmitool")
            .args(["-I", "lanplus", "-H", host, "-p", &port])
            .args(["-U", IPMI_USER, "-P", IPMI_PASSWORD])
            .args(args)
            .output()
            .context("running ipmitool (Debian package ipmitool)")?;
        if !out.status.success() {
            bail!(
                "ipmitool {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// As an operator with ipmitool: power off (and wait) if on, the
    /// mailbox, the boot device (unless only powering on), the lock,
    /// power on.
    fn ipmitool_boot(&self, req: &BootRequest) -> Result<()> {
        let off = || -> Result<bool> {
            Ok(self
                .ipmitool(&["chassis", "power", "status"])?
                .contains("is off"))
        };
        if !off()? {
            self.ipmitool(&["chassis", "power", "off"])?;
            let deadline = Instant::now() + Duration::from_secs(120);
            while !off()? {
                if Instant::now() > deadline {
                    bail!("ipmitool: the machine did not power off in 120 s");
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        }
        if let Some(text) = &req.mailbox {
            for (i, block) in mailbox_blocks(text)
                .map_err(|e| anyhow!("boot.mailbox: {e}"))?
                .iter()
                .enumerate()
            {
                let mut args = vec!["raw".to_string(), "0x00".into(), "0x08".into()];
                args.push("0x07".into());
                args.push(format!("{i:#04x}"));
                args.extend(block.iter().map(|b| format!("{b:#04x}")));
                self.ipmitool(&args.iter().map(String::as_str).collect::<Vec<_>>())?;
            }
        }
        if req.method != Method::PowerOn {
            let dev = match req.method {
                Method::Disk => "disk",
                _ => "pxe",
            };
            let mut args = vec!["chassis", "bootdev", dev];
            if req.enabled == Enabled::Continuous {
                args.push("options=persistent");
            }
            self.ipmitool(&args)?;
            if req.lock_flags {
                self.ipmitool(&["raw", "0x00", "0x08", "0x00", "0x01"])?;
            }
        }
        self.ipmitool(&["chassis", "power", "on"]).map(drop)
    }

    /// `drivers/proliantutils_boot.py` against this BMC: IloClient takes
    /// the host with its port (its Redfish path always speaks HTTPS and
    /// ignores its `port` argument).
    fn proliantutils(&self, args: &[String]) -> Result<()> {
        let host = self.url.strip_prefix("https://").ok_or_else(|| {
            anyhow!(
                "proliantutils speaks HTTPS only; the BMC is at {}",
                self.url
            )
        })?;
        self.python_driver(
            "proliantutils_boot.py",
            &["--host".to_string(), host.to_string()],
            args,
        )
    }

    fn pyghmi(&self, args: &[String]) -> Result<()> {
        let (host, port) = self
            .ipmi
            .as_ref()
            .ok_or_else(|| anyhow!("the BMC has no IPMI listener for pyghmi"))?;
        self.python_driver(
            "pyghmi_boot.py",
            &[
                "--host".to_string(),
                host.clone(),
                "--port".into(),
                port.to_string(),
            ],
            args,
        )
    }

    fn sushy_args(&self, req: &BootRequest) -> Vec<String> {
        let mut a = Vec::new();
        if let Some(u) = &req.firmware_update {
            a.extend(["--firmware-update".into(), u.clone()]);
        }
        match req.method {
            Method::UefiHttp => {
                a.extend([
                    "uefi-http".into(),
                    "--enabled".into(),
                    req.enabled.as_str().into(),
                ]);
                if req.bios.is_empty() {
                    if let Some(u) = &req.uri {
                        a.extend(["--uri".into(), u.clone()]);
                    }
                }
                for (k, v) in &req.bios {
                    a.extend(["--bios".into(), format!("{k}={v}")]);
                }
                if req.with_mode {
                    a.extend(["--mode".into(), "UEFI".into()]);
                }
                if let Some(pem) = &req.enroll {
                    a.extend(["--enroll-ca".into(), pem.clone()]);
                }
            }
            Method::VirtualMedia => {
                a.extend([
                    "virtual-media".into(),
                    "--uri".into(),
                    req.uri.clone().unwrap_or_default(),
                ]);
                if let Some(log) = &req.eject_after {
                    a.extend(["--eject-after-heartbeat".into(), log.display().to_string()]);
                }
            }
            Method::PowerOn => a.push("power-on".into()),
            Method::Pxe | Method::Disk => a.extend([
                if req.method == Method::Pxe {
                    "pxe"
                } else {
                    "disk"
                }
                .into(),
                "--enabled".into(),
                req.enabled.as_str().into(),
            ]),
        }
        a
    }

    fn sushy(&self, args: &[String]) -> Result<()> {
        let at = [
            "--url".to_string(),
            self.url.clone(),
            "--system".into(),
            self.system.clone(),
        ];
        self.python_driver("sushy_boot.py", &at, args)
    }

    /// Runs `drivers/SCRIPT` in the test venv with `at` (where the BMC
    /// is), then `args`.
    fn python_driver(&self, script: &str, at: &[String], args: &[String]) -> Result<()> {
        let python = self.python.as_ref().ok_or_else(|| {
            anyhow!("{script} needs the test venv (SHOAL_TEST_VENV; ci/test builds it)")
        })?;
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("drivers")
            .join(script);
        let out = Command::new(python)
            .arg(path)
            .args(at)
            .args(args)
            .output()
            .with_context(|| format!("running {script}"))?;
        if !out.status.success() {
            bail!(
                "{script} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(())
    }

    /// A System property by path (`Boot/BootSourceOverrideEnabled`), as text.
    pub fn property(&self, path: &str) -> Result<String> {
        // `/redfish/v1/…#A/B`: property A/B of that resource; else the
        // System's.
        let (url, path) = match path.split_once('#').filter(|_| path.starts_with('/')) {
            Some((resource, p)) => (
                format!("{}{}", self.url, resource.replace("{system}", &self.system)),
                p,
            ),
            None => (
                format!("{}/redfish/v1/Systems/{}", self.url, self.system),
                path,
            ),
        };
        let s = get(&agent(), &url, None)?.1;
        // A number steps into an array (`Members/0/MessageId`).
        let v = path
            .split('/')
            .try_fold(&s, |v, k| match (v, k.parse::<usize>()) {
                (Value::Array(a), Ok(i)) => a.get(i),
                _ => v.get(k),
            })
            .ok_or_else(|| anyhow!("no {path} in {url}"))?;
        Ok(match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }
}

/// What proliantutils is asked for: iLO's virtual media boot, an HTTP(S)
/// boot the iLO way (the URL in the BIOS, the CA in its TLS settings), or
/// only the power button.
fn proliantutils_args(req: &BootRequest) -> Result<Vec<String>> {
    match req.method {
        Method::VirtualMedia => Ok(vec![
            "virtual-media".into(),
            "--uri".into(),
            req.uri.clone().unwrap_or_default(),
        ]),
        Method::UefiHttp => {
            let mut a = vec![
                "uefi-http".to_string(),
                "--uri".into(),
                req.uri.clone().unwrap_or_default(),
            ];
            if let Some(pem) = &req.enroll {
                a.extend(["--ca".into(), pem.clone()]);
            }
            Ok(a)
        }
        Method::PowerOn => Ok(vec!["power-on".into()]),
        other => bail!("the proliantutils driver does not boot by {other:?} yet"),
    }
}

/// The pyghmi driver's arguments for one boot request.
/// The mailbox goes as its blocks (hex), laid out here by
/// `shoal_ipmi::boot::mailbox_blocks`, the one layout the ipmitool driver
/// and the BMC's tests use too.
fn pyghmi_args(req: &BootRequest) -> Result<Vec<String>> {
    let only_on = req.method == Method::PowerOn;
    let mut a = vec![match req.method {
        Method::PowerOn => "power-on".to_string(),
        Method::Disk => "disk".into(),
        _ => "pxe".into(),
    }];
    if req.enabled == Enabled::Continuous && !only_on {
        a.push("--persistent".into());
    }
    if let Some(m) = &req.mailbox {
        for block in mailbox_blocks(m).map_err(|e| anyhow!("boot.mailbox: {e}"))? {
            let hex: String = block.iter().map(|b| format!("{b:02x}")).collect();
            a.extend(["--mailbox-block".into(), hex]);
        }
    }
    if req.lock_flags && !only_on {
        a.push("--lock".into());
    }
    Ok(a)
}

fn agent() -> ureq::Agent {
    agent_for(Some(Duration::from_secs(60)))
}

/// An agent whose calls take at most `timeout` in all (`None`: a stream
/// read as long as it lasts).
fn agent_for(timeout: Option<Duration>) -> ureq::Agent {
    let mut b = ureq::Agent::config_builder()
        .timeout_global(timeout)
        .http_status_as_error(false)
        .proxy(None);
    // A BMC served over HTTPS here (an iLO, for proliantutils) has a
    // certificate from the run's CA: trust that CA alone.
    if let Some(der) = crate::tls::run_cas()
        .ok()
        .and_then(|c| c.ca.cert.to_der().ok())
    {
        let roots = ureq::tls::RootCerts::Specific(std::sync::Arc::new(vec![
            ureq::tls::Certificate::from_der(&der).to_owned(),
        ]));
        b = b.tls_config(ureq::tls::TlsConfig::builder().root_certs(roots).build());
    }
    b.build().into()
}

/// GET; returns (ETag, body).
fn get(agent: &ureq::Agent, url: &str, token: Option<&str>) -> Result<(Option<String>, Value)> {
    let mut req = agent
        .get(url)
        .header("OData-Version", "4.0")
        .header("Accept-Encoding", "identity");
    if let Some(t) = token {
        req = req.header("X-Auth-Token", t);
    }
    let mut resp = req.call().with_context(|| format!("GET {url}"))?;
    if resp.status().as_u16() != 200 {
        bail!("GET {url}: HTTP {}", resp.status().as_u16());
    }
    let etag = resp
        .headers()
        .get("ETag")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body: Value = serde_json::from_str(&resp.body_mut().read_to_string()?)?;
    Ok((etag, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pyghmi driver gets the mailbox as the blocks the layout makes
    /// (IANA 02 00 00, the text, a NUL, zeros), in order; a text too long
    /// for the mailbox is an error naming the key.
    #[test]
    fn pyghmi_gets_the_mailbox_as_laid_out_blocks() {
        let req = |mailbox: &str| BootRequest {
            method: Method::Pxe,
            uri: None,
            enabled: Enabled::Once,
            bios: Vec::new(),
            with_mode: false,
            mailbox: Some(mailbox.into()),
            lock_flags: true,
            enroll: None,
            eject_after: None,
            firmware_update: None,
        };
        let text = "petitboot,bootdevs=network";
        let args = pyghmi_args(&req(text)).unwrap();
        let blocks: Vec<&str> = args
            .windows(2)
            .filter(|w| w[0] == "--mailbox-block")
            .map(|w| w[1].as_str())
            .collect();
        assert_eq!(args[0], "pxe");
        assert_eq!(args.last().map(String::as_str), Some("--lock"));
        assert_eq!(blocks.len(), 2, "{args:?}");
        let mut want = vec![0x02, 0x00, 0x00];
        want.extend_from_slice(text.as_bytes());
        want.push(0);
        want.resize(32, 0);
        let got: Vec<u8> = blocks
            .concat()
            .as_bytes()
            .chunks(2)
            .map(|h| u8::from_str_radix(std::str::from_utf8(h).unwrap(), 16).unwrap())
            .collect();
        assert_eq!(got, want);
        let err = pyghmi_args(&req(&"x".repeat(300))).unwrap_err();
        assert!(format!("{err}").starts_with("boot.mailbox:"), "{err}");
    }
}
