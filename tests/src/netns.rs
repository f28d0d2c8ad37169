//! A private two-namespace network for the wake tests and the wake benchmark:
//! `mcpool serve` runs in a client namespace, the fault server in a server
//! namespace, joined by one veth pair on a private /30 that exists only
//! there. The client's `/etc/hosts` maps [`HOST`] to the server, and its
//! resolver points at its own loopback, so no lookup or packet ever leaves
//! the two namespaces. Needs root (`ip netns`); everything is removed on drop.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use serde_json::Value;
use tokio::process::{Child, Command};

/// The name the client resolves to the server through its hosts file.
pub const HOST: &str = "mcp.test";
/// The client end of the link (in the client namespace).
pub const CLIENT_ADDR: &str = "10.231.0.1";
/// The server end of the link (in the server namespace).
pub const SERVER_ADDR: &str = "10.231.0.2";
/// The veth on the client side; the server side is [`SERVER_LINK`].
pub const CLIENT_LINK: &str = "mcpc";
pub const SERVER_LINK: &str = "mcps";

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Runs `ip ARGS`, failing with its stderr.
pub fn ip(args: &[&str]) -> anyhow::Result<()> {
    let out = std::process::Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("cannot run ip (iproute2)")?;
    if !out.status.success() {
        bail!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

/// The two namespaces and their link; see the module docs.
pub struct NetGap {
    pub client: String,
    pub server: String,
    client_etc: PathBuf,
}

impl NetGap {
    /// Creates both namespaces, the link (up), and the client's hosts file
    /// with [`HOST`] resolvable.
    pub fn create() -> anyhow::Result<Self> {
        let base = format!(
            "mcpool-t{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let gap = NetGap {
            client: format!("{base}-c"),
            server: format!("{base}-s"),
            client_etc: PathBuf::from("/etc/netns").join(format!("{base}-c")),
        };
        // From here on, drop cleans up whatever was made.
        std::fs::create_dir_all(&gap.client_etc)?;
        std::fs::write(gap.client_etc.join("resolv.conf"), "nameserver 127.0.0.1\n")?;
        gap.set_resolvable(true)?;
        ip(&["netns", "add", &gap.client])?;
        ip(&["netns", "add", &gap.server])?;
        ip(&[
            "link",
            "add",
            CLIENT_LINK,
            "netns",
            &gap.client,
            "type",
            "veth",
            "peer",
            "name",
            SERVER_LINK,
            "netns",
            &gap.server,
        ])?;
        for (ns, link, addr) in [
            (&gap.client, CLIENT_LINK, CLIENT_ADDR),
            (&gap.server, SERVER_LINK, SERVER_ADDR),
        ] {
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            ip(&["-n", ns, "addr", "add", &format!("{addr}/30"), "dev", link])?;
            ip(&["-n", ns, "link", "set", link, "up"])?;
        }
        Ok(gap)
    }

    /// `program` run inside namespace `ns` (`ip netns exec`, which also
    /// mounts that namespace's `/etc/netns/NS` files over `/etc`).
    pub fn command(&self, ns: &str, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns]).arg(program);
        cmd
    }

    /// Takes the client's side of the link down or up.
    pub fn link(&self, up: bool) -> anyhow::Result<()> {
        ip(&[
            "-n",
            &self.client,
            "link",
            "set",
            CLIENT_LINK,
            if up { "up" } else { "down" },
        ])
    }

    /// Adds or removes the [`HOST`] line of the client's hosts file. The file
    /// is rewritten in place: `ip netns exec` bind-mounts it, so a rename
    /// would not reach processes already running.
    pub fn set_resolvable(&self, resolvable: bool) -> anyhow::Result<()> {
        let mut hosts = String::from("127.0.0.1 localhost\n::1 localhost\n");
        if resolvable {
            hosts.push_str(&format!("{SERVER_ADDR} {HOST}\n"));
        }
        std::fs::write(self.client_etc.join("hosts"), hosts)?;
        Ok(())
    }

    /// `curl ARGS` inside `ns`; returns the body, failing on a non-2xx.
    pub async fn curl(&self, ns: &str, args: &[&str]) -> anyhow::Result<String> {
        let out = tokio::time::timeout(
            Duration::from_secs(20),
            self.command(ns, "curl")
                .args(["-sS", "--fail", "--max-time", "10", "--noproxy", "*"])
                .args(args)
                .stdin(Stdio::null())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .map_err(|_| anyhow!("curl {args:?} in {ns} did not finish"))??;
        if !out.status.success() {
            bail!("curl {args:?} in {ns}: {}", String::from_utf8_lossy(&out.stderr).trim());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Drop for NetGap {
    fn drop(&mut self) {
        // Deleting a namespace also deletes the veth pair inside it.
        let _ = ip(&["netns", "del", &self.client]);
        let _ = ip(&["netns", "del", &self.server]);
        let _ = std::fs::remove_dir_all(&self.client_etc);
    }
}

/// The fault server listening on the server side of the link.
pub struct FaultServer {
    pub child: Child,
    pub port: u16,
}

impl FaultServer {
    /// Starts `faulty http` in the server namespace, accepting `Host: mcp.test`.
    pub async fn start(gap: &NetGap, faulty: &Path, spawn_log: &Path) -> anyhow::Result<Self> {
        let mut cmd = gap.command(&gap.server, faulty);
        cmd.args(["http", "--listen", &format!("{SERVER_ADDR}:0"), "--allow-host", HOST])
            .arg("--spawn-log")
            .arg(spawn_log);
        let (child, line) = crate::spawn_quiet(&mut cmd, Duration::from_secs(20)).await?;
        Ok(FaultServer {
            child,
            port: crate::listening_port(&line)?,
        })
    }

    /// The URL mcpool dials, by name.
    pub fn url(&self) -> String {
        format!("http://{HOST}:{}/mcp", self.port)
    }

    /// `/stats`, asked from inside the server namespace (so it works while
    /// the link is down).
    pub async fn stats(&self, gap: &NetGap) -> anyhow::Result<Value> {
        let body = gap
            .curl(&gap.server, &[&format!("http://{SERVER_ADDR}:{}/stats", self.port)])
            .await?;
        Ok(serde_json::from_str(&body)?)
    }

    pub async fn initializes(&self, gap: &NetGap) -> anyhow::Result<u64> {
        let s = self.stats(gap).await?;
        s["initialize"]
            .as_u64()
            .ok_or_else(|| anyhow!("no initialize count in /stats: {s}"))
    }
}

/// `mcpool serve` inside the client namespace, listening on its loopback;
/// its HTTP API is asked through `curl` run in the same namespace.
pub struct NsMcpool {
    pub child: Child,
    pub port: u16,
    pub token: String,
    pub stderr_log: PathBuf,
    client_ns: String,
}

impl NsMcpool {
    /// Starts `mcpool serve` with `config` written into `dir`, its XDG dirs
    /// there too, plus `extra_env`.
    pub async fn start(
        gap: &NetGap,
        mcpool: &Path,
        dir: &Path,
        config: &Value,
        extra_env: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        let config_path = dir.join("config.json");
        std::fs::write(&config_path, serde_json::to_vec_pretty(config)?)?;
        let stderr_log = dir.join("mcpool.stderr");
        let token = format!("netns-token-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("netns");
        let mut cmd = gap.command(&gap.client, mcpool);
        cmd.args(["serve", "--config"])
            .arg(&config_path)
            .args(["--listen", "127.0.0.1:0"])
            .env("MCPOOL_TOKEN", &token)
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("XDG_CACHE_HOME", dir.join("cache"))
            .env("XDG_DATA_HOME", dir.join("data"))
            .env("MCPOOL_PROFILE", format!("test-{name}"))
            .env_remove("MCPOOL_LISTEN")
            .env_remove("MCPOOL_CONFIG")
            .env_remove("MCPOOL_CACHE_DIR")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_log)?)
            .kill_on_drop(true);
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn()?;
        let line = crate::first_line(&mut child, Duration::from_secs(20))
            .await
            .with_context(|| {
                format!(
                    "mcpool did not start listening: {}",
                    std::fs::read_to_string(&stderr_log).unwrap_or_default()
                )
            })?;
        let port = crate::listening_port(&line)?;
        Ok(NsMcpool {
            child,
            port,
            token,
            stderr_log,
            client_ns: gap.client.clone(),
        })
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.stderr_log).unwrap_or_default()
    }

    pub async fn servers(&self, gap: &NetGap) -> anyhow::Result<Vec<Value>> {
        let auth = format!("Authorization: Bearer {}", self.token);
        let url = format!("http://127.0.0.1:{}/api/servers", self.port);
        let body = gap.curl(&self.client_ns, &["-H", &auth, &url]).await?;
        Ok(serde_json::from_str(&body)?)
    }

    pub async fn server(&self, gap: &NetGap, name: &str) -> anyhow::Result<Value> {
        self.servers(gap)
            .await?
            .into_iter()
            .find(|s| s["name"] == name)
            .ok_or_else(|| anyhow!("no server {name} in /api/servers"))
    }

    /// Polls `/api/servers` until `name` satisfies `check`, or fails after `limit`.
    pub async fn wait(
        &self,
        gap: &NetGap,
        name: &str,
        what: &str,
        limit: Duration,
        check: impl Fn(&Value) -> bool,
    ) -> anyhow::Result<Value> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let s = self.server(gap, name).await?;
            if check(&s) {
                return Ok(s);
            }
            if tokio::time::Instant::now() > deadline {
                bail!(
                    "server {name} was not {what} within {limit:?}; last: {s}\nlogs:\n{}",
                    self.logs()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the log has at least `n` lines containing `needle`.
    pub async fn wait_log(&self, needle: &str, n: usize, limit: Duration) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + limit;
        while self.logs().matches(needle).count() < n {
            if tokio::time::Instant::now() > deadline {
                bail!(
                    "{needle:?} not logged {n} times within {limit:?}; logs:\n{}",
                    self.logs()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }
}

impl Drop for NsMcpool {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
            // SAFETY: signals the child we spawned (`ip netns exec` execs
            // mcpool in place); a graceful stop lets it stop its children.
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        }
    }
}
