//! Address, link and route changes from the kernel (Linux rtnetlink), as
//! [`PowerEvent::NetworkChanged`]. A burst of kernel messages is one event.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{PowerEvent, PowerWatcher};

/// Messages closer together than this are one change.
pub const DEBOUNCE: Duration = Duration::from_millis(300);

pub struct Netlink;

#[cfg(target_os = "linux")]
mod socket {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

    pub struct Socket(OwnedFd);

    impl AsRawFd for Socket {
        fn as_raw_fd(&self) -> RawFd {
            self.0.as_raw_fd()
        }
    }

    /// A non-blocking rtnetlink socket subscribed to link, address and route groups.
    pub fn open() -> std::io::Result<Socket> {
        const GROUPS: u32 = (libc::RTMGRP_LINK
            | libc::RTMGRP_IPV4_IFADDR
            | libc::RTMGRP_IPV6_IFADDR
            | libc::RTMGRP_IPV4_ROUTE
            | libc::RTMGRP_IPV6_ROUTE) as u32;
        // SAFETY: plain socket(2)/bind(2) calls on a descriptor we own; the
        // address struct is zeroed and filled before use.
        unsafe {
            let fd = libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                libc::NETLINK_ROUTE,
            );
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let owned = OwnedFd::from_raw_fd(fd);
            let mut addr: libc::sockaddr_nl = std::mem::zeroed();
            addr.nl_family = libc::AF_NETLINK as u16;
            addr.nl_groups = GROUPS;
            let len = std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t;
            if libc::bind(fd, &addr as *const libc::sockaddr_nl as *const libc::sockaddr, len) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(Socket(owned))
        }
    }

    /// Reads and discards what is pending; returns whether anything was.
    pub fn drain(s: &Socket) -> std::io::Result<bool> {
        let mut buf = [0u8; 8192];
        let mut any = false;
        loop {
            // SAFETY: recv(2) into a buffer we own, with its true length.
            let n = unsafe { libc::recv(s.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n > 0 {
                any = true;
                continue;
            }
            if n == 0 {
                return Ok(any);
            }
            let e = std::io::Error::last_os_error();
            return if e.kind() == std::io::ErrorKind::WouldBlock {
                Ok(any)
            } else {
                Err(e)
            };
        }
    }
}

impl PowerWatcher for Netlink {
    fn name(&self) -> &'static str {
        "netlink"
    }

    #[cfg(target_os = "linux")]
    fn run(
        self: Box<Self>,
        tx: mpsc::Sender<PowerEvent>,
        stop: CancellationToken,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move {
            // SAFETY: the socket owns its descriptor and lives inside the
            // AsyncFd, so the descriptor stays valid while registered.
            let registered = socket::open().and_then(|s| {
                unsafe { tokio::io::unix::AsyncFd::register(s) }.map_err(|e| std::io::Error::other(e.to_string()))
            });
            let socket = match registered {
                Ok(s) => s,
                Err(e) => {
                    tracing::info!("no netlink network events ({e})");
                    return;
                }
            };
            tracing::info!("watching network changes through netlink");
            loop {
                let ready = tokio::select! {
                    _ = stop.cancelled() => return,
                    r = socket.readable() => r,
                };
                let Ok(mut guard) = ready else { return };
                match socket::drain(socket.get_ref()) {
                    Ok(true) => {}
                    Ok(false) => {
                        guard.clear_ready();
                        continue;
                    }
                    Err(_) => return,
                }
                guard.clear_ready();
                // Let the burst settle, then report it once.
                tokio::time::sleep(DEBOUNCE).await;
                let _ = socket::drain(socket.get_ref());
                tracing::info!("the network changed");
                if tx.send(PowerEvent::NetworkChanged).await.is_err() {
                    return;
                }
            }
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn run(
        self: Box<Self>,
        _tx: mpsc::Sender<PowerEvent>,
        _stop: CancellationToken,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async {})
    }
}
