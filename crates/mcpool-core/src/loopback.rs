//! What counts as this machine in a `Host` or `Origin` header: the one
//! check the endpoint, the dashboard's sign-in and `/metrics` share, kept
//! below all of them so that none reaches into another for it.

/// `localhost`, `127.x.x.x` or `[::1]`, with any port, and nothing else (no
/// user info, path or query). Checked on every request, so parsed as an
/// HTTP authority rather than as a whole URL.
pub fn is_loopback_authority(host: &str) -> bool {
    if host.contains(['/', '@', '?', '#']) {
        return false;
    }
    let Ok(authority) = host.parse::<http::uri::Authority>() else {
        return false;
    };
    let name = authority.host();
    // The authority parser leaves the port unchecked: anything after the
    // name must be a port number.
    if host.len() != name.len() && authority.port_u16().is_none() {
        return false;
    }
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok_and(|ip| ip.is_loopback()),
        None => name.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback()),
    }
}

/// `http(s)://localhost`, `127.x.x.x` or `[::1]`, any port.
pub fn is_loopback_origin(origin: &str) -> bool {
    let Ok(url) = url::Url::parse(origin) else { return false };
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for ok in [
            "localhost",
            "LOCALHOST:3000",
            "127.0.0.1",
            "127.1.2.3:9",
            "[::1]",
            "[::1]:80",
        ] {
            assert!(is_loopback_authority(ok), "{ok}");
        }
        for bad in [
            "",
            "localhost.evil.com",
            "evil.example:7410",
            "10.0.0.1",
            "[::2]:80",
            "user@127.0.0.1",
            "127.0.0.1/x",
            "127.0.0.1?x",
            "127.0.0.1#x",
            "127.0.0.1:notaport",
            "localhost:",
            "localhost:99999",
            "0.0.0.0",
        ] {
            assert!(!is_loopback_authority(bad), "{bad}");
        }
    }

    #[test]
    fn loopback_origins() {
        for ok in [
            "http://localhost:3000",
            "http://127.0.0.1",
            "https://127.1.2.3:9",
            "http://[::1]:80",
        ] {
            assert!(is_loopback_origin(ok), "{ok}");
        }
        for bad in [
            "null",
            "http://localhost.evil.com",
            "http://10.0.0.1",
            "file://",
            "http://[::2]",
        ] {
            assert!(!is_loopback_origin(bad), "{bad}");
        }
    }
}
