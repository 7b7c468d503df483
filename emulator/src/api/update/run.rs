//! One firmware update as a task, the way a BMC runs it: `New`, then
//! `Starting` while the image is fetched and verified, then `Running`
//! while it is written (PercentComplete moving), then `Completed` with the
//! image installed or staged for its apply time, or `Exception` with the
//! Update registry's message saying what failed. A BMC that installed its
//! own firmware then restarts into it.

use std::time::Duration;

use serde_json::{json, Value};

use crate::api::error::Msg;
use crate::api::task_store::{Failure, Progress, TaskState};
use crate::api::AppState;
use crate::bmc::firmware::FirmwareRefused;
use crate::firmware::Component;
use crate::model::firmware::ApplyAt;
use crate::model::{MediaImage, System};
use crate::registry::UPDATE;

use super::super::vendor::UpdateOutcome as Outcome;
use super::SIMPLE_UPDATE;

/// Steps PercentComplete takes while an image is written.
const STEPS: u32 = 5;

/// Where the image comes from.
pub enum Source {
    /// Fetched from a URL (SimpleUpdate's `ImageURI`).
    Fetch(MediaImage),
    /// Pushed by the client (MultipartHttpPushUri, HttpPushUri), under
    /// this name.
    Pushed(axum::body::Bytes, String),
}

/// An update request, checked whole before its task starts.
pub struct Request {
    pub sys: System,
    pub source: Source,
    /// The component the client targeted, where it named one.
    pub only: Option<Component>,
    /// The client's `@Redfish.OperationApplyTime`: `None` for Immediate;
    /// unset: the component's default.
    pub apply: Option<Option<ApplyAt>>,
    /// What messages call the target.
    pub target: String,
    /// The task is the vendor's job of the update (its Id the job's).
    pub vendor_job: bool,
}

/// A message of DMTF's Update registry, rendered.
pub fn message(key: &str, args: &[&str]) -> Value {
    let (id, text, severity) = UPDATE.message(key, args);
    json!({
        "@odata.type": "#Message.v1_1_1.Message",
        "MessageId": id,
        "Message": text,
        "MessageArgs": args,
        "MessageSeverity": severity,
        "Severity": severity,
        "Resolution": "None.",
    })
}

/// The task's work; where the vendor runs updates as jobs of its own,
/// the job follows the outcome.
pub async fn run(st: AppState, req: Request, p: Progress) -> Result<(), Failure> {
    // A DELETE of its Task stops it at its next step.
    p.cancellable();
    let result = work(&st, &req, &p).await;
    if req.vendor_job {
        let outcome = match &result {
            Ok(o) | Err((_, o)) => *o,
        };
        if matches!(outcome, Outcome::Staged(_)) {
            // The vendor's TaskService forgets it; its job waits.
            p.forget();
        }
        super::super::vendor::update_job_ended(&st, &req.sys, p.id(), outcome);
    }
    result.map(|_| ()).map_err(|(f, _)| f)
}

