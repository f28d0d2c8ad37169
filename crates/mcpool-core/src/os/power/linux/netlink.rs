//! Address, link and route changes from the kernel (Linux rtnetlink), as
//! [`PowerEvent::NetworkChanged`]. A burst of kernel messages is one event.
//! Linux only (the module is compiled there alone).

use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::os::power::{until_stopped, PowerEvent};

/// Messages closer together than this are one change.
pub const DEBOUNCE: Duration = Duration::from_millis(300);

mod socket {
    use futures::FutureExt;
    use netlink_sys::protocols::NETLINK_ROUTE;
    use netlink_sys::{AsyncSocket, AsyncSocketExt, SocketAddr, TokioSocket};

    /// The rtnetlink multicast groups of link, address and route changes.
    const GROUPS: u32 = (libc::RTMGRP_LINK
        | libc::RTMGRP_IPV4_IFADDR
        | libc::RTMGRP_IPV6_IFADDR
        | libc::RTMGRP_IPV4_ROUTE
        | libc::RTMGRP_IPV6_ROUTE) as u32;

    /// A kernel message is only a sign that something changed: it is read
    /// into this much and dropped (a longer one is cut, which is fine).
    const BUF: usize = 8192;

    /// A non-blocking rtnetlink socket subscribed to the link, address and
    /// route groups, registered with tokio.
    pub fn open() -> std::io::Result<TokioSocket> {
        let mut socket = TokioSocket::new(NETLINK_ROUTE)?;
        socket.socket_mut().bind(&SocketAddr::new(0, GROUPS))?;
        Ok(socket)
    }

    /// Waits for the next kernel message and drops it.
    pub async fn next(socket: &TokioSocket) -> std::io::Result<()> {
        let mut buf = Vec::with_capacity(BUF);
        socket.recv(&mut buf).await
    }

    /// Drops every message already pending, without waiting.
    pub fn drain(socket: &TokioSocket) {
        let mut buf = Vec::with_capacity(BUF);
        while let Some(Ok(())) = socket.recv(&mut buf).now_or_never() {
            buf.clear();
        }
    }
}

pub async fn run(tx: mpsc::Sender<PowerEvent>, stop: CancellationToken) {
    let socket = match socket::open() {
        Ok(s) => s,
        Err(e) => {
            tracing::info!("no netlink network events ({e})");
            return;
        }
    };
    tracing::info!("watching network changes through netlink");
    while let Some(received) = until_stopped(&stop, socket::next(&socket)).await {
        match received {
            Ok(()) => {}
            // The kernel dropped messages for us: the network did change.
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
            Err(e) => {
                tracing::info!("netlink network events ended ({e})");
                return;
            }
        }
        // Let the burst settle, then report it once.
        tokio::time::sleep(DEBOUNCE).await;
        socket::drain(&socket);
        tracing::info!("the network changed");
        if tx.send(PowerEvent::NetworkChanged).await.is_err() {
            return;
        }
    }
}
