//! `ironic-sequence`: Ironic's request sequence for the redfish-https and
//! redfish-virtual-media boot interfaces, in Rust, over one session: the
//! AllowableValues check, ForceOff and polling, BIOS staging, CA
//! enrollment, virtual media, boot-mode sync, the Boot PATCH with
//! `If-Match` (retried on 412 as sushy does), then power on.

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

use super::{agent, get, Bmc, BootRequest};
use crate::scenario::Method;

pub(super) struct IronicSequence {
    agent: ureq::Agent,
    base: String,
    pub(super) system: String,
    token: Option<String>,
}

impl IronicSequence {
    pub(super) fn new(bmc: &Bmc) -> Result<Self> {
        let agent = agent();
        let base = bmc.url.trim_end_matches('/').to_string();
        let root = get(&agent, &format!("{base}/redfish/v1/"), None)?.1;
        let sessions = root["Links"]["Sessions"]["@odata.id"]
            .as_str()
            .unwrap_or("/redfish/v1/SessionService/Sessions")
            .to_string();
        let mut resp = agent
            .post(&format!("{base}{sessions}"))
            .header("Content-Type", "application/json")
            .send(json!({"UserName": "admin", "Password": "password"}).to_string())?;
        let token = match resp.status().as_u16() {
            201 => resp
                .headers()
                .get("X-Auth-Token")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            s => bail!(
                "session login: HTTP {s}: {}",
                resp.body_mut().read_to_string().unwrap_or_default()
            ),
        };
        Ok(IronicSequence {
            agent,
            base,
            system: format!("/redfish/v1/Systems/{}", bmc.system),
            token,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub(super) fn get(&self, path: &str) -> Result<(Option<String>, Value)> {
        get(&self.agent, &self.url(path), self.token.as_deref())
    }

    fn send(
        &self,
        method: &str,
        path: &str,
        body: Value,
        if_match: Option<&str>,
    ) -> Result<(u16, Option<String>, String)> {
        self.send_raw(method, path, Some(body), if_match)
    }

    /// `send`, where `None` is a request without a body.
    fn send_raw(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        if_match: Option<&str>,
    ) -> Result<(u16, Option<String>, String)> {
        let url = self.url(path);
        let mut req = match method {
            "PATCH" => self.agent.patch(&url),
            "PUT" => self.agent.put(&url),
            _ => self.agent.post(&url),
        }
        .header("OData-Version", "4.0");
        if body.is_some() {
            req = req.header("Content-Type", "application/json");
        }
        if let Some(t) = &self.token {
            req = req.header("X-Auth-Token", t);
        }
        if let Some(e) = if_match {
            req = req.header("If-Match", e);
        }
        let mut resp = match body {
            Some(b) => req.send(b.to_string()),
            None => req.send_empty(),
        }
        .with_context(|| format!("{method} {url}"))?;
        let location = resp
            .headers()
            .get("Location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        Ok((
            resp.status().as_u16(),
            location,
            resp.body_mut().read_to_string().unwrap_or_default(),
        ))
    }

    fn reset(&self, kind: &str) -> Result<()> {
        for attempt in 0..10 {
            let (s, _, body) = self.send(
                "POST",
                &format!("{}/Actions/ComputerSystem.Reset", self.system),
                json!({"ResetType": kind}),
                None,
            )?;
            match s {
                200 | 202 | 204 => return Ok(()),
                409 if attempt < 9 => std::thread::sleep(Duration::from_secs(2)),
                _ => bail!("Reset {kind}: HTTP {s}: {body}"),
            }
        }
        unreachable!()
    }

    fn power_state(&self) -> Result<String> {
        Ok(self.get(&self.system)?.1["PowerState"]
            .as_str()
            .unwrap_or("")
            .to_string())
    }

    fn power_off(&self) -> Result<()> {
        if self.power_state()? == "Off" {
            return Ok(());
        }
        self.reset("ForceOff")?;
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.power_state()? != "Off" {
            if Instant::now() > deadline {
                bail!("the system did not power off");
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        Ok(())
    }

    pub(super) fn power_on(&self) -> Result<()> {
        self.reset("On")
    }

    pub(super) fn boot(&self, req: &BootRequest) -> Result<()> {
        let (_, sys) = self.get(&self.system)?;
        let target = match req.method {
            Method::UefiHttp => "UefiHttp",
            Method::VirtualMedia => "Cd",
            Method::Pxe => "Pxe",
            Method::Disk => "Hdd",
            Method::PowerOn => return self.power_on(),
        };
        // Ironic's validation: the target must be offered. sushy reads the
        // annotation from the settings object when the System has none;
        // without either, Ironic's check fails (a TypeError there).
        const ALLOWED: &str = "BootSourceOverrideTarget@Redfish.AllowableValues";
        let from_settings = match sys["Boot"].get(ALLOWED) {
            Some(_) => None,
            None => match sys["@Redfish.Settings"]["SettingsObject"]["@odata.id"].as_str() {
                Some(uri) => Some(self.get(uri)?.1),
                None => None,
            },
        };
        let allowed = from_settings
            .as_ref()
            .map_or(&sys["Boot"][ALLOWED], |so| &so["Boot"][ALLOWED])
            .as_array()
            .ok_or_else(|| {
                anyhow!("the BMC gives no {ALLOWED}, on the System or in its settings object (Ironic's redfish-https validation fails here with a TypeError)")
            })?;
        // sushy's Supermicro rule: the virtual CD boots only as UsbCd.
        let supermicro = sys["Manufacturer"]
            .as_str()
            .is_some_and(|m| m.eq_ignore_ascii_case("supermicro"));
        let target = if target == "Cd" && supermicro && allowed.iter().any(|v| v == "UsbCd") {
            "UsbCd"
        } else {
            target
        };
        if !allowed.iter().any(|v| v == target) {
            bail!("{target} is not in BootSourceOverrideTarget@Redfish.AllowableValues");
        }
        self.power_off()?;
        if !req.bios.is_empty() {
            self.stage_bios(&sys, &req.bios)?;
        }
        // After the BIOS settings: iDRAC takes a CA only once HTTP device
        // 1's TLS mode is set (Dell's BiosHttpCertSupportREDFISH.py).
        if let Some(pem) = &req.enroll {
            self.enroll_ca(&sys, pem)?;
        }
        if req.method == Method::VirtualMedia {
            self.insert_media(req.uri.as_deref().unwrap_or_default())?;
        }
        // Boot-mode sync.
        let (_, sys) = self.get(&self.system)?;
        // The node's boot mode: UEFI for the UEFI boot paths; the pxe
        // interface is driven here for OpenPOWER nodes, which are BIOS mode.
        let mode = if req.method == Method::Pxe {
            "Legacy"
        } else {
            "UEFI"
        };
        if sys["Boot"]["BootSourceOverrideMode"] != mode {
            self.patch_boot(&sys, json!({"BootSourceOverrideMode": mode}))
                .context("boot mode PATCH")?;
        }
        let (_, sys) = self.get(&self.system)?;
        let mut boot = json!({"BootSourceOverrideTarget": target});
        if sys["Boot"]["BootSourceOverrideEnabled"] != req.enabled.as_str() {
            boot["BootSourceOverrideEnabled"] = json!(req.enabled.as_str());
        }
        if req.method == Method::UefiHttp && req.bios.is_empty() {
            boot["HttpBootUri"] = json!(req.uri);
        }
        if req.with_mode {
            boot["BootSourceOverrideMode"] = json!(mode);
        }
        self.patch_boot(&sys, boot).context("Boot PATCH")?;
        self.power_on()
    }

    /// A PATCH with the If-Match of the resource's ETag, retried as sushy's
    /// connector does on 412: with the strong form of a weak tag, then
    /// without If-Match.
    fn patch_resource(&self, uri: &str, body: Value) -> Result<(u16, String)> {
        let (etag, _) = self.get(uri)?;
        let mut tries = vec![etag.clone()];
        if let Some(e) = &etag {
            if let Some(strong) = e.strip_prefix("W/") {
                tries.push(Some(strong.to_string()));
            }
            tries.push(None);
        }
        let last = tries.len() - 1;
        for (i, tag) in tries.iter().enumerate() {
            let (s, _, b) = self.send("PATCH", uri, body.clone(), tag.as_deref())?;
            if s != 412 || i == last {
                return Ok((s, b));
            }
        }
        unreachable!("the last try returns")
    }

    /// sushy's `set_system_boot_options`: each Boot field goes to the
    /// settings object when that object shows it, the rest to the System,
    /// each PATCH with the If-Match of its own resource.
    fn patch_boot(&self, sys: &Value, fields: Value) -> Result<()> {
        let settings = sys["@Redfish.Settings"]["SettingsObject"]["@odata.id"].as_str();
        let shown = match settings {
            Some(uri) => self.get(uri)?.1["Boot"].clone(),
            None => Value::Null,
        };
        let (mut to_settings, mut to_system) = (serde_json::Map::new(), serde_json::Map::new());
        for (k, v) in fields.as_object().cloned().unwrap_or_default() {
            if shown.get(&k).is_some() {
                to_settings.insert(k, v);
            } else {
                to_system.insert(k, v);
            }
        }
        for (uri, part) in [
            (settings, to_settings),
            (Some(self.system.as_str()), to_system),
        ] {
            let Some(uri) = uri.filter(|_| !part.is_empty()) else {
                continue;
            };
            let (s, body) = self.patch_resource(uri, json!({ "Boot": part }))?;
            if s >= 300 {
                bail!("PATCH {uri}: HTTP {s}: {body}");
            }
        }
        Ok(())
    }

    /// POSTs a CA to the System's `Boot.Certificates` and checks it is
    /// listed there; on HPE's BMCs, which have none, stages it in the BIOS
    /// TLS settings as proliantutils does.
    pub(super) fn enroll_ca(&self, sys: &Value, pem: &str) -> Result<()> {
        let Some(coll) = sys["Boot"]["Certificates"]["@odata.id"].as_str() else {
            return self.enroll_ca_hpe(sys, pem);
        };
        let coll = coll.to_string();
        let body = json!({"CertificateString": pem, "CertificateType": "PEM"});
        let (s, location, text) = self.send("POST", &coll, body, None)?;
        let location = match (s, location) {
            (201, Some(l)) => l,
            _ => bail!("certificate POST to {coll}: HTTP {s}: {text}"),
        };
        let (_, listed) = self.get(&coll)?;
        let path = location.strip_prefix(&self.base).unwrap_or(&location);
        if !listed["Members"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|m| m["@odata.id"] == path)
        {
            bail!("{coll} does not list the enrolled CA ({location})");
        }
        Ok(())
    }

    /// proliantutils' `add_tls_certificate`: the Bios's
    /// `Oem.Hpe.Links.TlsConfig`, its settings object, a PUT of
    /// `NewCertificates`; the settings then list it for the next start.
    fn enroll_ca_hpe(&self, sys: &Value, pem: &str) -> Result<()> {
        let bios = sys["Bios"]["@odata.id"]
            .as_str()
            .ok_or_else(|| anyhow!("the System has neither Boot.Certificates nor Bios"))?;
        let (_, b) = self.get(bios)?;
        let tls = b["Oem"]["Hpe"]["Links"]["TlsConfig"]["@odata.id"]
            .as_str()
            .ok_or_else(|| {
                anyhow!(
                    "the System has no Boot.Certificates and its Bios no Oem.Hpe.Links.TlsConfig"
                )
            })?;
        let (_, t) = self.get(tls)?;
        let settings = t["@Redfish.Settings"]["SettingsObject"]["@odata.id"]
            .as_str()
            .ok_or_else(|| anyhow!("{tls} has no @Redfish.Settings"))?
            .to_string();
        let body = json!({"NewCertificates": [{"X509Certificate": pem}]});
        let (s, _, text) = self.send("PUT", &settings, body, None)?;
        if s >= 300 {
            bail!("TLS settings PUT to {settings}: HTTP {s}: {text}");
        }
        let (_, staged) = self.get(&settings)?;
        if staged["TlsCaCertificateCount"].as_u64().unwrap_or(0) == 0 {
            bail!("{settings} lists no certificate after the PUT: {staged}");
        }
        Ok(())
    }

    /// PATCHes the attributes into the BIOS settings object, found as
    /// Ironic's drivers find it: `Bios`, then its `@Redfish.Settings`.
    fn stage_bios(&self, sys: &Value, attrs: &[(String, String)]) -> Result<()> {
        let bios = sys["Bios"]["@odata.id"]
            .as_str()
            .ok_or_else(|| anyhow!("the System has no Bios"))?
            .to_string();
        let (_, b) = self.get(&bios)?;
        let settings = b["@Redfish.Settings"]["SettingsObject"]["@odata.id"]
            .as_str()
            .ok_or_else(|| anyhow!("{bios} has no @Redfish.Settings"))?
            .to_string();
        let attributes: serde_json::Map<String, Value> =
            attrs.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        let (s, body) = self.patch_resource(&settings, json!({ "Attributes": attributes }))?;
        if s >= 300 {
            bail!("BIOS settings PATCH: HTTP {s}: {body}");
        }
        Ok(())
    }

    fn insert_media(&self, image: &str) -> Result<()> {
        let (_, sys) = self.get(&self.system)?;
        let manager = sys["Links"]["ManagedBy"][0]["@odata.id"]
            .as_str()
            .ok_or_else(|| anyhow!("no Links.ManagedBy"))?
            .to_string();
        let (_, mgr) = self.get(&manager)?;
        let coll = mgr["VirtualMedia"]["@odata.id"]
            .as_str()
            .ok_or_else(|| anyhow!("the manager has no VirtualMedia"))?
            .to_string();
        let (_, coll) = self.get(&coll)?;
        let mut cd = None;
        for m in coll["Members"].as_array().into_iter().flatten() {
            let uri = m["@odata.id"].as_str().unwrap_or_default().to_string();
            let (_, media) = self.get(&uri)?;
            if media["MediaTypes"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|t| t == "CD" || t == "DVD")
            {
                cd = Some((uri, media));
                break;
            }
        }
        let (cd, media) = cd.ok_or_else(|| anyhow!("no CD virtual media"))?;
        // As sushy: the actions where the BMC has them, else a PATCH of the
        // resource (Lenovo).
        let actions = media.get("Actions").is_some();
        if media["Inserted"] == true {
            if actions {
                let eject = media["Actions"]["#VirtualMedia.EjectMedia"]["target"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                // No body first; iLO wants `{}` and says so with 400/415.
                let (s, _, _) = self.send_raw("POST", &eject, None, None)?;
                if s == 400 || s == 415 {
                    self.send("POST", &eject, json!({}), None)?;
                }
            } else {
                self.patch_resource(&cd, json!({"Image": null, "Inserted": false}))?;
            }
        }
        if !actions {
            let (s, body) = self.patch_resource(
                &cd,
                json!({"Image": image, "Inserted": true, "WriteProtected": true}),
            )?;
            if s >= 300 {
                bail!("VirtualMedia PATCH: HTTP {s}: {body}");
            }
            let (_, media) = self.get(&cd)?;
            if media["Inserted"] != true {
                bail!("the CD reports no media after the PATCH");
            }
            return Ok(());
        }
        let insert = media["Actions"]["#VirtualMedia.InsertMedia"]["target"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        // sushy leaves Inserted and WriteProtected out at their defaults
        // (Supermicro refuses them) and adds credentials when the BMC says
        // they are missing (NVIDIA DGX).
        let mut params = json!({"Image": image});
        let (mut s, mut location, mut body) = self.send("POST", &insert, params.clone(), None)?;
        if s == 400 && body.contains("ActionParameterMissing") && body.contains("UserName") {
            params["UserName"] = json!("none");
            params["Password"] = json!("none");
            (s, location, body) = self.send("POST", &insert, params, None)?;
        }
        match (s, location) {
            (202, Some(monitor)) => {
                let deadline = Instant::now() + Duration::from_secs(300);
                loop {
                    let resp = self.agent.get(&self.url(&monitor)).call()?;
                    match resp.status().as_u16() {
                        202 => {}
                        200 | 204 => break,
                        s => bail!("InsertMedia task: HTTP {s}"),
                    }
                    if Instant::now() > deadline {
                        bail!("InsertMedia task did not finish");
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
            (200 | 204, _) => {}
            (s, _) => bail!("InsertMedia: HTTP {s}: {body}"),
        }
        let (_, media) = self.get(&cd)?;
        if media["Inserted"] != true {
            bail!("the CD reports no media after InsertMedia");
        }
        Ok(())
    }
}