/// Fetch, verify, write, then install or stage: how it ended.
async fn work(st: &AppState, req: &Request, p: &Progress) -> Result<Outcome, (Failure, Outcome)> {
    let profile = st.profile(&req.sys);
    let uri = match &req.source {
        Source::Fetch(image) => image.image.clone(),
        Source::Pushed(_, name) => name.clone(),
    };
    let refused = |key: &str| -> (Failure, Outcome) {
        p.message(message(key, &[&uri, &req.target]));
        let why = match &req.source {
            Source::Fetch(_) => bad_image(&uri),
            Source::Pushed(..) => Msg::new("MissingOrMalformedPart", &[]),
        };
        ((400, vec![why]), Outcome::Refused)
    };
    let new = profile.update.new_secs;
    if new > 0.0 {
        tokio::time::sleep(Duration::from_secs_f64(new)).await;
    }
    stop_if_cancelled(p)?;
    let hold_new = profile.update.new_until_staged;
    if !hold_new {
        p.state(TaskState::Starting);
    }
    p.message(message("TransferringToComponent", &[&uri, &req.target]));
    let bytes = match &req.source {
        Source::Pushed(bytes, _) => bytes.clone(),
        Source::Fetch(image) => fetch(st, req, image, p)
            .await
            .map_err(|f| (f, Outcome::NotFetched))?
            .into(),
    };
    stop_if_cancelled(p)?;
    p.message(message("VerifyingAtComponent", &[&uri, &req.target]));
    let image = crate::firmware::parse(&bytes).map_err(|e| {
        tracing::warn!(system = %req.sys.name, %uri, error = %e, "firmware image refused");
        refused("VerificationFailed")
    })?;
    let c = image.component;
    if req.only.is_some_and(|o| o != c)
        || !crate::bmc::firmware::components(&req.sys).any(|x| x == c)
    {
        tracing::warn!(system = %req.sys.name, %uri, component = %c, "firmware image for another target");
        return Err(refused("VerificationFailed"));
    }
    p.message(message("TargetDetermined", &[&req.target, &uri]));
    let at = req
        .apply
        .unwrap_or_else(|| crate::bmc::firmware::default_apply(c));
    if !(hold_new && at.is_some()) {
        p.state(TaskState::Running);
    }
    p.message(message("InstallingOnComponent", &[&uri, &req.target]));
    let path = match &req.source {
        Source::Fetch(_) => uri
            .parse::<axum::http::Uri>()
            .map_or("/".into(), |u| u.path().to_string()),
        Source::Pushed(..) => "/".into(),
    };
    let fault = st.core.faults.decide_update(&req.sys.name, &path);
    // An image for later is in the BMC's staging area before it is
    // written out: a reset while the task runs installs it (Ironic resets
    // a host as soon as it sees its BIOS update Starting or Running). A
    // failing write stages nothing; a vendor that runs updates as jobs of
    // its own (iDRAC) schedules the job once the package is written, and a
    // reset before then applies nothing.
    let early = at.is_some() && !fault.fail && !fault.stuck && !req.vendor_job;
    if early {
        take(st, req, p, &image, at, &uri).await?;
    }
    let secs = apply_secs(&profile.update, &req.sys.id, p.id()) + fault.delay.as_secs_f64();
    if let Err(e) = write(st, req, p, &fault, secs, &uri).await {
        if early {
            // Cancelled while writing: what it staged goes too.
            if let Err(w) = st.core.withdraw_firmware(&req.sys.id, c, p.id()).await {
                tracing::warn!(system = %req.sys.name, error = %w, "staged image not withdrawn");
            }
        }
        return Err(e);
    }
    if !early {
        take(st, req, p, &image, at, &uri).await?;
    }
    // A reset while the task ran may have installed it already.
    let waits = match at {
        None => false,
        Some(_) => st
            .core
            .backend
            .system(&req.sys.id)
            .await
            .map_err(|e| (crate::api::task_store::failure(e), Outcome::Refused))?
            .bmc
            .firmware
            .staged
            .get(&c)
            .is_some_and(|s| s.task == p.id()),
    };
    Ok(match at {
        Some(apply) if waits => {
            p.message(message("AwaitToActivate", &[&uri, &req.target]));
            if apply == ApplyAt::OnReset && c != Component::Bmc {
                Outcome::Staged(c)
            } else {
                Outcome::Waiting
            }
        }
        _ => {
            p.message(message("UpdateSuccessful", &[&req.target, &uri]));
            if c == Component::Bmc && at.is_none() {
                // Written: the BMC restarts into it (the version shows then).
                super::restart_for_update(st, &req.sys);
            }
            Outcome::Installed
        }
    })
}

/// Writing the image: PercentComplete through `secs`; a fault hangs it
/// (until the BMC restarts) or fails it.
async fn write(
    st: &AppState,
    req: &Request,
    p: &Progress,
    fault: &crate::faults::UpdateFault,
    secs: f64,
    uri: &str,
) -> Result<(), (Failure, Outcome)> {
    let failed = || {
        p.message(message("ApplyFailed", &[uri, &req.target]));
        Err((
            (500, vec![Msg::new("OperationFailed", &[])]),
            Outcome::Refused,
        ))
    };
    let step = Duration::from_secs_f64(secs / f64::from(STEPS));
    for i in 1..=STEPS {
        stop_if_cancelled(p)?;
        if fault.stuck && i > STEPS / 2 {
            // Hung: the BMC's restart is what ends it.
            tracing::warn!(system = %req.sys.name, task = %p.id(), "firmware update stuck (fault)");
            st.core.bmc_restart(&req.sys.id).await;
            return failed();
        }
        tokio::time::sleep(step).await;
        p.percent(u8::try_from(i * 100 / STEPS).unwrap_or(100));
    }
    if fault.fail {
        tracing::warn!(system = %req.sys.name, task = %p.id(), "firmware update failed (fault)");
        return failed();
    }
    Ok(())
}

