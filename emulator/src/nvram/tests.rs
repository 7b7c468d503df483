//! Tests of the varstore: round trips, replacement and compaction, damaged
//! and hostile files, and a proptest of both; `blank_store` serves
//! `boot.rs`'s tests too.

use super::parse::align4;
use super::*;

/// A minimal but well-formed authenticated varstore of `store` bytes.
pub fn blank_store(store: usize) -> Vec<u8> {
    let header_len = 0x48usize;
    let fv_len = header_len + store + 0x1000;
    let mut b = vec![0xffu8; fv_len];
    b[..16].fill(0);
    b[16..32].copy_from_slice(&NV_DATA_FV.to_bytes_le());
    b[32..40].copy_from_slice(&(fv_len as u64).to_le_bytes());
    b[40..44].copy_from_slice(b"_FVH");
    b[44..48].copy_from_slice(&0x0004_feffu32.to_le_bytes());
    b[48..50].copy_from_slice(&(header_len as u16).to_le_bytes());
    b[50..header_len].fill(0);
    let s = header_len;
    b[s..s + 16].copy_from_slice(&AUTH_VARSTORE.to_bytes_le());
    b[s + 16..s + 20].copy_from_slice(&(store as u32).to_le_bytes());
    b[s + 20] = 0x5a;
    b[s + 21] = 0xfe;
    b[s + 22..s + 28].fill(0);
    b
}

fn var(name: &str, data: &[u8]) -> Variable {
    Variable {
        vendor: boot::EFI_GLOBAL_VARIABLE,
        name: name.into(),
        attributes: 7,
        data: data.to_vec(),
    }
}

#[test]
fn set_get_and_round_trip() {
    let mut s = Varstore::parse(blank_store(4096)).unwrap();
    s.set(var("BootNext", &[0x99, 0])).unwrap();
    s.set(var("Lang", b"eng\0")).unwrap();
    let bytes = s.clone().into_bytes();
    let again = Varstore::parse(bytes.clone()).unwrap();
    assert_eq!(
        again
            .get(boot::EFI_GLOBAL_VARIABLE, "BootNext")
            .unwrap()
            .data,
        [0x99, 0]
    );
    assert_eq!(again.variables().count(), 2);
    assert_eq!(
        again.into_bytes(),
        bytes,
        "parse + write of an unchanged store is byte-identical"
    );
}

#[test]
fn replacing_marks_the_old_copy_deleted_then_compacts_when_full() {
    let mut s = Varstore::parse(blank_store(512)).unwrap();
    for i in 0..40u8 {
        s.set(var("BootNext", &[i, 0])).unwrap();
    }
    let live: Vec<_> = s.variables().collect();
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].data, [39, 0]);
    let parsed = Varstore::parse(s.into_bytes()).unwrap();
    assert_eq!(
        parsed
            .get(boot::EFI_GLOBAL_VARIABLE, "BootNext")
            .unwrap()
            .data,
        [39, 0]
    );
}

#[test]
fn a_full_store_says_so_and_stays_intact() {
    let mut s = Varstore::parse(blank_store(256)).unwrap();
    let before = s.as_bytes().to_vec();
    let err = s.set(var("Big", &[0u8; 400])).unwrap_err();
    assert!(matches!(err, NvramError::Full { .. }));
    assert_eq!(s.as_bytes(), &before[..]);
}

/// Sets the variable store size field of a [`blank_store`] image.
fn with_store_size(mut b: Vec<u8>, size: u32) -> Vec<u8> {
    b[0x48 + 16..0x48 + 20].copy_from_slice(&size.to_le_bytes());
    b
}

fn format_error(b: Vec<u8>) -> String {
    match Varstore::parse(b) {
        Err(NvramError::Format(m)) => m,
        other => panic!("not a format error: {other:?}"),
    }
}

#[test]
fn a_store_smaller_than_its_header_is_refused() {
    // Store sizes 0..28 used to parse, then `free_bytes` underflowed.
    for size in [0, 1, 27] {
        let m = format_error(with_store_size(blank_store(512), size));
        assert!(m.contains("smaller than its header"), "{size}: {m}");
    }
    assert!(Varstore::parse(with_store_size(blank_store(512), 28)).is_ok());
}

#[test]
fn an_unaligned_header_leaves_no_room_for_variables() {
    // Volume header 0x39 bytes, store of exactly its header: variables
    // would start at the next 4-byte boundary, past the store's end.
    let mut b = with_store_size(blank_store(512), 28);
    b.copy_within(0x48..0x48 + 28, 0x39);
    b[48..50].copy_from_slice(&0x39u16.to_le_bytes());
    let m = format_error(b);
    assert!(m.contains("smaller than its header"), "{m}");
}

