//! The DMTF Base message registry subset that Shoal emits.
//!
//! Every error body carries `@Message.ExtendedInfo` entries whose `MessageId`
//! names a message of this table; `/redfish/v1/Registries/Base` serves the same
//! table so a client can resolve the ids it receives. Message texts follow
//! the published Base registry; `%1`.. are replaced by the arguments.
//! Events take their messages from the event registries here
//! (`ResourceEvent`, `HeartbeatEvent`), served the same way.

use serde_json::{json, Value};

/// Registry prefix and version used in every `MessageId`.
pub const BASE_PREFIX: &str = "Base";
/// Full version of the registry served under `/redfish/v1/Registries/Base`.
pub const BASE_VERSION: &str = "1.19.0";

/// One message definition of the Base registry.
#[derive(Debug, Clone, Copy)]
pub struct MessageDef {
    pub id: &'static str,
    pub message: &'static str,
    pub severity: &'static str,
    pub resolution: &'static str,
    pub args: u8,
}

macro_rules! messages {
    ($($id:ident = ($sev:literal, $args:literal, $msg:literal, $res:literal);)*) => {
        /// All messages Shoal can emit, in registry order.
        pub const MESSAGES: &[MessageDef] = &[
            $(MessageDef { id: stringify!($id), message: $msg, severity: $sev, resolution: $res, args: $args },)*
        ];
    };
}