/// The task's end when its Task was deleted: Cancelled, saying so
/// (TaskEvent's TaskCancelled), nothing installed; a vendor's job goes.
fn stop_if_cancelled(p: &Progress) -> Result<(), (Failure, Outcome)> {
    if !p.cancelled() {
        return Ok(());
    }
    let (id, text, severity) = crate::registry::TASK_EVENT.message("TaskCancelled", &[p.id()]);
    p.message(json!({
        "@odata.type": "#Message.v1_1_1.Message",
        "MessageId": id,
        "Message": text,
        "MessageArgs": [p.id()],
        "MessageSeverity": severity,
        "Severity": severity,
        "Resolution": "None.",
    }));
    tracing::info!(task = %p.id(), "firmware update cancelled");
    Err(((409, Vec::new()), Outcome::NotFetched))
}

/// Hands the verified image to the core: installed now, or staged for
/// its apply time.
async fn take(
    st: &AppState,
    req: &Request,
    p: &Progress,
    image: &crate::firmware::Image,
    at: Option<ApplyAt>,
    uri: &str,
) -> Result<(), (Failure, Outcome)> {
    match st
        .core
        .install_firmware(&req.sys.id, image, req.only, at, p.id())
        .await
    {
        Ok(_) => {}
        Err(FirmwareRefused::WrongTarget { .. }) => {
            p.message(message("VerificationFailed", &[uri, &req.target]));
            return Err(((400, vec![bad_image(uri)]), Outcome::Refused));
        }
        Err(FirmwareRefused::Backend(e)) => {
            p.message(message("ApplyFailed", &[uri, &req.target]));
            return Err((crate::api::task_store::failure(e), Outcome::Refused));
        }
    }
    tracing::info!(system = %req.sys.name, component = %image.component, version = %image.version, apply = ?at, "firmware image taken");
    Ok(())
}

/// How long writing the image takes: the profile's time, plus a share of
/// its spread fixed by the system and the task (a fleet's updates end
/// spread out, alike from run to run).
fn apply_secs(update: &crate::profile::update::Update, system: &str, task: &str) -> f64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (system, task).hash(&mut h);
    let share = (h.finish() % 1000) as f64 / 1000.0;
    update.apply_secs * (1.0 + update.apply_spread * share)
}

/// The image from its URL, or the task's failure.
async fn fetch(
    st: &AppState,
    req: &Request,
    image: &MediaImage,
    p: &Progress,
) -> Result<Vec<u8>, Failure> {
    let opts = st.updates.fetch.clone();
    let fetch = image.clone();
    let fetched =
        tokio::task::spawn_blocking(move || crate::backend::download::fetch_bytes(&opts, &fetch))
            .await;
    let uri = &image.image;
    match fetched {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) => {
            tracing::warn!(system = %req.sys.name, %uri, error = %e, "firmware image not fetched");
            p.message(message("TransferFailed", &[uri, &req.target]));
            Err(crate::api::task_store::failure(e))
        }
        Err(e) => {
            tracing::error!(error = %e, "firmware fetch did not finish");
            p.message(message("TransferFailed", &[uri, &req.target]));
            Err((500, vec![Msg::new("InternalError", &[])]))
        }
    }
}

/// The image at `uri` is not one the BMC takes.
fn bad_image(uri: &str) -> Msg {
    tracing::debug!(%uri, "image refused");
    Msg::new("ActionParameterValueError", &["ImageURI", SIMPLE_UPDATE])
}

#[cfg(test)]
mod tests {
    use super::apply_secs;
    use crate::profile::update::Update;

    #[test]
    fn a_fleets_updates_end_spread_out_and_alike_each_run() {
        let u = Update::default();
        let times: Vec<f64> = (0..50)
            .map(|i| apply_secs(&u, &format!("node-{i}"), "1"))
            .collect();
        assert!(times.iter().all(|t| (3.0..=4.5).contains(t)), "{times:?}");
        let (min, max) = times
            .iter()
            .fold((f64::MAX, 0.0f64), |(a, b), t| (a.min(*t), b.max(*t)));
        assert!(max - min > 1.0, "spread out: {min}..{max}");
        assert_eq!(times[7], apply_secs(&u, "node-7", "1"), "alike");
        let none = Update {
            apply_spread: 0.0,
            ..Update::default()
        };
        assert_eq!(apply_secs(&none, "node-7", "1"), 3.0);
    }
}
