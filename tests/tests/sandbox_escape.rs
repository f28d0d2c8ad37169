//! The escape suite (README "Sandboxing local servers", "What a sandbox
//! holds"): a confined server tries what an attacker's would, under
//! `standard` and `strict`, with mcpool run by root (as CI runs) and by a
//! plain user. Each attempt is one tool of `tests/py/escape_probe.py`, and
//! each is checked to fail *because of the sandbox*: the same attempt
//! unconfined would succeed (the sockets are open to anyone, the folders
//! are the user's own, the victim runs as the same user).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(60);
/// The plain user of the runs as one: Debian's `nobody`.
const PLAIN_USER: u32 = 65534;
const ENV_SECRET: &str = "victim-env-secret-5d1c";
const ARGV_SECRET: &str = "--token=victim-argv-secret-77e2";

/// Everything an attack needs to aim at.
struct Targets {
    home: PathBuf,
    /// A Unix socket bound to a path, open to anyone, that no grant names.
    path_socket: PathBuf,
    /// One that `allowSockets` names.
    granted_socket: PathBuf,
    abstract_name: String,
    /// Where mcpool keeps its control credential (`XDG_RUNTIME_DIR`), with
    /// a stand-in credential in it.
    runtime: PathBuf,
    credential: PathBuf,
    _listeners: Vec<std::os::unix::net::UnixListener>,
}

fn targets(dir: &Path) -> anyhow::Result<Targets> {
    use std::os::linux::net::SocketAddrExt;
    let home = dir.join("home");
    for folder in [
        ".ssh",
        ".npm",
        ".bun/bin",
        ".local/bin",
        ".local/share/pnpm",
        ".local/share/uv/tools",
        ".cache/uv",
        ".cargo/bin",
    ] {
        std::fs::create_dir_all(home.join(folder))?;
    }
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY")?;
    std::fs::write(home.join(".npm/seed.txt"), "from the user's cache")?;
    let runtime = dir.join("run");
    std::fs::create_dir_all(runtime.join("mcpool"))?;
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700))?;
    let credential = runtime.join("mcpool/control-stand-in");
    std::fs::write(&credential, "control credential")?;
    std::fs::set_permissions(&credential, std::fs::Permissions::from_mode(0o600))?;
    let sockets = dir.join("sockets");
    std::fs::create_dir_all(&sockets)?;
    let (path_socket, granted_socket) = (sockets.join("daemon.sock"), sockets.join("granted.sock"));
    let abstract_name = format!(
        "mcpool-escape-{}-{}",
        std::process::id(),
        dir.display().to_string().len()
    );
    let address = std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes())?;
    let listeners = vec![
        std::os::unix::net::UnixListener::bind(&path_socket)?,
        std::os::unix::net::UnixListener::bind(&granted_socket)?,
        std::os::unix::net::UnixListener::bind_addr(&address)?,
    ];
    for socket in [&path_socket, &granted_socket] {
        std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o777))?;
    }
    Ok(Targets {
        home,
        path_socket,
        granted_socket,
        abstract_name,
        runtime,
        credential,
        _listeners: listeners,
    })
}

/// The session bus's socket as a probe's `unix` tool takes it (a path, or
/// `@name`), from `DBUS_SESSION_BUS_ADDRESS`.
fn session_bus() -> anyhow::Result<String> {
    let address = std::env::var("DBUS_SESSION_BUS_ADDRESS")
        .context("the escape suite runs on a session bus (scripts/desktop.sh)")?;
    let first = address.split(';').next().unwrap_or("");
    let field = |key: &str| {
        first
            .trim_start_matches("unix:")
            .split(',')
            .find_map(|kv| kv.strip_prefix(key).map(str::to_string))
    };
    field("path=")
        .or_else(|| field("abstract=").map(|n| format!("@{n}")))
        .with_context(|| format!("a session bus address without a socket: {address}"))
}

/// The pid of the process whose environment holds `marker` (the test runs
/// as root and reads every process's).
fn pid_with_env(marker: &str) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let environ = std::fs::read(e.path().join("environ")).ok()?;
        String::from_utf8_lossy(&environ).contains(marker).then_some(pid)
    })
}

async fn said(agent: &Agent, tool: &str, args: Value) -> anyhow::Result<String> {
    Ok(text(&agent.call(&format!("probe__{tool}"), args).await?))
}

fn refused(answer: &str) -> bool {
    answer.starts_with("refused:")
}

/// mcpool with the probe under `mode` beside an unconfined victim server
/// holding secrets, run by root or by `as_user`.
struct Scene {
    pool: Mcpool,
    agent: Agent,
    t: Targets,
    victim: u32,
    mcpool: u32,
}