messages! {
    Success = ("OK", 0, "The request completed successfully.", "None.");
    Created = ("OK", 0, "The resource was created successfully.", "None.");
    GeneralError = ("Critical", 0, "A general error has occurred.  See Resolution for information on how to resolve the error, or @Message.ExtendedInfo if Resolution is not provided.", "None.");
    InternalError = ("Critical", 0, "The request failed due to an internal service error.  The service is still operational.", "Resubmit the request.  If the problem persists, consider resetting the service.");
    MalformedJSON = ("Critical", 0, "The request body submitted was malformed JSON and could not be parsed by the receiving service.", "Ensure that the request body is valid JSON and resubmit the request.");
    EmptyJSON = ("Warning", 0, "The request body submitted contained an empty JSON object and the service is unable to process it.", "Add properties in the JSON object and resubmit the request.");
    UnrecognizedRequestBody = ("Warning", 0, "The service detected a malformed request body that it was unable to interpret.", "Correct the request body and resubmit the request if it failed.");
    PayloadTooLarge = ("Critical", 0, "The supplied payload exceeds the maximum size supported by the service.", "Correct the request body and resubmit the request if it failed.");
    PropertyUnknown = ("Warning", 1, "The property %1 is not in the list of valid properties for the resource.", "Remove the unknown property from the request body and resubmit the request if the operation failed.");
    PropertyNotWritable = ("Warning", 1, "The property %1 is a read-only property and cannot be assigned a value.", "Remove the property from the request body and resubmit the request if the operation failed.");
    PropertyValueTypeError = ("Warning", 2, "The value '%1' for the property %2 is not a type that the property can accept.", "Correct the value for the property in the request body and resubmit the request if the operation failed.");
    PropertyValueNotInList = ("Warning", 2, "The value '%1' for the property %2 is not in the list of acceptable values.", "Choose a value from the enumeration list that the implementation can support and resubmit the request if the operation failed.");
    PropertyValueFormatError = ("Warning", 2, "The value '%1' for the property %2 is not a format that the property can accept.", "Correct the value for the property in the request body and resubmit the request if the operation failed.");
    PropertyValueOutOfRange = ("Warning", 2, "The value '%1' for the property %2 is not in the supported range of acceptable values.", "Correct the value for the property in the request body and resubmit the request if the operation failed.");
    PropertyValueConflict = ("Warning", 2, "The property '%1' could not be written because its value would conflict with the value of the '%2' property.", "No resolution is required.");
    PropertyValueError = ("Warning", 1, "The value provided for the property %1 is not valid.", "Correct the value for the property in the request body and resubmit the request if the operation failed.");
    PropertyMissing = ("Warning", 1, "The property %1 is a required property and must be included in the request.", "Ensure that the property is in the request body and has a valid value and resubmit the request if the operation failed.");
    ActionNotSupported = ("Critical", 1, "The action %1 is not supported by the resource.", "The action supplied cannot be resubmitted to the implementation.  Perhaps the action was invalid, the wrong resource was the target or the implementation documentation may be of assistance.");
    ActionParameterMissing = ("Critical", 2, "The action %1 requires the parameter %2 to be present in the request body.", "Supply the action with the required parameter in the request body when the request is resubmitted.");
    ActionParameterUnknown = ("Warning", 2, "The action %1 was submitted with the invalid parameter %2.", "Correct the invalid parameter and resubmit the request if the operation failed.");
    ActionParameterNotSupported = ("Warning", 2, "The parameter %1 for the action %2 is not supported on the target resource.", "Remove the parameter supplied and resubmit the request if the operation failed.");
    ActionParameterValueTypeError = ("Warning", 3, "The value '%1' for the parameter %2 in the action %3 is not a type that the parameter can accept.", "Correct the value for the parameter in the request body and resubmit the request if the operation failed.");
    ActionParameterValueFormatError = ("Warning", 3, "The value '%1' for the parameter %2 in the action %3 is not a format that the parameter can accept.", "Correct the value for the parameter in the request body and resubmit the request if the operation failed.");
    ActionParameterValueNotInList = ("Warning", 3, "The value '%1' for the parameter %2 in the action %3 is not in the list of acceptable values.", "Choose a value from the enumeration list and resubmit the request if the operation failed.");
    ActionParameterValueConflict = ("Warning", 2, "The parameter '%1' with the requested value of '%2' does not meet the constraints of the implementation.", "No resolution is required.");
    ActionParameterValueError = ("Warning", 2, "The value for the parameter %1 in the action %2 is invalid.", "Correct the value for the parameter in the request body and resubmit the request if the operation failed.");
    ResourceNotFound = ("Critical", 2, "The requested resource of type %1 named '%2' was not found.", "Provide a valid resource identifier and resubmit the request.");
    ResourceMissingAtURI = ("Critical", 1, "The resource at the URI '%1' was not found.", "Place a valid resource at the URI or correct the URI and resubmit the request.");
    ResourceAlreadyExists = ("Critical", 3, "The requested resource of type %1 with the property %2 with the value '%3' already exists.", "Do not repeat the create operation as the resource has already been created.");
    ResourceCannotBeDeleted = ("Critical", 0, "The delete request failed because the resource requested cannot be deleted.", "Do not attempt to delete a non-deletable resource.");
    ResourceInUse = ("Warning", 0, "The change to the requested resource failed because the resource is in use or in transition.", "Remove the condition and resubmit the request if the operation failed.");
    CreateLimitReachedForResource = ("Critical", 0, "The create operation failed because the resource has reached the limit of possible resources.", "Either delete resources and resubmit the request if the operation failed or do not resubmit the request.");
    CreateFailedMissingReqProperties = ("Critical", 1, "The create operation failed because the required property %1 was missing from the request.", "Correct the body to include the required property with a valid value and resubmit the request if the operation failed.");
    ResourceAtUriUnauthorized = ("Critical", 2, "While accessing the resource at '%1', the service received an authorization error '%2'.", "Ensure that the appropriate access is provided for the service in order for it to access the URI.");
    CouldNotEstablishConnection = ("Critical", 1, "The service failed to establish a connection with the URI '%1'.", "Ensure that the URI contains a valid and reachable node name, protocol information and other URI components.");
    OperationTimeout = ("Critical", 0, "A timeout internal to the service occurred as part of the request.  Partial results may have been returned.", "Resubmit the request.  If the problem persists, consider resetting the service or provider.");
    OperationNotAllowed = ("Critical", 0, "The HTTP method is not allowed on this resource.", "None.");
    OperationFailed = ("Warning", 0, "An error occurred internal to the service as part of the overall request.  Partial results may have been returned.", "Resubmit the request.  If the problem persists, consider resetting the service or provider.");
    NoValidSession = ("Critical", 0, "There is no valid session established with the implementation.", "Establish a session before attempting any operations.");
    InsufficientPrivilege = ("Critical", 0, "There are insufficient privileges for the account or credentials associated with the current session to perform the requested operation.", "Either abandon the operation or change the associated access rights and resubmit the request if the operation failed.");
    SessionLimitExceeded = ("Critical", 0, "The session establishment failed due to the number of simultaneous sessions exceeding the limit of the implementation.", "Reduce the number of other sessions before trying to establish the session or increase the limit of simultaneous sessions, if supported.");
    MissingOrMalformedPart = ("Critical", 0, "The multipart request contains malformed parts or is missing required parts.", "Add any missing required parts or correct the malformed parts and resubmit the request.");
    PreconditionFailed = ("Critical", 0, "The ETag supplied did not match the ETag required to change this resource.", "Try the operation again using the appropriate ETag.");
    PreconditionRequired = ("Critical", 0, "A precondition header or annotation is required to change this resource.", "Try the operation again using an If-Match or If-None-Match header and appropriate ETag.");
    ServiceTemporarilyUnavailable = ("Critical", 1, "The service is temporarily unavailable.  Retry in %1 seconds.", "Wait for the indicated retry duration and retry the operation.");
    QueryNotSupportedOnResource = ("Warning", 0, "Querying is not supported on the requested resource.", "Remove the query parameters and resubmit the request if the operation failed.");
    QueryNotSupportedOnOperation = ("Warning", 0, "Querying is not supported with the requested operation.", "Remove the query parameters and resubmit the request if the operation failed.");
    QueryCombinationInvalid = ("Warning", 0, "Two or more query parameters in the request cannot be used together.", "Remove one or more of the query parameters and resubmit the request if the operation failed.");
    QueryParameterValueTypeError = ("Warning", 2, "The value '%1' for the query parameter %2 is not a type that the parameter can accept.", "Correct the value for the query parameter in the request and resubmit the request if the operation failed.");
    QueryParameterValueFormatError = ("Warning", 2, "The value '%1' for the parameter %2 is not a format that the parameter can accept.", "Correct the value for the query parameter in the request and resubmit the request if the operation failed.");
    QueryParameterOutOfRange = ("Warning", 3, "The value '%1' for the query parameter %2 is out of range %3.", "Reduce the value for the query parameter to a value that is within range, such as a start or count value that is within bounds of the number of resources in a collection or a page that is within the range of valid pages.");
    QueryParameterUnsupported = ("Warning", 1, "Query parameter '%1' is not supported.", "Correct or remove the query parameter and resubmit the request.");
    HeaderInvalid = ("Critical", 1, "Header '%1' is invalid.", "Resubmit the request with a valid request header.");
    QueryNotSupported = ("Warning", 0, "Querying is not supported by the implementation.", "Remove the query parameters and resubmit the request if the operation failed.");
    EventSubscriptionLimitExceeded = ("Critical", 0, "The event subscription failed due to the number of simultaneous subscriptions exceeding the limit of the implementation.", "Reduce the number of other subscriptions before trying to establish the event subscription or increase the limit of simultaneous subscriptions (if supported).");
    SubscriptionTerminated = ("OK", 0, "The event subscription was terminated.", "No resolution is required.");
    EventBufferExceeded = ("Warning", 0, "Undelivered events may have been lost due to exceeding the event buffer.", "Ensure that the event receiver is available and able to accept events.");
    ServiceDisabled = ("Warning", 1, "The operation failed because the service at %1 is disabled and cannot accept requests.", "Enable the service and resubmit the request if the operation failed.");
    ResetRequired = ("Warning", 2, "In order to apply changes, recovery of the resource '%1' must be performed with the reset type '%2'.", "Perform the recovery using the indicated reset type.");
}

