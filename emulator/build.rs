//! Embeds the DMTF Redfish CSDL (DSP8010) and the SNIA Swordfish CSDL that
//! it references (StoragePool, …) from the `nv-redfish-schema` registry
//! package, so `$metadata` and `/redfish/v1/Schemas/*` are served offline
//! from the binary and a validator can fetch every schema the service's
//! documents reference from the service itself.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn xml_files(dir: &Path) -> Vec<(String, PathBuf)> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .filter(|(n, _)| n.ends_with(".xml"))
        .collect()
}

fn main() {
    // DSP8010 first: where Swordfish ships its own copy of a DMTF file
    // (Volume, Endpoint, …), the DMTF bundle's copy is the one served.
    let mut files: BTreeMap<String, PathBuf> = BTreeMap::new();
    for dir in [
        nv_redfish_schema::REDFISH_CSDL_DIR,
        nv_redfish_schema::SWORDFISH_CSDL_DIR,
    ] {
        for (name, path) in xml_files(Path::new(dir)) {
            files.entry(name).or_insert(path);
        }
    }
    let mut out = String::from(
        "/// (file name, contents) of every embedded CSDL file, sorted by name.\npub static CSDL: &[(&str, &str)] = &[\n",
    );
    for (name, path) in &files {
        writeln!(
            out,
            "    ({name:?}, include_str!({:?})),",
            path.display().to_string()
        )
        .expect("writing to a String cannot fail");
    }
    out.push_str("];\n");
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR for build scripts");
    let dest = Path::new(&out_dir).join("csdl.rs");
    if let Err(e) = std::fs::write(&dest, out) {
        panic!("cannot write {}: {e}", dest.display());
    }
    println!("cargo:rerun-if-changed=build.rs");
}
