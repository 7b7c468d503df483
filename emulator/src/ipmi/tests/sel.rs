//! The SEL over IPMI's Storage commands: records of what the machine did,
//! walked as clients walk them, reservations, the clear, and each bad
//! request's completion code with nothing changed.

use super::*;
use crate::ipmi::commands::execute;

const STORAGE: u8 = netfn::STORAGE;

async fn x(bmc: &Arc<Bmc>, p: Privilege, cmd: u8, data: &[u8]) -> (u8, Vec<u8>) {
    execute(bmc, p, STORAGE, cmd, data).await
}

/// (entries, last addition, last erasure) of Get SEL Info.
async fn info(bmc: &Arc<Bmc>) -> (u16, [u8; 4], [u8; 4]) {
    let (code, d) = x(bmc, Privilege::User, 0x40, &[]).await;
    assert_eq!(
        (code, d.len(), d[0], d[13]),
        (0, 14, 0x51, 0x02),
        "{d:02x?}"
    );
    (
        u16::from_le_bytes([d[1], d[2]]),
        d[5..9].try_into().unwrap(),
        d[9..13].try_into().unwrap(),
    )
}

/// Every record, walked from 0x0000 as ipmitool does (reservation 0,
/// whole records): (id, sensor type, sensor number, event data 1).
async fn walk(bmc: &Arc<Bmc>) -> Vec<(u16, u8, u8, u8)> {
    let mut out = Vec::new();
    let mut id = 0u16;
    loop {
        let i = id.to_le_bytes();
        let (code, d) = x(bmc, Privilege::User, 0x43, &[0, 0, i[0], i[1], 0, 0xff]).await;
        assert_eq!((code, d.len()), (0, 18), "record {id:#06x}: {d:02x?}");
        let r = &d[2..];
        // System event record, from the BMC (0x0020), revision 0x04,
        // sensor-specific.
        assert_eq!(
            (r[2], r[7], r[8], r[9], r[12]),
            (0x02, 0x20, 0x00, 0x04, 0x6f)
        );
        out.push((u16::from_le_bytes([r[0], r[1]]), r[10], r[11], r[13]));
        id = u16::from_le_bytes([d[0], d[1]]);
        if id == 0xffff {
            return out;
        }
    }
}

#[test]
fn the_sel_holds_what_the_machine_did_walked_as_clients_walk_it() {
    rt().block_on(async {
        let bmc = bmc();
        // Empty: no entries, no times; record 0x0000 is not there.
        assert_eq!(info(&bmc).await, (0, [0xff; 4], [0xff; 4]));
        assert_eq!(
            x(&bmc, Privilege::User, 0x43, &[0, 0, 0, 0, 0, 0xff])
                .await
                .0,
            0xcb
        );
        // Power on over IPMI, then off: S0/G0, a boot by power-up, S5/G2.
        for on in [0x01, 0x00] {
            let done = execute(&bmc, Privilege::Operator, netfn::CHASSIS, 0x02, &[on]).await;
            assert_eq!(done.0, 0);
        }
        let (n, added, erased) = info(&bmc).await;
        assert_eq!(n, 3);
        assert_ne!(added, [0xff; 4]);
        assert_eq!(erased, [0xff; 4]);
        assert_eq!(
            walk(&bmc).await,
            [
                (1, 0x22, 0x70, 0x00),
                (2, 0x1d, 0x71, 0x00),
                (3, 0x22, 0x70, 0x05)
            ]
        );
        // 0xFFFF is the last record; a missing Id is not there.
        let (code, d) = x(&bmc, Privilege::User, 0x43, &[0, 0, 0xff, 0xff, 0, 0xff]).await;
        assert_eq!((code, &d[..4]), (0, &[0xff, 0xff, 3, 0][..]));
        assert_eq!(
            x(&bmc, Privilege::User, 0x43, &[0, 0, 9, 0, 0, 0xff])
                .await
                .0,
            0xcb
        );
        // The SDR repository names the sensors: Event-Only records.
        let sdr = crate::ipmi::inventory::sdr_records();
        assert!(sdr[1..].iter().all(|r| r[3] == 0x03));
        assert_eq!(sdr.len(), 1 + crate::bmc::log::SEL_SENSORS.len());
    });
}