/// A message registry of events (not of answers): its prefix, version
/// and the messages Shoal sends from it.
#[derive(Debug)]
pub struct EventRegistry {
    pub prefix: &'static str,
    pub version: &'static str,
    pub name: &'static str,
    pub messages: &'static [MessageDef],
}

const fn def(
    id: &'static str,
    args: u8,
    message: &'static str,
    severity: &'static str,
) -> MessageDef {
    MessageDef {
        id,
        message,
        severity,
        resolution: "None.",
        args,
    }
}

/// DMTF's ResourceEvent registry (the version bmcweb ships), the subset
/// events are made of.
pub const RESOURCE_EVENT: EventRegistry = EventRegistry {
    prefix: "ResourceEvent",
    version: "1.3.0",
    name: "Resource Event Message Registry",
    messages: &[
        def(
            "ResourceCreated",
            0,
            "The resource has been created successfully.",
            "OK",
        ),
        def(
            "ResourceRemoved",
            0,
            "The resource has been removed successfully.",
            "OK",
        ),
        def(
            "ResourceChanged",
            0,
            "One or more resource properties have changed.",
            "OK",
        ),
        def(
            "ResourcePoweredOn",
            1,
            "The resource `%1` has powered on.",
            "OK",
        ),
        def(
            "ResourcePoweredOff",
            1,
            "The resource `%1` has powered off.",
            "OK",
        ),
        def(
            "ResourcePoweringOn",
            1,
            "The resource `%1` is powering on.",
            "OK",
        ),
        def(
            "ResourcePoweringOff",
            1,
            "The resource `%1` is powering off.",
            "OK",
        ),
        def("TestMessage", 0, "Test message.", "OK"),
    ],
};

