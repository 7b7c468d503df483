//! The vendor hooks: every place a generic resource shows or does
//! something only some vendors' BMCs do calls one of these, and nothing
//! else of a vendor's wing (`api/dell`, `api/hpe`). Each hook names what
//! it adds or decides; the wings decide from the profile whether it is
//! theirs to answer, so this module is the one place outside the wings
//! that knows there are two. What a hook does not need a wing for is a
//! predicate on the profile instead (`profile/behaviour.rs`: links that
//! end in `/`, a BIOS settings object that takes a POST, …).
//!
//! A wing's own resources are its routes (`dell::router`, `hpe::router`,
//! merged in `api::routes`); wings may use generic modules freely.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use serde_json::{Map, Value};

use super::error::ApiError;
use super::storage::Names;
use super::{dell, hpe, AppState};
use crate::bmc::jobs::Job;
use crate::model::{MediaSlot, System};
use crate::profile::Profile;

/// The service root's `Oem`: an iDRAC's service tag, an iLO's generation.
/// The vendor's own top-level resources (iLO's JsonSchemas, where HPE's
/// iLOrest finds the schemas it asks for at login).
pub(super) fn top_level(st: &AppState) -> Vec<(&'static str, &'static str)> {
    hpe::top_level(st.root_profile)
}

pub(super) fn root_oem(st: &AppState) -> Option<Value> {
    dell::root_oem(st).or_else(|| hpe::root_oem(st.root_profile))
}

/// The service tag the service root of one BMC serving `sys` shows.
pub(super) fn service_tag(sys: &System, profile: &Profile) -> Option<Arc<str>> {
    dell::service_tag(sys, profile)
}

/// Adds the vendor's live parts of the System resource (its `Oem`, its
/// links) to `v`.
pub(super) fn system_parts(st: &AppState, sys: &System, profile: &Profile, v: &mut Value) {
    hpe::system_parts(st, sys, profile, v);
    dell::raid::system_parts(st, sys, v);
}

/// What of the System resource moves with time alone (iLO's `PostState`
/// after a start), as a number: the render cache keys on it.
pub(super) fn system_clock(st: &AppState, sys: &System) -> u8 {
    hpe::post_state(st, sys).map_or(0, |p| p as u8 + 1)
}

/// Adds the vendor's parts of the Manager resource (its OEM actions and
/// links) to `v`.
pub(super) fn manager_parts(st: &AppState, sys: &System, profile: &Profile, v: &mut Value) {
    dell::manager_parts(st, sys, profile, v);
    hpe::manager_parts(st, sys, profile, v);
}

/// The BMC's host name as its vendor sets it out of the box, if the
/// vendor has its own way.
pub(super) fn bmc_host_name(sys: &System, profile: &Profile) -> Option<String> {
    dell::host_name(sys, profile).or_else(|| hpe::host_name(sys, profile))
}

/// How long a reset of the BMC keeps its address down, and its job
/// service not ready after that, where the vendor's profile says.
pub(super) fn bmc_reset_times(profile: &Profile) -> Option<(Duration, Duration)> {
    dell::reset_times(profile)
}

/// Adds the vendor's parts of the Chassis resource to `v`.
pub(super) fn chassis_parts(st: &AppState, sys: &System, profile: &Profile, v: &mut Value) {
    hpe::chassis_parts(st, sys, profile, v);
}

/// Adds the vendor's parts of the Bios resource (its `Oem`, attributes
/// of the machine itself) to `body`.
pub(super) fn bios_parts(st: &AppState, sys: &System, profile: &Profile, body: &mut Value) {
    hpe::bios_parts(st, sys, profile, body);
}

/// Whether BIOS attributes staged on `sys` wait for a configuration job
/// (held until one is created, or scheduled by an apply time).
pub(super) fn bios_waits_for_job(st: &AppState, sys: &System) -> bool {
    dell::bios_jobs(st, sys)
}

/// Refuses a BIOS change while a configuration job holds the staged ones.
pub(super) fn check_bios_job(st: &AppState, sys: &System) -> Result<(), ApiError> {
    dell::check_bios_job(st, sys)
}

/// Schedules the configuration job for the staged BIOS attributes: the
/// answer to the PATCH that asked for it.
pub(super) fn bios_job_scheduled(st: &AppState, sys: &System) -> Response {
    dell::bios_job_scheduled(st, sys)
}

