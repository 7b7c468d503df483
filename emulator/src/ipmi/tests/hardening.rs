//! A hostile network against a whole BMC: only RMCP+ advertised.

use super::*;

/// A session-less request as a v1.5 datagram; the completion code and data.
async fn session_less(bmc: &Arc<Bmc>, netfn: u8, cmd: u8, data: &[u8]) -> (u8, Vec<u8>) {
    let req = wire::build_request(netfn, cmd, 1, data);
    let reply = bmc.handle_at(&wire::build_v15(&req)).await.unwrap();
    let Ok(wire::Datagram::V15 { message, .. }) = wire::parse(&reply) else {
        panic!("not a v1.5 answer");
    };
    (message[6], message[7..message.len() - 1].to_vec())
}

/// Get Channel Authentication Capabilities (IPMI v2.0 table 22-15)
/// advertises what is served: RMCP+ only, no IPMI v1.5 authentication
/// type, so v1.5 consoles stop at once instead of waiting for a session
/// challenge nobody answers; LAN parameters 1 and 2 agree, and a Get
/// Session Challenge is refused, not left unanswered.
#[test]
fn only_rmcp_plus_is_advertised() {
    use super::super::commands::execute;
    rt().block_on(async {
        let bmc = bmc();
        // v2.0 data asked (bit 7): extended capabilities, no v1.5 types;
        // non-null user names; IPMI v2.0 connections only.
        assert_eq!(
            session_less(&bmc, 0x06, 0x38, &[0x8e, 4]).await,
            (0, vec![0x01, 0x80, 0x04, 0x02, 0, 0, 0, 0])
        );
        // The v1.5 form: no authentication type at all.
        assert_eq!(
            session_less(&bmc, 0x06, 0x38, &[0x0e, 4]).await,
            (0, vec![0x01, 0x00, 0x04, 0x00, 0, 0, 0, 0])
        );
        let mut challenge = vec![0x00];
        challenge.extend_from_slice(b"admin\0\0\0\0\0\0\0\0\0\0\0");
        assert_eq!(
            session_less(&bmc, 0x06, 0x39, &challenge).await.0,
            0xcc,
            "Get Session Challenge"
        );
        for (param, want) in [(1, vec![0x11, 0]), (2, vec![0x11, 0, 0, 0, 0, 0])] {
            let got = execute(
                &bmc,
                Privilege::Administrator,
                0x0c,
                0x02,
                &[1, param, 0, 0],
            )
            .await;
            assert_eq!(got, (0, want), "LAN parameter {param}");
        }
    });
}
