//! sushy-tools' external notifier, from the change stream: a fake system
//! whose `SUSHY_EMULATOR_FAKE_SYSTEMS` entry says `external_notifier:
//! True` has its sushy-tools document PUT to `EXTERNAL_NOTIFICATION_URL`
//! on every change sushy-tools' fake driver would store. metal3's fake
//! agent (sushy-fake-ipa) is such a receiver: it "boots" an agent when a
//! PUT carries `pending_power.power_state == "On"`.
//!
//! What sushy-tools 2.2.0 sends, and so what is sent here: the system's
//! entry as configured (every key it has, `nics` with their `ip` too),
//! with the keys the driver updates added as they are first set —
//! `pending_power` (`{"power_state", "apply_time"}`, the time in whole
//! seconds, then `null` once it took effect), `power_state`,
//! `boot_device`, `boot_mode`, `secure_boot`, `boot_image` (per device
//! `[image, write_protected, inserted]`). A power action puts the pending
//! state first (a restart sets `power_state` to `Off` with the action's
//! name pending), then the state it took. A PUT with `Content-Type:
//! application/json`; TLS unverified unless `EXTERNAL_NOTIFICATION_CAFILE`
//! names the CAs, a client certificate (CERTFILE + KEYFILE) with the
//! public roots verified. An answer of 400 or more is logged as an error.
//!
//! Where Shoal differs, and why: the PUT leaves after the change, never
//! inside the client's request (sushy-tools blocks the request on it and
//! answers 500 when the receiver is unreachable, the change made); one
//! PUT per change made, where sushy-tools PUTs once per field a request
//! names, changed or not; `apply_time` is when the power transition ends
//! (`--power-delay-ms`), not a random 1–11 s; an inserted image is named
//! by its URL (sushy-tools names the file it downloaded).
//!
//! Invariants: records are handled one at a time, in the stream's order,
//! each PUT finished (or failed) before the next, so a receiver sees
//! sushy-tools' order; a receiver that fails or hangs (30 s) costs a log
//! line, never a request.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};
use tokio::sync::broadcast;

use crate::bmc::changes::{ChangeRecord, What};
use crate::model::{BootTarget, PowerState, ResetType};

/// Where documents go, how, and the systems that send them.
#[derive(Debug, Clone)]
pub struct Notify {
    pub url: String,
    /// `EXTERNAL_NOTIFICATION_CAFILE`: verify the receiver against these.
    pub ca_file: Option<PathBuf>,
    /// `EXTERNAL_NOTIFICATION_CERTFILE` + `_KEYFILE`: a client certificate.
    pub client_cert: Option<(PathBuf, PathBuf)>,
    /// Each notifying system: its Id (the entry's UUID) and its entry.
    pub systems: Vec<(String, Map<String, Value>)>,
    /// How long a power transition takes (for `apply_time`).
    pub power_delay: Duration,
}

/// The PUT's client, made once.
fn agent(n: &Notify) -> anyhow::Result<ureq::Agent> {
    let pem = |p: &PathBuf| std::fs::read(p).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()));
    let mut tls = ureq::tls::TlsConfig::builder();
    if let Some(ca) = &n.ca_file {
        let certs: Vec<ureq::tls::Certificate<'static>> = ureq::tls::parse_pem(&pem(ca)?)
            .filter_map(|i| match i {
                Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                _ => None,
            })
            .collect();
        anyhow::ensure!(
            !certs.is_empty(),
            "EXTERNAL_NOTIFICATION_CAFILE {}: no certificate in it",
            ca.display()
        );
        tls = tls.root_certs(ureq::tls::RootCerts::Specific(Arc::new(certs)));
    } else if let Some((cert, key)) = &n.client_cert {
        let chain: Vec<ureq::tls::Certificate<'static>> = ureq::tls::parse_pem(&pem(cert)?)
            .filter_map(|i| match i {
                Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                _ => None,
            })
            .collect();
        let key = ureq::tls::PrivateKey::from_pem(&pem(key)?)
            .map_err(|e| anyhow::anyhow!("EXTERNAL_NOTIFICATION_KEYFILE {}: {e}", key.display()))?
            .to_owned();
        tls = tls.client_cert(Some(ureq::tls::ClientCert::new_with_certs(&chain, key)));
    } else {
        // sushy-tools' `verify=False`.
        tls = tls.disable_verification(true);
    }
    Ok(ureq::Agent::config_builder()
        .tls_config(tls.build())
        .timeout_global(Some(Duration::from_secs(30)))
        .http_status_as_error(false)
        .build()
        .new_agent())
}

