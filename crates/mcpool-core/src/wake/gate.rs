//! The network gate: can this machine reach a remote server's host right
//! now? A fresh DNS lookup (no cache of ours, so no negative caching) and a
//! TCP connect, each bounded; a lookup that times out is transient.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    #[error("cannot resolve {host}: {reason}")]
    Dns { host: String, reason: String },
    #[error("cannot reach {host}:{port}: {reason}")]
    Connect { host: String, port: u16, reason: String },
}

pub trait Reachability: Send + Sync {
    fn probe<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> Pin<Box<dyn Future<Output = Result<(), ProbeError>> + Send + 'a>>;
}

/// The real gate: the system resolver, then a TCP connect.
pub struct DnsTcp;

impl Reachability for DnsTcp {
    fn probe<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> Pin<Box<dyn Future<Output = Result<(), ProbeError>> + Send + 'a>> {
        Box::pin(async move {
            let dns = |reason: String| ProbeError::Dns {
                host: host.to_string(),
                reason,
            };
            let addrs: Vec<_> = match tokio::time::timeout(PROBE_TIMEOUT, tokio::net::lookup_host((host, port))).await {
                Ok(Ok(a)) => a.collect(),
                Ok(Err(e)) => return Err(dns(e.to_string())),
                Err(_) => return Err(dns("the lookup timed out".into())),
            };
            let mut last = String::from("no addresses");
            for addr in addrs {
                match tokio::time::timeout(PROBE_TIMEOUT, tokio::net::TcpStream::connect(addr)).await {
                    Ok(Ok(_)) => return Ok(()),
                    Ok(Err(e)) => last = e.to_string(),
                    Err(_) => last = "the connect timed out".into(),
                }
            }
            Err(ProbeError::Connect {
                host: host.to_string(),
                port,
                reason: last,
            })
        })
    }
}

/// Host and port of a remote server's URL.
pub fn target(url: &str) -> Option<(String, u16)> {
    let u = url::Url::parse(url).ok()?;
    let host = u.host_str()?.trim_start_matches('[').trim_end_matches(']').to_string();
    Some((host, u.port_or_known_default()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert_eq!(
            target("https://api.example.test/mcp"),
            Some(("api.example.test".into(), 443))
        );
        assert_eq!(target("http://127.0.0.1:9/x"), Some(("127.0.0.1".into(), 9)));
        assert_eq!(target("http://[::1]:8080/"), Some(("::1".into(), 8080)));
        assert_eq!(target("nope"), None);
    }

    #[tokio::test]
    async fn a_closed_port_is_unreachable() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        assert_eq!(DnsTcp.probe("127.0.0.1", port).await, Ok(()));
        drop(listener);
        assert!(matches!(
            DnsTcp.probe("127.0.0.1", port).await,
            Err(ProbeError::Connect { .. })
        ));
    }
}