#[test]
fn partial_reads_and_the_clear_take_the_current_reservation() {
    rt().block_on(async {
        let bmc = bmc();
        let on = execute(&bmc, Privilege::Operator, netfn::CHASSIS, 0x02, &[0x01]).await;
        assert_eq!(on.0, 0);
        // A partial read needs a reservation.
        assert_eq!(
            x(&bmc, Privilege::User, 0x43, &[0, 0, 1, 0, 0, 4]).await.0,
            0xc5
        );
        let (code, r) = x(&bmc, Privilege::User, 0x42, &[]).await;
        assert_eq!((code, r.len()), (0, 2));
        assert_ne!(r, [0, 0], "a reservation is never 0");
        let (code, d) = x(&bmc, Privilege::User, 0x43, &[r[0], r[1], 1, 0, 2, 1]).await;
        assert_eq!((code, d), (0, vec![2, 0, 0x02]), "the record type, alone");
        // Past the record's 16 bytes.
        assert_eq!(
            x(&bmc, Privilege::User, 0x43, &[r[0], r[1], 1, 0, 10, 10])
                .await
                .0,
            0xca
        );
        assert_eq!(
            x(&bmc, Privilege::User, 0x43, &[r[0], r[1], 1, 0, 17, 0xff])
                .await
                .0,
            0xca
        );
        assert_eq!(
            x(&bmc, Privilege::User, 0x43, &[0, 0, 1, 0, 0]).await.0,
            0xc7
        );
        let clear = |rsv: [u8; 2], tail: &'static [u8]| {
            let mut d = rsv.to_vec();
            d.extend_from_slice(tail);
            d
        };
        let rsv = [r[0], r[1]];
        // Refused, and nothing cleared: a user, a stale reservation, no
        // 'CLR', a short request.
        assert_eq!(
            x(&bmc, Privilege::User, 0x47, &clear(rsv, b"CLR\xaa"))
                .await
                .0,
            0xd4
        );
        let stale = [rsv[0].wrapping_add(1), rsv[1]];
        assert_eq!(
            x(&bmc, Privilege::Operator, 0x47, &clear(stale, b"CLR\xaa"))
                .await
                .0,
            0xc5
        );
        assert_eq!(
            x(&bmc, Privilege::Operator, 0x47, &clear(rsv, b"CLX\xaa"))
                .await
                .0,
            0xcc
        );
        assert_eq!(
            x(&bmc, Privilege::Operator, 0x47, &clear(rsv, b"CLR\x55"))
                .await
                .0,
            0xcc
        );
        assert_eq!(
            x(&bmc, Privilege::Operator, 0x47, &clear(rsv, b"CL"))
                .await
                .0,
            0xc7
        );
        assert_eq!(info(&bmc).await.0, 2);
        // The clear: completed at once, one record left (the log area
        // reset), the erasure timed, the reservation spent.
        let done = x(&bmc, Privilege::Operator, 0x47, &clear(rsv, b"CLR\xaa")).await;
        assert_eq!(done, (0, vec![0x01]));
        let status = x(&bmc, Privilege::Operator, 0x47, &clear([0, 0], b"CLR\x00")).await;
        assert_eq!(status, (0, vec![0x01]));
        let (n, _, erased) = info(&bmc).await;
        assert_eq!(n, 1);
        assert_ne!(erased, [0xff; 4]);
        assert_eq!(walk(&bmc).await, [(1, 0x10, 0x72, 0x02)]);
        assert_eq!(
            x(&bmc, Privilege::User, 0x43, &[r[0], r[1], 1, 0, 2, 1])
                .await
                .0,
            0xc5
        );
    });
}
