//! A raw HTTP/1.1 client over one keep-alive TCP connection: the fuzzer
//! must send what real clients refuse to build (`%FF` and `..` in paths,
//! bytes that are not UTF-8, broken header lines), so requests are bytes
//! and nothing is normalised on the way out.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// One request as it goes on the wire (Host and Content-Length are added).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Req {
    pub method: String,
    /// The request target, sent as is.
    pub target: Vec<u8>,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
    /// Bytes sent instead of a request built from the fields above.
    pub raw: Option<Vec<u8>>,
}

impl Req {
    pub fn new(method: &str, target: &str) -> Req {
        Req {
            method: method.into(),
            target: target.as_bytes().to_vec(),
            headers: Vec::new(),
            body: Vec::new(),
            raw: None,
        }
    }

    pub fn header(mut self, name: &str, value: impl Into<Vec<u8>>) -> Req {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn has_header(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    /// The bytes sent for this request to `host`.
    pub fn wire(&self, host: &str) -> Vec<u8> {
        if let Some(raw) = &self.raw {
            return raw.clone();
        }
        let mut w = Vec::with_capacity(256 + self.body.len());
        w.extend_from_slice(self.method.as_bytes());
        w.push(b' ');
        w.extend_from_slice(&self.target);
        w.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        w.extend_from_slice(host.as_bytes());
        w.extend_from_slice(b"\r\n");
        for (n, v) in &self.headers {
            w.extend_from_slice(n.as_bytes());
            w.extend_from_slice(b": ");
            w.extend_from_slice(v);
            w.extend_from_slice(b"\r\n");
        }
        if !self.body.is_empty() || matches!(self.method.as_str(), "POST" | "PATCH" | "PUT") {
            w.extend_from_slice(format!("Content-Length: {}\r\n", self.body.len()).as_bytes());
        }
        w.extend_from_slice(b"\r\n");
        w.extend_from_slice(&self.body);
        w
    }

    /// A one-line, readable form: method, target and the first bytes of
    /// the body, with what is not printable ASCII escaped.
    pub fn short(&self) -> String {
        if let Some(raw) = &self.raw {
            return format!("raw {}", escape(&raw[..raw.len().min(120)]));
        }
        let mut s = format!(
            "{} {}",
            self.method,
            escape(&self.target[..self.target.len().min(160)])
        );
        if self.target.len() > 160 {
            s.push_str(&format!("…({} bytes)", self.target.len()));
        }
        if !self.body.is_empty() {
            s.push_str(&format!(
                " body[{}] {}",
                self.body.len(),
                escape(&self.body[..self.body.len().min(120)])
            ));
        }
        s
    }
}

/// Bytes as printable ASCII, other bytes as `\xNN`.
pub fn escape(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len());
    for &c in b {
        match c {
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(c as char),
            _ => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    s
}

#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

#[derive(Debug)]
pub enum Error {
    /// No response within the limit.
    Timeout,
    /// The connection closed or broke before a whole response came.
    Closed(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Timeout => write!(f, "no response in time"),
            Error::Closed(why) => write!(f, "connection closed without a response: {why}"),
        }
    }
}

pub struct Client {
    addr: SocketAddr,
    host: String,
    timeout: Duration,
    conn: Option<BufReader<TcpStream>>,
}

/// Larger bodies are read and dropped (the checks need the start only).
const KEEP_BODY: usize = 4 << 20;

impl Client {
    pub fn new(addr: SocketAddr, timeout: Duration) -> Client {
        Client {
            addr,
            host: addr.to_string(),
            timeout,
            conn: None,
        }
    }

    /// Sends `req` and reads its response. A kept-alive connection the
    /// server has closed meanwhile is reopened once.
    pub fn send(&mut self, req: &Req) -> Result<Resp, Error> {
        let wire = req.wire(&self.host);
        let reused = self.conn.is_some();
        match self.exchange(&wire, req.method == "HEAD") {
            Err(Error::Closed(_)) if reused => self.exchange(&wire, req.method == "HEAD"),
            r => r,
        }
    }

    fn exchange(&mut self, wire: &[u8], head: bool) -> Result<Resp, Error> {
        let result = self.try_exchange(wire, head);
        if result.is_err() {
            self.conn = None;
        }
        result
    }

    fn try_exchange(&mut self, wire: &[u8], head: bool) -> Result<Resp, Error> {
        let io = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => Error::Timeout,
            _ => Error::Closed(e.to_string()),
        };
        let conn = match &mut self.conn {
            Some(conn) => conn,
            none => {
                let s = TcpStream::connect_timeout(&self.addr, self.timeout).map_err(io)?;
                s.set_read_timeout(Some(self.timeout)).map_err(io)?;
                s.set_write_timeout(Some(self.timeout)).map_err(io)?;
                s.set_nodelay(true).map_err(io)?;
                none.insert(BufReader::new(s))
            }
        };
        // A server may answer (413, 400) and close before reading it all.
        let write_err = conn.get_mut().write_all(wire).err();
        let mut line = Vec::new();
        let n = conn.read_until(b'\n', &mut line).map_err(io)?;
        if n == 0 {
            let why = write_err.map_or("EOF".to_string(), |e| e.to_string());
            return Err(Error::Closed(why));
        }
        let status_line = String::from_utf8_lossy(&line).trim_end().to_string();
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| Error::Closed(format!("bad status line {status_line:?}")))?;
        let mut headers = Vec::new();
        loop {
            line.clear();
            if conn.read_until(b'\n', &mut line).map_err(io)? == 0 {
                return Err(Error::Closed("EOF in headers".into()));
            }
            let l = String::from_utf8_lossy(&line).trim_end().to_string();
            if l.is_empty() {
                break;
            }
            if let Some((n, v)) = l.split_once(':') {
                headers.push((n.trim().to_string(), v.trim().to_string()));
            }
        }
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _): &&(String, String)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let close = get("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let mut body = Vec::new();
        if head || status == 204 || status == 304 || (100..200).contains(&status) {
        } else if let Some(len) = get("content-length") {
            let len: u64 = len
                .parse()
                .map_err(|_| Error::Closed(format!("bad Content-Length {len:?}")))?;
            read_n(conn, len, &mut body).map_err(io)?;
        } else if get("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
            loop {
                line.clear();
                conn.read_until(b'\n', &mut line).map_err(io)?;
                let size = String::from_utf8_lossy(&line);
                let size = size.trim().split(';').next().unwrap_or("");
                let size = u64::from_str_radix(size, 16)
                    .map_err(|_| Error::Closed(format!("bad chunk size {size:?}")))?;
                if size == 0 {
                    // Trailers, then the empty line.
                    loop {
                        line.clear();
                        if conn.read_until(b'\n', &mut line).map_err(io)? <= 2 {
                            break;
                        }
                    }
                    break;
                }
                read_n(conn, size, &mut body).map_err(io)?;
                line.clear();
                conn.read_until(b'\n', &mut line).map_err(io)?;
            }
        } else {
            conn.read_to_end(&mut body).map_err(io)?;
            self.conn = None;
        }
        if close || write_err.is_some() {
            self.conn = None;
        }
        Ok(Resp {
            status,
            headers,
            body,
        })
    }
}

