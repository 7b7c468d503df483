//! A closed-loop HTTP/1.1 load generator: N clients, each on its own
//! keep-alive connection, each sending its next request as soon as the
//! previous answer is read, for a fixed time. Every request's latency is
//! kept, so percentiles are exact.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::{HeaderMap, Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// One keep-alive connection.
pub struct Conn {
    addr: SocketAddr,
    sender: Option<SendRequest<Full<Bytes>>>,
}

/// What a request got back.
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Conn {
    pub fn new(addr: SocketAddr) -> Conn {
        Conn { addr, sender: None }
    }

    async fn sender(&mut self) -> Result<&mut SendRequest<Full<Bytes>>> {
        if self.sender.as_ref().is_some_and(|s| s.is_closed()) {
            self.sender = None;
        }
        match &mut self.sender {
            Some(s) => Ok(s),
            slot => {
                let tcp = TcpStream::connect(self.addr)
                    .await
                    .with_context(|| format!("connect {}", self.addr))?;
                tcp.set_nodelay(true)?;
                let (sender, conn) =
                    hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                Ok(slot.insert(sender))
            }
        }
    }

    /// Sends one request and reads the whole answer. A connection the
    /// server closed is reopened once.
    pub async fn send(
        &mut self,
        method: &Method,
        path: &str,
        headers: &[(&str, &str)],
        body: &Bytes,
    ) -> Result<Answer> {
        for attempt in 0..2 {
            let mut b = Request::builder()
                .method(method.clone())
                .uri(path)
                .header("host", self.addr.to_string());
            for (k, v) in headers {
                b = b.header(*k, *v);
            }
            if !body.is_empty() {
                b = b.header("content-type", "application/json");
            }
            let req = b.body(Full::new(body.clone()))?;
            let sender = self.sender().await?;
            sender.ready().await.ok();
            match sender.send_request(req).await {
                Ok(resp) => {
                    let (parts, body) = resp.into_parts();
                    let body = body.collect().await?.to_bytes();
                    return Ok(Answer {
                        status: parts.status,
                        headers: parts.headers,
                        body,
                    });
                }
                Err(e) if attempt == 0 && (e.is_canceled() || e.is_closed()) => {
                    self.sender = None;
                }
                Err(e) => return Err(e.into()),
            }
        }
        bail!("connection to {} closed twice", self.addr)
    }
}

/// The result of one load run.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub ok: u64,
    pub errors: u64,
    /// A sample of what went wrong (first error seen).
    pub first_error: Option<String>,
    pub elapsed: Duration,
    /// Latencies of the successful operations, in microseconds, sorted.
    pub latencies_us: Vec<u32>,
}

impl Stats {
    pub fn rate(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    pub fn percentile_ms(&self, p: f64) -> Option<f64> {
        if self.latencies_us.is_empty() {
            return None;
        }
        let i = ((self.latencies_us.len() as f64 - 1.0) * p / 100.0).round() as usize;
        Some(self.latencies_us[i] as f64 / 1000.0)
    }
}

/// What one operation came to, when the server answered at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// A wrong answer (counted as an error), and what it was.
    Wrong(String),
}

impl Outcome {
    /// `Done` for a 2xx answer, else `Wrong` naming the request and status.
    pub fn success(a: &Answer, what: &str) -> Outcome {
        if a.status.is_success() {
            Outcome::Done
        } else {
            Outcome::Wrong(format!("{what} answered {}", a.status))
        }
    }
}

/// One operation a client repeats; `seq` counts the client's operations.
/// An `Err` is a transport failure: the client reconnects.
pub type Operation = Arc<
    dyn Fn(usize, u64, &mut Conn) -> futures_util::future::BoxFuture<'_, Result<Outcome>>
        + Send
        + Sync,
>;

/// Runs `clients` closed-loop clients against `addr` for `duration`.
pub async fn run(addr: SocketAddr, clients: usize, duration: Duration, op: Operation) -> Stats {
    let start = Instant::now();
    let deadline = start + duration;
    let mut tasks = Vec::new();
    for client in 0..clients {
        let op = op.clone();
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::new(addr);
            let mut st = Stats::default();
            let mut seq = 0u64;
            while Instant::now() < deadline {
                let t = Instant::now();
                match op(client, seq, &mut conn).await {
                    Ok(Outcome::Done) => {
                        st.ok += 1;
                        st.latencies_us
                            .push(t.elapsed().as_micros().min(u32::MAX as u128) as u32);
                    }
                    Ok(Outcome::Wrong(why)) => {
                        st.errors += 1;
                        st.first_error.get_or_insert(why);
                    }
                    Err(e) => {
                        st.errors += 1;
                        st.first_error.get_or_insert_with(|| format!("{e:#}"));
                        // Do not spin on a dead server.
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        conn = Conn::new(addr);
                    }
                }
                seq += 1;
            }
            st
        }));
    }
    let mut all = Stats::default();
    for t in tasks {
        if let Ok(st) = t.await {
            all.ok += st.ok;
            all.errors += st.errors;
            if all.first_error.is_none() {
                all.first_error = st.first_error;
            }
            all.latencies_us.extend(st.latencies_us);
        }
    }
    all.elapsed = start.elapsed();
    all.latencies_us.sort_unstable();
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_come_from_the_sorted_latencies() {
        let st = Stats {
            ok: 100,
            elapsed: Duration::from_secs(2),
            latencies_us: (1..=100).map(|i| i * 1000).collect(),
            ..Stats::default()
        };
        assert_eq!(st.rate(), 50.0);
        assert_eq!(st.percentile_ms(50.0), Some(51.0));
        assert_eq!(st.percentile_ms(99.0), Some(99.0));
        assert_eq!(Stats::default().percentile_ms(50.0), None);
    }

    #[tokio::test]
    async fn clients_keep_their_connection_and_count_answers() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let accepted = Arc::new(AtomicUsize::new(0));
        let app = axum::Router::new().route(
            "/x",
            axum::routing::get(|| async { "ok" }).post(|| async { StatusCode::BAD_REQUEST }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let counter = accepted.clone();
        tokio::spawn(async move {
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                counter.fetch_add(1, Ordering::SeqCst);
                let app = app.clone();
                tokio::spawn(async move {
                    let svc = hyper_util::service::TowerToHyperService::new(app);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), svc)
                        .await;
                });
            }
        });
        let get: Operation = Arc::new(|_, _, c: &mut Conn| {
            Box::pin(async move {
                let a = c.send(&Method::GET, "/x", &[], &Bytes::new()).await?;
                Ok(if &a.body[..] == b"ok" {
                    Outcome::success(&a, "GET /x")
                } else {
                    Outcome::Wrong("body".into())
                })
            })
        });
        let st = run(addr, 4, Duration::from_millis(300), get).await;
        assert!(st.ok > 10, "{st:?}");
        assert_eq!(st.errors, 0);
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            4,
            "one connection per client"
        );
        let post: Operation = Arc::new(|_, _, c: &mut Conn| {
            Box::pin(async move {
                let a = c.send(&Method::POST, "/x", &[], &Bytes::from("{}")).await?;
                Ok(Outcome::success(&a, "POST /x"))
            })
        });
        // Long enough for one answer on a loaded machine (100 ms was not,
        // beside a running suite).
        let st = run(addr, 1, Duration::from_secs(1), post).await;
        assert_eq!(st.ok, 0);
        assert!(st.errors > 0);
        assert_eq!(
            st.first_error.as_deref(),
            Some("POST /x answered 400 Bad Request")
        );
    }
}
