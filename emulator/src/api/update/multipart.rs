//! `multipart/form-data` (RFC 7578) over a body already read whole: the
//! parts of a MultipartHttpPushUri upload. Bounded: at most [`MAX_PARTS`]
//! parts, each header block at most [`MAX_HEADERS`] bytes; anything
//! malformed is an error, never a panic.

/// Parts a body may have.
pub const MAX_PARTS: usize = 16;
/// Bytes of one part's headers.
const MAX_HEADERS: usize = 4096;

/// One part: its form field name, file name and type, and its bytes.
#[derive(Debug, PartialEq, Eq)]
pub struct Part<'a> {
    pub name: String,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub body: &'a [u8],
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MultipartError {
    #[error("not multipart/form-data with a boundary")]
    NotMultipart,
    #[error("malformed multipart body: {0}")]
    Malformed(&'static str),
}

/// The boundary of a `multipart/form-data` Content-Type.
pub fn boundary(content_type: &str) -> Result<String, MultipartError> {
    let mut params = content_type.split(';');
    let kind = params.next().unwrap_or("").trim();
    if !kind.eq_ignore_ascii_case("multipart/form-data") {
        return Err(MultipartError::NotMultipart);
    }
    params
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("boundary"))
        .map(|(_, v)| v.trim().trim_matches('"').to_string())
        .filter(|b| !b.is_empty() && b.len() <= 70)
        .ok_or(MultipartError::NotMultipart)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The parts of `body`, split at `boundary`.
pub fn parse<'a>(boundary: &str, body: &'a [u8]) -> Result<Vec<Part<'a>>, MultipartError> {
    let open = format!("--{boundary}");
    let delimiter = format!("\r\n--{boundary}");
    let start = find(body, open.as_bytes()).ok_or(MultipartError::Malformed("no boundary"))?;
    // The preamble is ignored; a boundary line ends in CRLF or `--`.
    let mut rest = &body[start + open.len()..];
    let mut parts = Vec::new();
    loop {
        if rest.starts_with(b"--") {
            return Ok(parts);
        }
        rest = rest
            .strip_prefix(b"\r\n")
            .ok_or(MultipartError::Malformed("a boundary not followed by CRLF"))?;
        if parts.len() == MAX_PARTS {
            return Err(MultipartError::Malformed("too many parts"));
        }
        let head_end = find(&rest[..rest.len().min(MAX_HEADERS + 4)], b"\r\n\r\n")
            .ok_or(MultipartError::Malformed("a part's headers do not end"))?;
        let head = std::str::from_utf8(&rest[..head_end])
            .map_err(|_| MultipartError::Malformed("a part's headers are not UTF-8"))?;
        let content = &rest[head_end + 4..];
        let end = find(content, delimiter.as_bytes()).ok_or(MultipartError::Malformed(
            "a part is not closed by the boundary",
        ))?;
        parts.push(part(head, &content[..end])?);
        rest = &content[end + delimiter.len()..];
    }
}

fn part<'a>(head: &str, body: &'a [u8]) -> Result<Part<'a>, MultipartError> {
    let mut name = None;
    let mut filename = None;
    let mut content_type = None;
    for line in head.split("\r\n") {
        let Some((key, value)) = line.split_once(':') else {
            return Err(MultipartError::Malformed(
                "a part header is not `Name: value`",
            ));
        };
        if key.trim().eq_ignore_ascii_case("content-type") {
            content_type = Some(value.trim().to_string());
        } else if key.trim().eq_ignore_ascii_case("content-disposition") {
            let mut params = value.split(';');
            if !params
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("form-data")
            {
                return Err(MultipartError::Malformed("a part is not form-data"));
            }
            for p in params {
                if let Some((k, v)) = p.split_once('=') {
                    let v = v.trim().trim_matches('"').to_string();
                    match k.trim().to_ascii_lowercase().as_str() {
                        "name" => name = Some(v),
                        "filename" => filename = Some(v),
                        _ => {}
                    }
                }
            }
        }
    }
    Ok(Part {
        name: name.ok_or(MultipartError::Malformed("a part has no name"))?,
        filename,
        content_type,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CT: &str = "multipart/form-data; boundary=\"xYz\"";

    #[test]
    fn the_parts_of_an_upload_read_back() {
        let body = b"preamble\r\n--xYz\r\nContent-Disposition: form-data; name=\"UpdateParameters\"\r\nContent-Type: application/json\r\n\r\n{\"Targets\":[]}\r\n--xYz\r\nContent-Disposition: form-data; name=\"UpdateFile\"; filename=\"bios.fw\"\r\n\r\n\x00\r\n--xY\r\n\r\n--xYz--\r\n";
        let b = boundary(CT).unwrap();
        let parts = parse(&b, body).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].name, "UpdateParameters");
        assert_eq!(parts[0].content_type.as_deref(), Some("application/json"));
        assert_eq!(parts[0].body, b"{\"Targets\":[]}");
        assert_eq!(parts[1].filename.as_deref(), Some("bios.fw"));
        assert_eq!(
            parts[1].body, b"\x00\r\n--xY\r\n",
            "a near-boundary stays data"
        );
    }

    #[test]
    fn malformed_bodies_are_errors() {
        assert_eq!(
            boundary("application/octet-stream"),
            Err(MultipartError::NotMultipart)
        );
        assert_eq!(
            boundary("multipart/form-data"),
            Err(MultipartError::NotMultipart)
        );
        let b = "xYz";
        for body in [
            &b""[..],
            b"--xYz",
            b"--xYz\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nno end",
            b"--xYz\r\nContent-Disposition: form-data\r\n\r\nx\r\n--xYz--",
            b"--xYz\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nx\r\n--xYz--",
            b"--xYz\r\nno colon\r\n\r\nx\r\n--xYz--",
            b"--xYzjunk",
        ] {
            assert!(
                parse(b, body).is_err(),
                "{:?}",
                String::from_utf8_lossy(body)
            );
        }
        let many: String = (0..=MAX_PARTS)
            .map(|i| format!("--xYz\r\nContent-Disposition: form-data; name=\"p{i}\"\r\n\r\nx\r\n"))
            .collect::<String>()
            + "--xYz--";
        assert_eq!(
            parse(b, many.as_bytes()),
            Err(MultipartError::Malformed("too many parts"))
        );
    }
}