/// The Task of a job of the BMC's job queue (not found where the vendor
/// drops it: an iDRAC's staged update).
pub(super) async fn job_task(st: &AppState, job: &Job) -> Result<Response, ApiError> {
    if job_task_gone(job) {
        tracing::info!(job = %job.id, "the Task of a scheduled firmware job is gone (404): its job waits in the queue");
        return Err(ApiError::NotFound(format!(
            "/redfish/v1/TaskService/Tasks/{}",
            job.id
        )));
    }
    dell::task_response(st, job).await
}

/// Whether the vendor shows no Task for job `job` now.
pub(super) fn job_task_gone(job: &Job) -> bool {
    dell::update::task_gone(job)
}

/// Whether actions also take their own name as an `Action` parameter
/// (iLO: HPE's iLOrest sends it).
pub(super) fn takes_action_name(profile: &Profile) -> bool {
    profile.hpe.is_some()
}

/// The parameters SimpleUpdate takes beyond DMTF's (HPE's tools').
pub(super) fn simple_update_params(profile: &Profile) -> &'static [&'static str] {
    hpe::update::simple_update_params(profile)
}

/// The vendor's answer to a SimpleUpdate that started task `t`, where it
/// is not DMTF's 202 (iLO's 200).
pub(super) fn simple_update_accepted(
    profile: &Profile,
    t: &super::task_store::Task,
) -> Option<Response> {
    hpe::update::accepted(profile, t)
}

/// Whether `path` is a vendor's own image upload (iLO's
/// `/cgi-bin/uploadFile`), whose body may be as large as an image.
pub(super) fn image_upload(path: &str) -> bool {
    path == hpe::IMAGE_UPLOAD_URI
}

/// Adds the vendor's parts of the UpdateService to `v` (iLO's update
/// state).
pub(super) fn update_service_parts(st: &AppState, v: &mut Value) {
    hpe::update::service_oem(st, v);
}

/// How a firmware update ended, for the vendor's job of it.
pub(super) use dell::UpdateOutcome;

/// The Id a new firmware update of `sys` takes where the vendor runs it
/// as a job of its own (an iDRAC's JID).
pub(super) fn update_job(st: &AppState, sys: &System) -> Option<String> {
    dell::update::update_started(st, sys)
}

/// The firmware update `id` of `sys`, a vendor's job, ended so.
pub(super) fn update_job_ended(st: &AppState, sys: &System, id: &str, outcome: UpdateOutcome) {
    dell::update::update_ended(st, sys, id, outcome);
}

/// Adds the vendor's parts of the Storage resource to `v`.
pub(super) fn storage_parts(
    st: &AppState,
    sys: &System,
    names: &Names,
    raid: &[&str],
    v: &mut Value,
) {
    dell::raid::storage_parts(st, sys, names, raid, v);
}

/// Adds the vendor's parts of the StorageController to `v`.
pub(super) fn controller_parts(st: &AppState, sys: &System, names: &Names, v: &mut Value) {
    dell::raid::controller_parts(st, sys, names, v);
}

/// Adds the vendor's parts of drive `id` (the machine's disk `disk`) to
/// `v`.
pub(super) fn drive_parts(st: &AppState, sys: &System, id: &str, disk: &str, v: &mut Value) {
    dell::raid::drive_parts(st, sys, id, disk, v);
}

/// The integrated NIC's `Manufacturer`, where the vendor names it its way.
pub(super) fn adapter_manufacturer(profile: &Profile) -> Option<&'static str> {
    dell::adapter_manufacturer(profile)
}

/// Adds the vendor's parts of a NetworkDeviceFunction (whose port is
/// `port`, a link) to `body`.
pub(super) fn function_parts(profile: &Profile, port: Value, body: &mut Value) {
    dell::function_parts(profile, port, body);
}

/// Adds the vendor's parts of a VirtualMedia device to `v` (`base` is its
/// URI).
pub(super) fn media_parts(st: &AppState, sys: &System, base: &str, slot: MediaSlot, v: &mut Value) {
    hpe::media_parts(st, sys, base, slot, v);
}

/// A PATCH of a VirtualMedia device on a profile whose devices take one
/// of the vendor's own properties
/// (`Profile::media_patch_sets_boot_next`).
pub(super) async fn media_oem_patch(
    st: &AppState,
    sys: &System,
    slot: (MediaSlot, &'static str),
    uri: &Uri,
    headers: &HeaderMap,
    body: &Map<String, Value>,
) -> Result<Response, ApiError> {
    hpe::patch_boot_next(st, sys, slot, uri, headers, body).await
}
