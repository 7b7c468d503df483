//! The boot initiator mailbox (System Boot Options parameter 7) as
//! OpenPOWER's petitboot reads it: block 0 starts with the IANA number
//! 02 00 00, then the text (`petitboot,bootdevs=network disk`) and a NUL,
//! zero-padded to whole 16-byte blocks.

/// The mailbox's size in 16-byte blocks (the spec's minimum is 5;
/// petitboot reads blocks until the first error).
pub const MAILBOX_BLOCKS: usize = 16;

/// The longest text the mailbox holds (its blocks less the IANA number
/// and the NUL).
pub const MAILBOX_TEXT_MAX: usize = MAILBOX_BLOCKS * 16 - 4;

/// The blocks holding `text`; an error when it does not fit.
pub fn mailbox_blocks(text: &str) -> Result<Vec<[u8; 16]>, String> {
    if text.len() > MAILBOX_TEXT_MAX {
        return Err(format!("{} bytes, at most {MAILBOX_TEXT_MAX}", text.len()));
    }
    let mut data = vec![0x02, 0x00, 0x00];
    data.extend_from_slice(text.as_bytes());
    data.push(0);
    Ok(data
        .chunks(16)
        .map(|c| {
            let mut b = [0u8; 16];
            b[..c.len()].copy_from_slice(c);
            b
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_goes_after_the_iana_number_nul_ended_in_whole_blocks() {
        let b = mailbox_blocks("petitboot,bootdevs=network").unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(&b[0][..3], &[2, 0, 0]);
        assert_eq!(&b[0][3..], b"petitboot,boo");
        assert_eq!(&b[1][..14], b"tdevs=network\0");
        assert_eq!(&b[1][14..], &[0, 0]);
        // 13 bytes fill block 0 with the NUL in block 1.
        assert_eq!(mailbox_blocks(&"x".repeat(13)).unwrap().len(), 2);
        assert_eq!(mailbox_blocks(&"x".repeat(12)).unwrap().len(), 1);
        assert_eq!(
            mailbox_blocks(&"x".repeat(MAILBOX_TEXT_MAX)).unwrap().len(),
            16
        );
        assert!(mailbox_blocks(&"x".repeat(MAILBOX_TEXT_MAX + 1)).is_err());
    }
}