/// DMTF's HeartbeatEvent registry: what a subscription asking for
/// heartbeats gets.
pub const HEARTBEAT_EVENT: EventRegistry = EventRegistry {
    prefix: "HeartbeatEvent",
    version: "1.0.1",
    name: "Heartbeat Event Message Registry",
    messages: &[def(
        "RedfishServiceFunctional",
        0,
        "Redfish service is functional.",
        "OK",
    )],
};

/// DMTF's TaskEvent registry: a task's (and a Dell job's) states.
pub const TASK_EVENT: EventRegistry = EventRegistry {
    prefix: "TaskEvent",
    version: "1.0.3",
    name: "Task Event Message Registry",
    messages: &[
        def("TaskStarted", 1, "The task with Id '%1' has started.", "OK"),
        def(
            "TaskCompletedOK",
            1,
            "The task with Id '%1' has completed.",
            "OK",
        ),
        def(
            "TaskCompletedWarning",
            1,
            "The task with Id '%1' has completed with warnings.",
            "Warning",
        ),
        def(
            "TaskAborted",
            1,
            "The task with Id '%1' has been aborted.",
            "Critical",
        ),
        def(
            "TaskCancelled",
            1,
            "Work on the task with Id '%1' was halted prior to completion due to an explicit request.",
            "Warning",
        ),
        def(
            "TaskProgressChanged",
            2,
            "The task with Id '%1' has changed to progress %2 percent complete.",
            "OK",
        ),
    ],
};

