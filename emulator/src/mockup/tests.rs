use std::path::Path;

use serde_json::json;

use super::*;

fn put(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A small capture in Mockup-Creator's layout under `dir`.
fn creator_layout(dir: &Path) {
    put(dir, "redfish/index.json", r#"{"v1": "/redfish/v1/"}"#);
    put(
        dir,
        "redfish/v1/index.json",
        &json!({"@odata.id": "/redfish/v1", "Vendor": "Acme",
                "Systems": {"@odata.id": "/redfish/v1/Systems"},
                "Links": {"Sessions": {"@odata.id": "/redfish/v1/SessionService/Sessions"}}})
        .to_string(),
    );
    put(
        dir,
        "redfish/v1/headers.json",
        r#"{"GET": {"Server": "Acme-BMC", "OData-Version": "4.0"}}"#,
    );
    put(dir, "redfish/v1/time.json", r#"{"GET_Time": "0.25"}"#);
    put(
        dir,
        "redfish/v1/Systems/index.json",
        &json!({"@odata.id": "/redfish/v1/Systems",
                "Members": [{"@odata.id": "/redfish/v1/Systems/Self"}]})
        .to_string(),
    );
    put(
        dir,
        "redfish/v1/Systems/Self/index.json",
        &json!({"@odata.id": "/redfish/v1/Systems/Self", "PowerState": "Off",
                "Bios": {"@odata.id": "/redfish/v1/Systems/Self/Bios"}})
        .to_string(),
    );
    put(
        dir,
        "redfish/v1/Systems/Self/Bios/error.txt",
        "HTTP 503\nContent-Type: text/plain\n\nBIOS busy",
    );
    put(dir, "README", "Redfish service captured by …");
}

#[test]
fn a_creator_capture_loads_with_its_headers_times_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    creator_layout(dir.path());
    let m = Mockup::load(dir.path()).unwrap();
    assert_eq!(m.systems, ["/redfish/v1/Systems/Self"]);
    let root = &m.resources["/redfish/v1"];
    assert_eq!(root.secs, Some(0.25));
    assert!(root
        .headers
        .contains(&("Server".to_string(), "Acme-BMC".to_string())));
    assert_eq!(
        m.resources["/redfish/v1/Systems/Self/Bios"].body,
        Body::Error {
            status: 503,
            body: "BIOS busy".into()
        }
    );
    assert_eq!(
        m.json("/redfish/v1/Systems/").unwrap()["@odata.id"],
        "/redfish/v1/Systems"
    );
    // The root's Links.Sessions was not captured: told, not fatal.
    assert!(m
        .dangling
        .iter()
        .any(|(_, l)| l == "/redfish/v1/SessionService/Sessions"));
}

#[test]
fn dmtfs_short_form_loads_below_redfish_v1() {
    let dir = tempfile::tempdir().unwrap();
    put(
        dir.path(),
        "index.json",
        &json!({"@odata.id": "/redfish/v1/", "Systems": {"@odata.id": "/redfish/v1/Systems"}})
            .to_string(),
    );
    put(
        dir.path(),
        "Systems/index.json",
        &json!({"Members": [{"@odata.id": "/redfish/v1/Systems/437XR1138R2"}]}).to_string(),
    );
    put(
        dir.path(),
        "Systems/437XR1138R2/index.json",
        r#"{"Id": "437XR1138R2", "@Redfish.Copyright": "Copyright 2014-2025 DMTF."}"#,
    );
    put(dir.path(), "$metadata/index.xml", "<edmx:Edmx/>");
    // A registry kept as a file of its own, at its own URI.
    put(
        dir.path(),
        "Registries/Base.1.5.0.json",
        r#"{"Id": "Base.1.5.0", "Messages": {}}"#,
    );
    put(dir.path(), "Registries/notes.txt", "not read");
    let m = Mockup::load(dir.path()).unwrap();
    assert_eq!(m.systems, ["/redfish/v1/Systems/437XR1138R2"]);
    assert_eq!(
        m.json("/redfish/v1/Registries/Base.1.5.0.json").unwrap()["Id"],
        "Base.1.5.0"
    );
    // A mockup's copyright annotation is no BMC's: left out, as
    // DMTF's Mockup-Server does.
    assert_eq!(
        m.json("/redfish/v1/Systems/437XR1138R2").unwrap(),
        &json!({"Id": "437XR1138R2"})
    );
    assert_eq!(
        m.resources["/redfish/v1/$metadata"].body,
        Body::Xml("<edmx:Edmx/>".into())
    );
    assert_eq!(m.json("/redfish").unwrap()["v1"], "/redfish/v1/");
}

#[test]
fn bad_captures_are_refused_naming_the_file() {
    let err = |dir: &Path| Mockup::load(dir).unwrap_err().to_string();
    let empty = tempfile::tempdir().unwrap();
    put(empty.path(), "notes.txt", "hello");
    assert!(
        err(empty.path()).contains("is not a capture"),
        "{}",
        err(empty.path())
    );

    let broken = tempfile::tempdir().unwrap();
    creator_layout(broken.path());
    put(
        broken.path(),
        "redfish/v1/Systems/Self/index.json",
        "{\"Id\": ",
    );
    let e = err(broken.path());
    assert!(
        e.contains("redfish/v1/Systems/Self/index.json: not JSON"),
        "{e}"
    );

    let dangling = tempfile::tempdir().unwrap();
    creator_layout(dangling.path());
    std::fs::remove_dir_all(dangling.path().join("redfish/v1/Systems/Self")).unwrap();
    let e = err(dangling.path());
    assert!(
        e.contains("redfish/v1/Systems/index.json: /redfish/v1/Systems/Self points nowhere"),
        "{e}"
    );

    let headers = tempfile::tempdir().unwrap();
    creator_layout(headers.path());
    put(headers.path(), "redfish/v1/headers.json", r#"["Server"]"#);
    assert!(err(headers.path()).contains("headers.json holds"));

    let time = tempfile::tempdir().unwrap();
    creator_layout(time.path());
    put(time.path(), "redfish/v1/time.json", r#"{"GET_Time": "-1"}"#);
    assert!(err(time.path()).contains("time.json holds"));

    let linked = tempfile::tempdir().unwrap();
    creator_layout(linked.path());
    std::os::unix::fs::symlink("/etc/passwd", linked.path().join("redfish/v1/error.txt")).unwrap();
    assert!(err(linked.path()).contains("a symbolic link"));

    let missing = Path::new("/nonexistent/capture");
    assert!(err(missing).starts_with("/nonexistent/capture: "));
}

fn tar_gz(path: &Path, entries: &[(&str, &[u8])], link: Option<(&str, &str)>) {
    let f = std::fs::File::create(path).unwrap();
    let gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
    let mut b = tar::Builder::new(gz);
    for (name, data) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        // set_path refuses `..`; an attacker's archive does not.
        let bytes = name.as_bytes();
        h.as_old_mut().name[..bytes.len()].copy_from_slice(bytes);
        h.set_cksum();
        b.append(&h, *data).unwrap();
    }
    if let Some((name, target)) = link {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_size(0);
        b.append_link(&mut h, name, target).unwrap();
    }
    b.into_inner().unwrap().finish().unwrap();
}

#[test]
fn a_tar_gz_capture_loads_and_one_that_escapes_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = json!({"@odata.id": "/redfish/v1", "Systems": {"@odata.id": "/redfish/v1/Systems"}})
        .to_string();
    let systems = json!({"Members": [{"@odata.id": "/redfish/v1/Systems/1"}]}).to_string();
    let good = dir.path().join("bmc.tar.gz");
    tar_gz(
        &good,
        &[
            ("capture/redfish/v1/index.json", root.as_bytes()),
            ("capture/redfish/v1/Systems/index.json", systems.as_bytes()),
            (
                "capture/redfish/v1/Systems/1/index.json",
                b"{\"Id\": \"1\"}",
            ),
        ],
        None,
    );
    let m = Mockup::load(&good).unwrap();
    assert_eq!(m.systems, ["/redfish/v1/Systems/1"]);

    let escape = dir.path().join("escape.tar.gz");
    tar_gz(
        &escape,
        &[
            ("redfish/v1/index.json", root.as_bytes()),
            ("../../etc/cron.d/x/index.json", b"{}"),
        ],
        None,
    );
    let e = Mockup::load(&escape).unwrap_err().to_string();
    assert!(
        e.contains("escape.tar.gz") && e.contains("leaves the archive's folder"),
        "{e}"
    );

    let link = dir.path().join("link.tgz");
    tar_gz(
        &link,
        &[("redfish/v1/index.json", root.as_bytes())],
        Some(("redfish/v1/Systems/index.json", "/etc/passwd")),
    );
    let e = Mockup::load(&link).unwrap_err().to_string();
    assert!(e.contains("is a link"), "{e}");

    let junk = dir.path().join("junk.tar.gz");
    std::fs::write(&junk, b"not gzip at all").unwrap();
    let e = Mockup::load(&junk).unwrap_err().to_string();
    assert!(e.contains("junk.tar.gz"), "{e}");
    let zip = dir.path().join("capture.zip");
    std::fs::write(&zip, b"PK").unwrap();
    let e = Mockup::load(&zip).unwrap_err().to_string();
    assert!(e.contains("neither a folder nor a .tar.gz"), "{e}");
}

/// An iLO links `/redfish/v1/systems/1/bios` beside the `Systems/1/bios`
/// folder and answers either: a link in another case finds the resource
/// (unless two keys fold to the same).
#[test]
fn a_link_in_another_case_finds_the_captured_resource() {
    let dir = tempfile::tempdir().unwrap();
    creator_layout(dir.path());
    std::fs::remove_dir_all(dir.path().join("redfish/v1/Systems/Self/Bios")).unwrap();
    put(
        dir.path(),
        "redfish/v1/Systems/Self/index.json",
        &json!({"@odata.id": "/redfish/v1/Systems/Self",
                "Bios": {"@odata.id": "/redfish/v1/systems/self/bios/"}})
        .to_string(),
    );
    put(
        dir.path(),
        "redfish/v1/Systems/Self/bios/index.json",
        &json!({"@odata.id": "/redfish/v1/systems/self/bios/", "Attributes": {}}).to_string(),
    );
    put(dir.path(), "redfish/v1/Twin/A/index.json", "{}");
    put(dir.path(), "redfish/v1/Twin/a/index.json", "{}");
    let m = Mockup::load(dir.path()).unwrap();
    assert_eq!(
        m.canonical("/redfish/v1/systems/self/BIOS/"),
        "/redfish/v1/Systems/Self/bios"
    );
    assert!(m.json("/redfish/v1/systems/self/bios").is_some());
    assert!(
        !m.dangling.iter().any(|(_, l)| l.contains("bios")),
        "{:?}",
        m.dangling
    );
    assert_eq!(m.canonical("/redfish/v1/Twin/A"), "/redfish/v1/Twin/A");
    assert_eq!(
        m.canonical("/redfish/v1/twin/a"),
        "/redfish/v1/twin/a",
        "ambiguous"
    );
    assert_eq!(m.canonical("/redfish/v1/Nothing/"), "/redfish/v1/Nothing");
}

/// A collection the BMC refused to the capturer (an AMI's 403) stands for
/// the members captured below it; a manager the BMC failed to answer is a
/// link to nothing, told, not a refusal to load.
#[test]
fn a_refused_collection_and_a_missing_manager_still_load() {
    let dir = tempfile::tempdir().unwrap();
    creator_layout(dir.path());
    std::fs::remove_file(dir.path().join("redfish/v1/Systems/index.json")).unwrap();
    put(
        dir.path(),
        "redfish/v1/Systems/error.txt",
        "HTTP 403\nContent-Type: text/html\n\nForbidden",
    );
    put(
        dir.path(),
        "redfish/v1/index.json",
        &json!({"@odata.id": "/redfish/v1",
                "Systems": {"@odata.id": "/redfish/v1/Systems"},
                "Managers": {"@odata.id": "/redfish/v1/Managers"}})
        .to_string(),
    );
    put(
        dir.path(),
        "redfish/v1/Managers/index.json",
        &json!({"@odata.id": "/redfish/v1/Managers",
                "Members": [{"@odata.id": "/redfish/v1/Managers/Gone"}]})
        .to_string(),
    );
    let m = Mockup::load(dir.path()).unwrap();
    assert_eq!(m.systems, ["/redfish/v1/Systems/Self"]);
    assert!(m
        .dangling
        .iter()
        .any(|(_, l)| l == "/redfish/v1/Managers/Gone"));
}

/// The MACs a captured system's EthernetInterfaces show, in order, lower
/// case; what is no MAC is left out.
#[test]
fn a_captured_systems_macs_are_its_interfaces() {
    let dir = tempfile::tempdir().unwrap();
    creator_layout(dir.path());
    put(
        dir.path(),
        "redfish/v1/Systems/Self/index.json",
        &json!({"@odata.id": "/redfish/v1/Systems/Self",
                "EthernetInterfaces": {"@odata.id": "/redfish/v1/Systems/Self/EthernetInterfaces"}})
        .to_string(),
    );
    put(
        dir.path(),
        "redfish/v1/Systems/Self/EthernetInterfaces/index.json",
        &json!({"@odata.id": "/redfish/v1/Systems/Self/EthernetInterfaces", "Members": [
            {"@odata.id": "/redfish/v1/Systems/Self/EthernetInterfaces/2"},
            {"@odata.id": "/redfish/v1/Systems/Self/EthernetInterfaces/1"},
            {"@odata.id": "/redfish/v1/Systems/Self/EthernetInterfaces/3"}]})
        .to_string(),
    );
    for (id, mac) in [
        ("1", "B0:7B:25:00:00:01"),
        ("2", "b0:7b:25:00:00:02"),
        ("3", ""),
    ] {
        put(
            dir.path(),
            &format!("redfish/v1/Systems/Self/EthernetInterfaces/{id}/index.json"),
            &json!({"MACAddress": mac}).to_string(),
        );
    }
    let m = Mockup::load(dir.path()).unwrap();
    assert_eq!(
        m.macs("/redfish/v1/Systems/Self"),
        ["b0:7b:25:00:00:02", "b0:7b:25:00:00:01"]
    );
}