fn read_n(r: &mut impl Read, n: u64, out: &mut Vec<u8>) -> std::io::Result<()> {
    let mut rest = n;
    let mut buf = [0u8; 16384];
    while rest > 0 {
        let want = buf.len().min(rest as usize);
        let got = r.read(&mut buf[..want])?;
        if got == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        if out.len() < KEEP_BODY {
            out.extend_from_slice(&buf[..got]);
        }
        rest -= got as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_form_keeps_the_target_as_given() {
        let mut r = Req::new("PATCH", "/redfish/v1/Systems/%FF/..").header("X-A", b"\xff".to_vec());
        r.body = b"{}".to_vec();
        let w = r.wire("127.0.0.1:1");
        assert_eq!(
            w,
            b"PATCH /redfish/v1/Systems/%FF/.. HTTP/1.1\r\nHost: 127.0.0.1:1\r\nX-A: \xff\r\nContent-Length: 2\r\n\r\n{}"
        );
        assert_eq!(r.short(), "PATCH /redfish/v1/Systems/%FF/.. body[2] {}");
        assert_eq!(escape(b"a\x00\\"), "a\\x00\\\\");
    }

    #[test]
    fn responses_are_read_with_length_chunks_and_keep_alive() {
        use std::io::Write;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf).unwrap();
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .unwrap();
            let _ = s.read(&mut buf).unwrap();
            s.write_all(b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n1\r\nd\r\n0\r\n\r\n")
                .unwrap();
        });
        let mut c = Client::new(addr, Duration::from_secs(5));
        let a = c.send(&Req::new("GET", "/a")).unwrap();
        assert_eq!((a.status, a.body.as_slice()), (200, &b"ok"[..]));
        let b = c.send(&Req::new("GET", "/b")).unwrap();
        assert_eq!((b.status, b.body.as_slice()), (404, &b"abcd"[..]));
        server.join().unwrap();
    }
}
