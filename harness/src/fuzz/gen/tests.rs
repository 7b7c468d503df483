//! Determinism of cases and what they must be refused for.

use serde_json::{json, Map};

use super::request::qenc;
use super::values::set_path;
use super::*;
use crate::fuzz::crawl::{Action, Param, Resource};

fn surface() -> Surface {
    let sys = json!({
        "@odata.id": "/redfish/v1/Systems/1", "Id": "1",
        "Boot": {"BootSourceOverrideTarget": "None",
                 "BootSourceOverrideTarget@Redfish.AllowableValues": ["None", "Pxe"],
                 "HttpBootUri": null},
        "AssetTag": ""
    });
    Surface {
        resources: vec![
            Resource {
                path: "/redfish/v1".into(),
                allow: vec!["GET".into()],
                body: json!({"Id": "RootService"}),
            },
            Resource {
                path: "/redfish/v1/Systems/1".into(),
                allow: vec!["GET".into(), "PATCH".into()],
                body: sys,
            },
        ],
        actions: vec![Action {
            name: "#ComputerSystem.Reset".into(),
            target: "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset".into(),
            owner: "/redfish/v1/Systems/1".into(),
            params: vec![Param {
                name: "ResetType".into(),
                data_type: Some("String".into()),
                allowable: vec![json!("On")],
            }],
        }],
        registries: Default::default(),
    }
}

#[test]
fn a_case_is_a_function_of_seed_and_number() {
    let s = surface();
    let g = Gen::new(&s, Some(("Authorization".into(), b"Basic x".to_vec())));
    for id in 0..300 {
        assert_eq!(g.case(7, id).req, g.case(7, id).req);
    }
    let kinds: std::collections::BTreeSet<Kind> = (0..300).map(|i| g.case(7, i).kind).collect();
    assert!(kinds.len() >= 7, "{kinds:?}");
    assert_ne!(g.case(7, 1).req, g.case(8, 1).req);
}

#[test]
fn wrong_types_and_unknown_values_must_be_refused() {
    let s = surface();
    let g = Gen::new(&s, None);
    let mut rejects = 0;
    for id in 0..400 {
        let c = g.case(1, id);
        if c.kind == Kind::Patch {
            assert_eq!(c.guard.as_deref(), Some("/redfish/v1/Systems/1"));
            rejects += c.must_reject.is_some() as usize;
        }
    }
    assert!(rejects > 10, "{rejects}");
    let mut b = Map::new();
    set_path(&mut b, &["Boot".into(), "HttpBootUri".into()], json!(1));
    assert_eq!(Value::Object(b), json!({"Boot": {"HttpBootUri": 1}}));
    assert_eq!(qenc("a eq 'x'"), "a%20eq%20%27x%27");
}
