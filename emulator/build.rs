//! Embeds the DMTF Redfish CSDL (DSP8010) from the `nv-redfish-schema`
//! registry package, so `$metadata` and `/redfish/v1/Schemas/*` are served
//! offline from the binary.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new(nv_redfish_schema::REDFISH_CSDL_DIR);
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".xml"))
        .collect();
    files.sort();
    let mut out = String::from("/// (file name, contents) of every DSP8010 CSDL file, sorted by name.\npub static CSDL: &[(&str, &str)] = &[\n");
    for f in &files {
        let path = dir.join(f);
        writeln!(
            out,
            "    ({f:?}, include_str!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("csdl.rs");
    std::fs::write(dest, out).unwrap();
    println!("cargo:rerun-if-changed=build.rs");
}
