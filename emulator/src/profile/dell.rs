//! Dell's messages: the EEMI registry entries the iDRAC profiles send
//! (the Lifecycle Controller API's answers, and the fault rules that
//! name one), each under the profile's registry prefix.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use super::{DellLc, VendorMessage};
use crate::sync::lock;

/// Dell's messages (EEMI registry: Id, severity, text, resolution), as
/// iDRAC 9's registry words them.
pub const MESSAGES: &[(&str, &str, &str, &str)] = &[
    ("SYS053", "Informational", "Successfully imported and applied Server Configuration Profile.", "No response action is required."),
    ("SYS069", "Informational", "No changes were applied since the current component configuration matched the requested configuration.", "No response action is required."),
    ("SYS062", "Critical", "Input file for import configuration operation is invalid. The expected profile root element was not found.", "Make sure the input file is a valid Server Configuration Profile and retry the operation."),
    ("SYS063", "Critical", "Input file for import configuration operation is invalid. The expected root element was not closed.", "Make sure the input file is a valid Server Configuration Profile and retry the operation."),
    ("SYS064", "Critical", "Input file for import configuration operation is invalid at line %1.", "Make sure the input file is a valid Server Configuration Profile and retry the operation."),
    ("SYS405", "Critical", "Unable to complete the operation because the JSON data format entered is invalid.", "Enter valid JSON data and retry the operation."),
    ("SYS076", "Critical", "Invalid or unsupported component specified in the input configuration profile.", "Remove the component from the Server Configuration Profile and retry the operation."),
    ("SYS067", "Critical", "Unable to complete application of configuration profile values.", "Correct the attributes and values in the Server Configuration Profile and retry the operation."),
    ("SUP020", "Informational", "The specified job was deleted", "No response action is required."),
    ("SUP011", "Warning", "Invalid Job ID specified.", "Verify the job ID and retry the action. Retrieve all open jobs by issuing the GetAllJobs command."),
    ("LC068", "Warning", "Unable to perform the import or export operation because there are pending attribute changes or a configuration job is in progress.", "Apply or cancel any pending attribute changes. Changes can be applied by creating a targeted configuration job, or the changes can be cancelled by invoking the DeletePendingConfiguration method. If a configuration job is in progress, wait until it is completed before retrying the import or export system configuration operation."),
    ("RAC0679", "Warning", "A job operation is already running. Retry the operation after the existing job is completed.", "Wait until the running job is completed or delete the scheduled job and retry the operation"),
    ("RAC064", "Informational", "iDRAC was successfully reset.", "No response action is required."),
    // What the Lifecycle log says of power (Dell's EEMI guide; SYS1003 is
    // what Dell's own Ansible BIOS module waits for after a reset).
    ("SYS1000", "Informational", "System is turning on.", "No response action is required."),
    ("SYS1001", "Informational", "System is turning off.", "No response action is required."),
    ("SYS1003", "Informational", "System CPU Resetting.", "No response action is required."),
    // What the Lifecycle log says of an iDRAC reboot (what wikimedia's
    // spicerack reads for the last one).
    ("RAC0182", "Informational", "The iDRAC firmware was rebooted with the following reason: %1.", "No response action is required."),
    // The RAID service's answers. The STOR resolutions are Shoal's
    // words where no public capture shows iDRAC's.
    ("STOR018", "Warning", "No foreign configurations detected.", "No response action is required."),
    ("STOR030", "Warning", "Controller not found.", "Provide a valid controller FQDD (Fully Qualified Device Descriptor) and retry the operation."),
    ("STOR009", "Warning", "Unable to complete the operation because either the Fully Qualified Device Descriptor (FQDD) entered did not match any virtual drive (VD), the physical drives available, or the operation is not supported on the physical drive (s).", "Enter the FQDD of a physical drive in a state the operation supports and retry the operation."),
    ("STOR023", "Informational", "Unable to perform configuration operations because a configuration job for the device already exists.", "Wait for the configuration job to complete, or delete it, and retry the operation."),
    ("JCP001", "Informational", "Task successfully scheduled.", "No response action is required."),
    ("PR19", "Informational", "Job completed successfully.", "No response action is required."),
    // A firmware image that fails its check (the resolution is Shoal's
    // words; the Id and text are in Dell's iDRAC 7/8 articles).
    ("RED007", "Critical", "Unable to verify Update Package signature.", "Download the Update Package again and retry the operation."),
    ("SYS518", "Critical", "iDRAC is not ready. The configuration values cannot be accessed. Please retry after a few minutes.", "Wait for the Lifecycle Controller to be ready and retry the operation."),
];

/// Whether `id` (`LC068`) is one of Dell's messages Shoal knows.
pub fn is_message(id: &str) -> bool {
    MESSAGES.iter().any(|m| m.0 == id)
}

/// The text of Dell's message `id` (empty when Shoal does not know it).
pub fn text(id: &str) -> &'static str {
    MESSAGES.iter().find(|m| m.0 == id).map_or("", |m| m.2)
}

impl DellLc {
    /// Dell's message `id` under this profile's registry prefix
    /// (`IDRAC.2.8.LC068`), `None` when Shoal does not know it. Made once
    /// per prefix and Id (a handful per profile) and kept for the
    /// process, as the profiles' own messages are.
    pub fn message(&self, id: &str) -> Option<&'static VendorMessage> {
        type Table = HashMap<(String, &'static str), &'static VendorMessage>;
        static MADE: LazyLock<Mutex<Table>> = LazyLock::new(Mutex::default);
        let &(id, severity, text, resolution) = MESSAGES.iter().find(|m| m.0 == id)?;
        let mut made = lock(&MADE);
        let m = made.entry((self.registry.clone(), id)).or_insert_with(|| {
            Box::leak(Box::new(VendorMessage {
                id: format!("{}.{id}", self.registry),
                message: text.into(),
                severity: severity.into(),
                resolution: resolution.into(),
            }))
        });
        Some(*m)
    }
}