/// DMTF's Update registry: what a firmware update's task says.
pub const UPDATE: EventRegistry = EventRegistry {
    prefix: "Update",
    version: "1.0.2",
    name: "Update Message Registry",
    messages: &[
        def(
            "TargetDetermined",
            2,
            "The target device '%1' will be updated with image '%2'.",
            "OK",
        ),
        def("UpdateInProgress", 0, "An update is in progress.", "OK"),
        def(
            "TransferringToComponent",
            2,
            "Image '%1' is being transferred to '%2'.",
            "OK",
        ),
        def(
            "VerifyingAtComponent",
            2,
            "Image '%1' is being verified at '%2'.",
            "OK",
        ),
        def(
            "InstallingOnComponent",
            2,
            "Image '%1' is being installed on '%2'.",
            "OK",
        ),
        def(
            "ApplyingOnComponent",
            2,
            "Image '%1' is being applied on '%2'.",
            "OK",
        ),
        def(
            "TransferFailed",
            2,
            "Transfer of image '%1' to '%2' failed.",
            "Critical",
        ),
        def(
            "VerificationFailed",
            2,
            "Verification of image '%1' at '%2' failed.",
            "Critical",
        ),
        def(
            "ApplyFailed",
            2,
            "Installation of image '%1' to '%2' failed.",
            "Critical",
        ),
        def(
            "AwaitToActivate",
            2,
            "Awaiting for an action to proceed with activating image '%1' on '%2'.",
            "OK",
        ),
        def(
            "UpdateSuccessful",
            2,
            "Device '%1' successfully updated with image '%2'.",
            "OK",
        ),
    ],
};

/// The registries events are made of.
pub const EVENT_REGISTRIES: [&EventRegistry; 3] = [&RESOURCE_EVENT, &TASK_EVENT, &HEARTBEAT_EVENT];

/// The registries served beside Base: the events' and the one tasks'
/// messages come from.
pub const SERVED_REGISTRIES: [&EventRegistry; 4] =
    [&RESOURCE_EVENT, &TASK_EVENT, &HEARTBEAT_EVENT, &UPDATE];

impl EventRegistry {
    /// `Prefix.major.minor.Key` and the rendered text and severity of
    /// message `key` (which must be in the registry).
    pub fn message(&self, key: &str, args: &[&str]) -> (String, String, &'static str) {
        let d = self.messages.iter().find(|m| m.id == key);
        debug_assert!(d.is_some(), "message {key} missing from {}", self.prefix);
        let short = self
            .version
            .rsplit_once('.')
            .map_or(self.version, |(v, _)| v);
        let id = format!("{}.{short}.{key}", self.prefix);
        match d {
            Some(d) => (id, substitute(d.message, args), d.severity),
            None => (id, key.to_string(), "OK"),
        }
    }

    /// The registry file itself.
    pub fn document(&self, uri: &str) -> Value {
        document(
            uri,
            self.prefix,
            self.version,
            self.name,
            self.messages,
            "Messages of the events Shoal sends.",
        )
    }
}

/// Looks up a message definition by its short id (`"PropertyUnknown"`).
pub fn lookup(id: &str) -> Option<&'static MessageDef> {
    MESSAGES.iter().find(|m| m.id == id)
}

/// Renders one `Message` object (as used in `@Message.ExtendedInfo`).
///
/// Panics in debug builds if the id is not in the table: every id Shoal emits
/// must be resolvable by clients through the served registry.
pub fn message(id: &str, args: &[&str], related: &[String]) -> Value {
    let def = lookup(id);
    debug_assert!(def.is_some(), "message {id} missing from the Base table");
    let (text, severity, resolution) = match def {
        Some(d) => {
            debug_assert_eq!(d.args as usize, args.len(), "argument count of {id}");
            (substitute(d.message, args), d.severity, d.resolution)
        }
        None => (id.to_string(), "Critical", "None."),
    };
    let mut m = json!({
        "@odata.type": "#Message.v1_1_1.Message",
        "MessageId": message_id(id),
        "Message": text,
        "MessageArgs": args,
        "MessageSeverity": severity,
        "Severity": severity,
        "Resolution": resolution,
    });
    if !related.is_empty() {
        m["RelatedProperties"] = json!(related);
    }
    m
}