async fn scene(mode: &str, as_user: Option<u32>) -> anyhow::Result<Scene> {
    // SAFETY: geteuid has no preconditions.
    if as_user.is_some() && unsafe { libc::geteuid() } != 0 {
        anyhow::bail!("running mcpool as another user needs root (setpriv), as CI runs");
    }
    let dir = match as_user {
        // Where a plain user can go, whatever the checkout's folder is.
        Some(_) => {
            let path = std::env::temp_dir().join(format!("mcpool-escape-{mode}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(&path)?;
            TempDir(path)
        }
        None => TempDir::new(&format!("escape-{mode}")),
    };
    let t = targets(dir.path())?;
    let probe = dir.path().join("escape_probe.py");
    std::fs::copy(repo_root().join("tests/py/escape_probe.py"), &probe)?;
    let config = json!({"mcpServers": {
        "probe": {
            "command": "/usr/bin/python3",
            "args": [&probe],
            "sandbox": {"mode": mode, "allowSockets": [&t.granted_socket]},
        },
        "victim": {
            "command": "/usr/bin/python3",
            "args": [&probe, ARGV_SECRET],
            "env": {"VICTIM_SECRET": ENV_SECRET},
        },
    }});
    let home = t.home.display().to_string();
    let runtime = t.runtime.display().to_string();
    let env = [("HOME", home.as_str()), ("XDG_RUNTIME_DIR", runtime.as_str())];
    let pool = match as_user {
        Some(uid) => Mcpool::start_as(dir, config, &env, uid).await?,
        None => Mcpool::start_in(dir, config, &env).await?,
    };
    let sandbox = pool.wait_status("probe", "connected", LIMIT).await?["sandbox"].clone();
    if mode != "off" {
        assert_eq!(sandbox["state"], "enforced", "{sandbox}");
    }
    pool.wait_status("victim", "connected", LIMIT).await?;
    let victim = pid_with_env(ENV_SECRET).context("the victim's pid")?;
    let mcpool = pool.child.id().context("mcpool's pid")?;
    let agent = pool.agent("/mcp").await?;
    Ok(Scene {
        pool,
        agent,
        t,
        victim,
        mcpool,
    })
}

/// Tries every way out of a probe confined under `mode`.
async fn attack(mode: &str, as_user: Option<u32>) -> anyhow::Result<()> {
    let Scene {
        pool,
        agent,
        t,
        victim,
        mcpool,
    } = scene(mode, as_user).await?;
    // 1. No process outside its own tree in /proc.
    let pids = said(&agent, "pids", json!({})).await?;
    let seen: Vec<u32> = pids
        .trim_start_matches("pids: ")
        .split(' ')
        .filter_map(|p| p.parse().ok())
        .collect();
    assert!(!seen.contains(&mcpool) && !seen.contains(&victim), "{pids}");
    assert!(seen.len() <= 3, "only its own tree: {pids}");
    for (pid, secret) in [(victim, ENV_SECRET), (victim, "victim-argv-secret"), (mcpool, "serve")] {
        for entry in ["environ", "cmdline", "maps", "fd"] {
            let read = said(&agent, "read", json!({"path": format!("/proc/{pid}/{entry}")})).await?;
            assert!(!read.contains(secret), "/proc/{pid}/{entry}: {read}");
        }
    }
    // 2. No signal to them: the victim lives on and answers.
    for pid in [victim, mcpool] {
        let sent = said(&agent, "signal", json!({"pid": pid, "sig": "9"})).await?;
        assert!(refused(&sent), "signal to {pid}: {sent}");
    }
    let victim_says = text(&agent.call("victim__getenv", json!({"name": "VICTIM_SECRET"})).await?);
    assert_eq!(victim_says, format!("set: {ENV_SECRET}"), "the victim is alive");
    // 3. No bus, no socket that no grant names, by path or abstract name;
    //    the granted one answers.
    let bus = session_bus()?;
    for address in [
        bus.clone(),
        t.path_socket.display().to_string(),
        format!("@{}", t.abstract_name),
    ] {
        let answer = said(&agent, "unix", json!({"address": address})).await?;
        assert!(refused(&answer), "{address}: {answer}");
    }
    let granted = said(&agent, "unix", json!({"address": t.granted_socket})).await?;
    assert_eq!(granted, "connected");
    // 4. UDP only where the network is on.
    let udp = std::net::UdpSocket::bind("127.0.0.1:0")?;
    let port = udp.local_addr()?.port();
    let sent = said(&agent, "udp", json!({"port": port})).await?;
    match mode {
        "strict" => assert!(refused(&sent), "UDP under strict: {sent}"),
        _ => assert_eq!(sent, "sent", "standard keeps the network"),
    }
    // 5. Nothing it writes runs later outside it: the user's PATH folders
    //    and package caches are not written; its own cache is, seeded
    //    with the user's.
    for folder in [
        ".bun/bin",
        ".local/bin",
        ".local/share/pnpm",
        ".local/share/uv/tools/evil/bin",
        ".npm/_cacache",
        ".cache/uv",
        ".cargo/bin",
    ] {
        let path = t.home.join(folder).join("evil");
        let wrote = said(&agent, "write", json!({"path": path, "text": "#!/bin/sh"})).await?;
        assert!(refused(&wrote) && !path.exists(), "{}: {wrote}", path.display());
    }
    let cache = said(&agent, "getenv", json!({"name": "npm_config_cache"})).await?;
    let cache = PathBuf::from(cache.strip_prefix("set: ").context("its own npm cache")?);
    assert!(
        cache.starts_with(pool.data_dir().join("servers/probe")),
        "{}",
        cache.display()
    );
    let seeded = said(&agent, "read", json!({"path": cache.join("seed.txt")})).await?;
    assert_eq!(seeded, "read: from the user's cache");
    let own = said(&agent, "write", json!({"path": cache.join("fetched.txt"), "text": "x"})).await?;
    assert_eq!(own, "written");
    assert!(
        !t.home.join(".npm/fetched.txt").exists(),
        "the user's cache is untouched"
    );
    // 6. No capability, also as root.
    for field in ["CapEff", "CapPrm", "CapBnd"] {
        assert_eq!(
            said(&agent, "status", json!({"field": field})).await?,
            "0000000000000000",
            "{field}"
        );
    }
    // 7. No credential that changes mcpool: not the control credential's
    //    folder, not mcpool's files, not the key; none of mcpool's
    //    variables.
    let control = t.runtime.join(format!("mcpool/control-{}", pool.port));
    assert!(control.exists(), "the instance wrote its control credential");
    for path in [
        control,
        t.credential.clone(),
        pool.config_path(),
        t.home.join(".ssh/id_ed25519"),
    ] {
        let read = said(&agent, "read", json!({"path": path})).await?;
        assert!(refused(&read), "{}: {read}", path.display());
    }
    let listed = said(&agent, "list", json!({"path": t.runtime})).await?;
    assert!(refused(&listed) || listed == "listed: ", "{listed}");
    for name in ["MCPOOL_TOKEN", "DBUS_SESSION_BUS_ADDRESS"] {
        assert_eq!(said(&agent, "getenv", json!({"name": name})).await?, "unset", "{name}");
    }
    // The pool goes on.
    assert_eq!(pool.server("victim").await?["status"], "connected");
    Ok(())
}

/// The attempts are real: unconfined, each of them gets out.
#[tokio::test]
async fn unconfined_the_same_attempts_get_out() -> anyhow::Result<()> {
    let Scene {
        agent,
        t,
        victim,
        mcpool,
        pool: _pool,
    } = scene("off", None).await?;
    let pids = said(&agent, "pids", json!({})).await?;
    assert!(pids.contains(&format!(" {mcpool}")), "{pids}");
    let environ = said(&agent, "read", json!({"path": format!("/proc/{victim}/environ")})).await?;
    assert!(environ.contains(ENV_SECRET), "{environ}");
    assert_eq!(
        said(&agent, "signal", json!({"pid": victim, "sig": "0"})).await?,
        "sent"
    );
    for address in [
        session_bus()?,
        t.path_socket.display().to_string(),
        format!("@{}", t.abstract_name),
    ] {
        assert_eq!(said(&agent, "unix", json!({"address": address})).await?, "connected");
    }
    let path = t.home.join(".bun/bin/evil");
    assert_eq!(
        said(&agent, "write", json!({"path": path, "text": "x"})).await?,
        "written"
    );
    assert!(said(&agent, "read", json!({"path": t.credential}))
        .await?
        .starts_with("read:"));
    assert_ne!(
        said(&agent, "status", json!({"field": "CapEff"})).await?,
        "0000000000000000"
    );
    Ok(())
}

#[tokio::test]
async fn standard_holds_as_root() -> anyhow::Result<()> {
    attack("standard", None).await
}

#[tokio::test]
async fn strict_holds_as_root() -> anyhow::Result<()> {
    attack("strict", None).await
}

#[tokio::test]
async fn standard_holds_as_a_plain_user() -> anyhow::Result<()> {
    attack("standard", Some(PLAIN_USER)).await
}

#[tokio::test]
async fn strict_holds_as_a_plain_user() -> anyhow::Result<()> {
    attack("strict", Some(PLAIN_USER)).await
}
