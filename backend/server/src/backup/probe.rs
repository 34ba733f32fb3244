//! `mobius healthcheck`'s probe: one plain HTTP/1.0 GET to the local server.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::time::Duration;

/// The health probe gives up after this long (connect, send and receive each).
const HEALTHCHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// Largest health response read.
const MAX_HEALTH_RESPONSE_BYTES: u64 = 64 * 1024;

/// The loopback address to reach a server bound to `bind` from the same machine.
pub fn local_address(bind: SocketAddr) -> SocketAddr {
    let ip = match bind.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, bind.port())
}

/// GETs `path` from the server at `addr` (plain HTTP/1.0, no TLS) and returns the body of a
/// 200 answer; anything else is an error that says what came back.
pub fn probe(addr: SocketAddr, path: &str) -> Result<String, String> {
    let mut stream =
        TcpStream::connect_timeout(&addr, HEALTHCHECK_TIMEOUT).map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    let io = |e: std::io::Error| format!("no answer from {addr}: {e}");
    stream.set_read_timeout(Some(HEALTHCHECK_TIMEOUT)).map_err(io)?;
    stream.set_write_timeout(Some(HEALTHCHECK_TIMEOUT)).map_err(io)?;
    let request = format!(
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nUser-Agent: mobius-healthcheck\r\nAccept: application/json\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).map_err(io)?;
    let mut raw = Vec::new();
    stream.take(MAX_HEALTH_RESPONSE_BYTES).read_to_end(&mut raw).map_err(io)?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.lines().next().and_then(|line| line.split_whitespace().nth(1)).unwrap_or("");
    if status == "200" {
        Ok(body.to_owned())
    } else if status.is_empty() {
        Err(format!("{addr} did not answer with HTTP"))
    } else {
        Err(format!("GET {path} answered {status}: {}", body.trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_targets_loopback_for_a_wildcard_bind() {
        let v4: SocketAddr = "0.0.0.0:8000".parse().expect("addr");
        assert_eq!(local_address(v4).to_string(), "127.0.0.1:8000");
        let v6: SocketAddr = "[::]:8000".parse().expect("addr");
        assert_eq!(local_address(v6).to_string(), "[::1]:8000");
        let fixed: SocketAddr = "10.1.2.3:9000".parse().expect("addr");
        assert_eq!(local_address(fixed), fixed);
    }

    #[test]
    fn the_probe_reports_a_closed_port() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
        let err = probe(SocketAddr::from(([127, 0, 0, 1], port)), "/api/ready").expect_err("nothing listens");
        assert!(err.contains("cannot connect"), "{err}");
    }
}