/// Checks the client can be made (at start-up, naming the file), then
/// follows `rx` until it closes.
pub fn spawn(n: Notify, rx: broadcast::Receiver<ChangeRecord>) -> anyhow::Result<()> {
    let agent = agent(&n)?;
    let docs = n.systems.iter().cloned().collect();
    tokio::spawn(follow(Notifier { n, agent, docs }, rx));
    Ok(())
}

struct Notifier {
    n: Notify,
    agent: ureq::Agent,
    /// Each notifying system's document, as sushy-tools stores it.
    docs: HashMap<String, Map<String, Value>>,
}

async fn follow(mut me: Notifier, mut rx: broadcast::Receiver<ChangeRecord>) {
    loop {
        let record = match rx.recv().await {
            Ok(r) => r,
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(missed = n, "external notifier: fell behind the changes");
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let Some(doc) = me.docs.get_mut(&record.system) else {
            continue;
        };
        for body in updates(doc, &record.what, now_secs(), me.n.power_delay) {
            put(&me.agent, &me.n.url, &record.name, body).await;
        }
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What sushy-tools' driver stores for one change of the machine, as the
/// documents it PUTs after each store (none for what it does not store).
fn updates(doc: &mut Map<String, Value>, what: &What, now: u64, delay: Duration) -> Vec<Value> {
    let mut out = Vec::new();
    let mut store = |doc: &mut Map<String, Value>, k: &str, v: Value| {
        doc.insert(k.to_string(), v);
        out.push(Value::Object(doc.clone()));
    };
    let pending = |doc: &Map<String, Value>| {
        doc.get("pending_power")
            .and_then(|p| p.get("power_state"))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    // A power state reached (or the boot of a restart that kept it on)
    // is the pending one taking effect.
    let settles = matches!(
        what,
        What::Power {
            after: PowerState::On | PowerState::Off,
            ..
        } | What::Booted { .. }
    );
    if let (true, Some(to)) = (settles, pending(doc)) {
        let to = if to.contains("Restart") {
            "On".to_string()
        } else {
            to
        };
        doc.insert("power_state".into(), json!(to));
        store(doc, "pending_power", Value::Null);
        return out;
    }
    match what {
        What::Reset { reset, .. } => {
            use ResetType as R;
            let to = match reset {
                R::On | R::ForceOn => "On",
                R::ForceOff | R::GracefulShutdown => "Off",
                R::GracefulRestart | R::ForceRestart => {
                    // Set in place, stored with the pending state.
                    doc.insert("power_state".into(), json!("Off"));
                    reset.as_str()
                }
                // sushy-tools' fake driver refuses the others.
                _ => return out,
            };
            if doc.get("power_state").and_then(Value::as_str) != Some(to) {
                let apply_time = now + delay.as_secs() + u64::from(delay.subsec_nanos() > 0);
                let p = json!({"power_state": to, "apply_time": apply_time});
                store(doc, "pending_power", p);
            }
        }
        // The machine moved by itself: stored as the driver would.
        What::Power {
            after: after @ (PowerState::On | PowerState::Off),
            ..
        } if doc.get("power_state").and_then(Value::as_str) != Some(after.as_str()) => {
            store(doc, "power_state", json!(after.as_str()));
        }
        What::Boot { before, after } => {
            if after.target != before.target && after.target != BootTarget::None {
                store(doc, "boot_device", json!(after.target.as_str()));
            }
            if after.mode != before.mode {
                store(doc, "boot_mode", json!(after.mode.as_str()));
            }
        }
        What::SecureBoot { before, after } if before.enable != after.enable => {
            store(doc, "secure_boot", json!(after.enable));
        }
        What::Media {
            slot,
            before,
            after,
        } if before.image != after.image || before.inserted != after.inserted => {
            let mut images = doc
                .get("boot_image")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let entry = match &after.image {
                Some(i) => json!([i, after.write_protected, true]),
                None => json!([null, true, false]),
            };
            images.insert(slot.as_str().to_string(), entry);
            store(doc, "boot_image", Value::Object(images));
        }
        _ => {}
    }
    out
}

/// One PUT, on a blocking thread; its failure logged.
async fn put(agent: &ureq::Agent, url: &str, name: &str, body: Value) {
    tracing::info!(
        url,
        system = name,
        "external notification: power state changes"
    );
    let (agent, target) = (agent.clone(), url.to_string());
    let sent = tokio::task::spawn_blocking(move || {
        agent
            .put(&target)
            .header("Content-Type", "application/json")
            .send(body.to_string())
            .map(|mut r| {
                let status = r.status().as_u16();
                let text = r.body_mut().read_to_string().unwrap_or_default();
                (status, text)
            })
    })
    .await;
    match sent {
        Ok(Ok((status, _))) if status < 400 => {
            tracing::info!(url, system = name, "external notification sent")
        }
        Ok(Ok((status, text))) => {
            tracing::error!(url, system = name, status, body = %text, "external notification refused")
        }
        Ok(Err(e)) => {
            tracing::error!(url, system = name, error = %e, "external notification failed")
        }
        Err(e) => {
            tracing::error!(url, system = name, error = %e, "external notification task failed")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{BootMode, BootOverride, BootRecord};

    fn doc() -> Map<String, Value> {
        json!({"uuid": "u", "name": "fake", "power_state": "Off", "external_notifier": true,
               "nics": [{"mac": "00:5c:52:31:3a:9c", "ip": "172.22.0.100"}]})
        .as_object()
        .cloned()
        .unwrap()
    }

    #[test]
    fn a_power_on_puts_its_pending_state_then_the_state_it_took() {
        let mut d = doc();
        let z = Duration::ZERO;
        let on = What::Reset {
            reset: ResetType::On,
            before: PowerState::Off,
        };
        let first = updates(&mut d, &on, 100, z);
        assert_eq!(first.len(), 1);
        assert_eq!(first[0]["power_state"], "Off");
        assert_eq!(
            first[0]["pending_power"],
            json!({"power_state": "On", "apply_time": 100})
        );
        assert_eq!(
            first[0]["nics"][0]["ip"], "172.22.0.100",
            "the entry as configured"
        );
        let took = What::Power {
            before: PowerState::Off,
            after: PowerState::On,
        };
        let second = updates(&mut d, &took, 101, z);
        assert_eq!(second.len(), 1);
        assert_eq!(
            (&second[0]["power_state"], &second[0]["pending_power"]),
            (&json!("On"), &Value::Null)
        );
        // Its boot, then an On while on: nothing more to store.
        let booted = What::Booted {
            record: BootRecord {
                at: 101,
                number: 1,
                target: BootTarget::Pxe,
                mode: BootMode::Uefi,
                uri: None,
                media: None,
            },
        };
        assert!(updates(&mut d, &booted, 101, z).is_empty());
        assert!(updates(&mut d, &on, 102, z).is_empty());
        // A restart: Off with the action pending, then On.
        let restart = What::Reset {
            reset: ResetType::GracefulRestart,
            before: PowerState::On,
        };
        let r = updates(&mut d, &restart, 103, Duration::from_millis(1500));
        assert_eq!(r[0]["power_state"], "Off");
        assert_eq!(
            r[0]["pending_power"],
            json!({"power_state": "GracefulRestart", "apply_time": 105})
        );
        let r = updates(&mut d, &booted, 105, z);
        assert_eq!(
            (&r[0]["power_state"], &r[0]["pending_power"]),
            (&json!("On"), &Value::Null)
        );
        // What the fake driver refuses is not stored.
        let nmi = What::Reset {
            reset: ResetType::Nmi,
            before: PowerState::On,
        };
        assert!(updates(&mut d, &nmi, 106, z).is_empty());
    }

    #[test]
    fn boot_settings_are_stored_as_the_driver_names_them() {
        let mut d = doc();
        let before = BootOverride::disabled(BootMode::Uefi);
        let mut after = before.clone();
        after.target = BootTarget::Pxe;
        after.mode = BootMode::Legacy;
        let r = updates(
            &mut d,
            &What::Boot {
                before: before.clone(),
                after: after.clone(),
            },
            1,
            Duration::ZERO,
        );
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(r[0]["boot_device"], "Pxe");
        assert!(r[0].get("boot_mode").is_none());
        assert_eq!(r[1]["boot_mode"], "Legacy");
        // The override used up at boot is no setting sushy-tools clears.
        assert!(updates(
            &mut d,
            &What::Boot {
                before: after,
                after: before
            },
            2,
            Duration::ZERO
        )
        .iter()
        .all(|b| b["boot_device"] == "Pxe"));
    }
}
