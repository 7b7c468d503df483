//! Reading the tools' output, listing schema references, and the reports.

use super::output::{findings, parse_protocol_summary, parse_table};
use super::schemas::references;
use super::*;

#[test]
fn the_box_table_is_read() {
    let text = "noise\n+----+\n|     PASS     |     WARN     |     FAIL     |  NOT TESTED  |\n+--------------+\n|     2198     |      33      |      0       |     3176     |\n+----+\n";
    assert_eq!(
        parse_table(text),
        Some(Counts {
            pass: 2198,
            warn: 33,
            fail: 0,
            not_tested: 3176
        })
    );
    assert_eq!(parse_table("Traceback (most recent call last):"), None);
}

#[test]
fn the_protocol_summary_is_read() {
    let text =
        "ERROR:root:x\nSummary - PASS: 328, WARN: 2, FAIL: 13, NOT_TESTED: 35\nReport output:\n";
    assert_eq!(
        parse_protocol_summary(text),
        Some(Counts {
            pass: 328,
            warn: 2,
            fail: 13,
            not_tested: 35
        })
    );
    assert_eq!(parse_protocol_summary("Summary - PASS: 1"), None);
}

#[test]
fn references_are_listed() {
    let doc = r#"<edmx:Reference Uri="/redfish/v1/Schemas/Resource_v1.xml"><edmx:Include/></edmx:Reference>
<edmx:Reference Uri="http://redfish.dmtf.org/schemas/swordfish/v1/StoragePool_v1.xml">"#;
    assert_eq!(references(doc), ["Resource_v1.xml", "StoragePool_v1.xml"]);
}

#[test]
fn findings_come_from_logs_and_tsv() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("2026-12-02");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(
        sub.join("Debug.log"),
        "t - redfish - INFO - PASS - /Drives ([Array]): Property present\n\
         t - redfish - ERROR - FAIL - /Controllers ([Not Present]): Read Requirement Error\n\
         t - redfish - WARNING - WARN - /IndicatorLED (Off): Deprecated\n\
         t - redfish - ERROR - Failing the Select Query test...\n\
         t - redfish - ERROR - $select returned everything\n",
    )
    .unwrap();
    let f = findings(Tool::Service, dir.path());
    assert_eq!(
        f,
        [
            "FAIL /Controllers ([Not Present]): Read Requirement Error",
            "WARN /IndicatorLED (Off): Deprecated",
            "FAIL Failing the Select Query test... $select returned everything",
        ]
    );
    std::fs::write(
        sub.join("r.tsv"),
        "Assertion\tMethod\tStatus code\tURI\tResult\tMessage\tRequirement\n\
         REQ_X\tGET\t200\t/redfish/v1/\tFAIL\tbad\tshall\n\
         REQ_Y\tGET\t200\t/redfish/v1/\tPASS\t\tshall\n",
    )
    .unwrap();
    assert_eq!(
        findings(Tool::Protocol, dir.path()),
        ["FAIL REQ_X GET /redfish/v1/ bad"]
    );
}

#[test]
fn a_tool_passes_only_with_counts_and_no_fail() {
    let mut r = ToolResult {
        tool: Tool::Interop,
        counts: Some(Counts::default()),
        findings: vec![],
        error: None,
        elapsed: Duration::from_secs(1),
        reports: PathBuf::from("/r"),
    };
    assert!(r.passed());
    r.counts.as_mut().unwrap().fail = 1;
    assert!(!r.passed());
    r.findings = vec!["FAIL x <y>".into()];
    assert!(junit(&[r.clone()]).contains("FAIL x &lt;y&gt;"));
    r.counts = None;
    assert!(!r.passed());
    assert!(summary(&[r]).contains("0 tool(s) passed, 1 failed"));
}

#[test]
fn a_replay_must_count_as_its_original() {
    let result = |tool, pass, warn, fail| ToolResult {
        tool,
        counts: Some(Counts {
            pass,
            warn,
            fail,
            not_tested: 0,
        }),
        findings: Vec::new(),
        error: None,
        elapsed: std::time::Duration::ZERO,
        reports: std::path::PathBuf::new(),
    };
    let first = vec![result(Tool::Service, 5106, 72, 0)];
    let mut same = result(Tool::ReplayService, 5106, 72, 0);
    same_counts(&mut same, &first);
    assert!(same.passed());
    let mut fewer = result(Tool::ReplayService, 5100, 72, 0);
    same_counts(&mut fewer, &first);
    assert!(!fewer.passed());
    assert!(fewer.error.unwrap().contains("PASS 5100"));
    // Alone (no first pass to compare with): its own verdict.
    let mut alone = result(Tool::ReplayService, 1, 0, 0);
    same_counts(&mut alone, &[]);
    assert!(alone.passed());
}