/// The message text with `%1`.. replaced by the arguments, in one pass
/// over the template: an argument's own `%2` stays as it is, so the text
/// grows by the arguments' length and no more.
pub fn substitute(template: &str, args: &[&str]) -> String {
    let mut out =
        String::with_capacity(template.len() + args.iter().map(|a| a.len()).sum::<usize>());
    let mut rest = template;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        match after[..digits].parse::<usize>() {
            Ok(n) if (1..=args.len()).contains(&n) => out.push_str(args[n - 1]),
            _ => {
                out.push('%');
                out.push_str(&after[..digits]);
            }
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

/// The full `MessageId` of a Base message: `Base.1.19.PropertyUnknown`.
pub fn message_id(id: &str) -> String {
    format!("{BASE_PREFIX}.{}.{id}", short_version())
}

fn short_version() -> &'static str {
    // "1.19.0" -> "1.19"
    match BASE_VERSION.rfind('.') {
        Some(i) => &BASE_VERSION[..i],
        None => BASE_VERSION,
    }
}

/// The registry file itself, served at `/redfish/v1/Registries/Base/Base`.
pub fn registry_document() -> Value {
    document(
        "/redfish/v1/Registries/Base/Base",
        BASE_PREFIX,
        BASE_VERSION,
        "Base Message Registry",
        MESSAGES,
        "This registry defines the base messages for Redfish.",
    )
}

/// A vendor's registry (of the messages of it Shoal sends), owned by it.
pub fn vendor_document(
    uri: &str,
    prefix: &str,
    version: &str,
    name: &str,
    defs: &[MessageDef],
    owner: &str,
) -> Value {
    let mut v = document(
        uri,
        prefix,
        version,
        name,
        defs,
        "Messages of the events Shoal sends, as the vendor words them.",
    );
    v["OwningEntity"] = Value::from(owner);
    v
}

fn document(
    uri: &str,
    prefix: &str,
    version: &str,
    name: &str,
    defs: &[MessageDef],
    description: &str,
) -> Value {
    let mut messages = serde_json::Map::new();
    for m in defs {
        messages.insert(
            m.id.to_string(),
            json!({
                "Description": m.message,
                "Message": m.message,
                "MessageSeverity": m.severity,
                // Deprecated in the schema, still what sushy reads (it warns
                // for each message without it).
                "Severity": m.severity,
                "NumberOfArgs": m.args,
                "ParamTypes": vec!["string"; m.args as usize],
                "Resolution": m.resolution,
            }),
        );
    }
    json!({
        "@odata.type": "#MessageRegistry.v1_6_0.MessageRegistry",
        "@odata.id": uri,
        "Id": format!("{prefix}.{version}"),
        "Name": name,
        "Language": "en",
        "Description": description,
        "RegistryPrefix": prefix,
        "RegistryVersion": version,
        "OwningEntity": "DMTF",
        "Messages": messages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_substitutes_arguments_in_order() {
        let m = message(
            "PropertyValueNotInList",
            &["Bogus", "Boot/BootSourceOverrideTarget"],
            &[],
        );
        assert_eq!(m["MessageId"], "Base.1.19.PropertyValueNotInList");
        assert_eq!(
            m["Message"],
            "The value 'Bogus' for the property Boot/BootSourceOverrideTarget is not in the list of acceptable values."
        );
    }

    #[test]
    fn arguments_are_substituted_once() {
        let m = message("PropertyValueConflict", &["%2%1", "b"], &[]);
        assert_eq!(
            m["Message"],
            "The property '%2%1' could not be written because its value would conflict with the value of the 'b' property."
        );
        assert_eq!(substitute("%1%10%", &["a"]), "a%10%");
    }

    #[test]
    fn every_message_has_as_many_placeholders_as_arguments() {
        for m in MESSAGES {
            for i in 1..=m.args {
                assert!(m.message.contains(&format!("%{i}")), "{} lacks %{i}", m.id);
            }
            assert!(!m.message.contains(&format!("%{}", m.args + 1)), "{}", m.id);
        }
    }
}