#[test]
fn volume_sizes_past_the_file_are_refused() {
    let mut b = blank_store(512);
    b[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(format_error(b).contains("do not fit"));
    let mut b = blank_store(512);
    b[48..50].copy_from_slice(&0x37u16.to_le_bytes());
    assert!(format_error(b).contains("do not fit"));
    let mut b = blank_store(512);
    b[48..50].copy_from_slice(&u16::MAX.to_le_bytes());
    assert!(format_error(b).contains("do not fit"));
    let m = format_error(with_store_size(blank_store(512), u32::MAX));
    assert!(m.contains("larger than its volume"), "{m}");
    assert!(format_error(blank_store(512)[..0x60].to_vec()).contains("too small"));
}

#[test]
fn variable_sizes_past_the_store_are_refused() {
    let mut s = Varstore::parse(blank_store(512)).unwrap();
    s.set(var("Lang", b"eng\0")).unwrap();
    let good = s.into_bytes();
    let at = align4(0x48 + STORE_HEADER).unwrap();
    // Name size 36..40, data size 40..44 of the authenticated header.
    for (field, value) in [(36, u32::MAX), (40, u32::MAX), (40, u32::MAX - 3), (36, 0)] {
        let mut b = good.clone();
        b[at + field..at + field + 4].copy_from_slice(&value.to_le_bytes());
        let m = format_error(b);
        assert!(m.contains("overruns the store"), "{field} {value}: {m}");
    }
}

#[test]
fn garbage_is_refused() {
    assert!(Varstore::parse(vec![0u8; 4096]).is_err());
    let mut b = blank_store(512);
    b[0x48 + 20] = 0;
    assert!(Varstore::parse(b).is_err());
}

mod fuzz {
    use super::super::boot;
    use super::*;
    use proptest::prelude::*;

    /// A store with a few variables and a Shoal boot option, the real
    /// OVMF template when this host has one.
    fn valid_stores() -> Vec<Vec<u8>> {
        let mut s = Varstore::parse(blank_store(2048)).unwrap();
        s.set(var("Lang", b"eng\0")).unwrap();
        boot::set_http_boot(&mut s, "http://192.0.2.1/a.efi", boot::Persistence::Once).unwrap();
        let mut out = vec![s.into_bytes()];
        if let Ok(b) = std::fs::read("/usr/share/OVMF/OVMF_VARS_4M.fd") {
            out.push(b);
        }
        out
    }

    /// Everything a caller does with a parsed store: nothing may panic.
    fn exercise(bytes: Vec<u8>) {
        let Ok(mut s) = Varstore::parse(bytes) else {
            return;
        };
        let _ = s.free_bytes();
        let _ = s.variables().count();
        let _ = boot::boot_order(&s);
        let _ = boot::boot_next(&s);
        for (n, o) in boot::load_options(&s) {
            let _ = boot::device_path_uri(&o.device_path);
            let _ = boot::option_uri(&s, n);
        }
        let _ = boot::set_http_boot(
            &mut s,
            "http://192.0.2.1/b.iso",
            boot::Persistence::Continuous,
        );
        let _ = boot::clear_http_boot(&mut s);
        let _ = s.set(var("Big", &[0u8; 700]));
        let _ = Varstore::parse(s.into_bytes());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..1024)) {
            exercise(b);
        }

        #[test]
        fn mutated_stores_never_panic(
            which in any::<prop::sample::Index>(),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..16),
            fields in proptest::collection::vec(
                (any::<prop::sample::Index>(), prop_oneof![0u32..80, any::<u32>()]),
                0..4,
            ),
            cut in proptest::option::of(any::<prop::sample::Index>()),
        ) {
            let stores = valid_stores();
            let mut b = stores[which.index(stores.len())].clone();
            // Bytes anywhere in the headers and the first variables…
            let hot = b.len().min(0x48 + STORE_HEADER + 512);
            for (at, v) in edits {
                b[at.index(hot)] = v;
            }
            // …whole 32-bit fields: the volume length, the header
            // length, the store size, the first variable's name and
            // data sizes, or any 4-byte boundary…
            let first = align4(0x48 + STORE_HEADER).unwrap();
            let known = [32, 48, 0x48 + 16, first + 36, first + 40];
            for (at, v) in fields {
                let i = at.index(known.len() * 2);
                let o = known.get(i).copied().unwrap_or_else(|| at.index(hot / 4) * 4);
                b[o..o + 4].copy_from_slice(&v.to_le_bytes());
            }
            // …and a truncated file.
            if let Some(c) = cut {
                b.truncate(c.index(b.len()));
            }
            exercise(b);
        }

        #[test]
        fn device_paths_and_load_options_never_panic(
            b in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let _ = boot::device_path_uri(&b);
            if let Some(o) = boot::LoadOption::decode(&b) {
                let _ = boot::device_path_uri(&o.device_path);
                prop_assert_eq!(boot::LoadOption::decode(&o.encode()), Some(o));
            }
        }
    }
}
