use std::path::{Path, PathBuf};

use super::policy::{passes, plan, Inputs};
use super::*;

const HOME: &str = "/home/ada";
const OWN: &str = "/home/ada/.local/share/mcpool/servers/notes";

/// A file system that has `files` (and their folders) and resolves the
/// links in `links`.
fn plan_for(
    sandbox: &Sandbox,
    program: &str,
    args: &[&str],
    cwd: &str,
    links: &[(&str, &str)],
    files: &[&str],
) -> Plan {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let canonical = |p: &Path| {
        links
            .iter()
            .find(|(from, _)| Path::new(from) == p)
            .map(|(_, to)| PathBuf::from(to))
    };
    let is_file = |p: &Path| files.iter().any(|f| Path::new(f) == p);
    let list_dir = |p: &Path| -> Vec<String> {
        let names: &[&str] = match p.to_str() {
            Some("/run") => &["user", "dbus", "systemd", "lock"],
            Some("/etc") => &["passwd", "shadow", "gshadow", "sudoers.d", "ssh", "ssl"],
            Some("/etc/ssh") => &["ssh_config", "ssh_host_ed25519_key", "ssh_host_ed25519_key.pub"],
            _ => &[],
        };
        names.iter().map(|n| n.to_string()).collect()
    };
    plan(
        sandbox,
        &Inputs {
            program: Path::new(program),
            args: &args,
            cwd: Path::new(cwd),
            home: Some(Path::new(HOME)),
            own: Path::new(OWN),
            canonical: &canonical,
            is_file: &is_file,
            list_dir: &list_dir,
            cache_home: None,
            data_home: None,
        },
    )
}

fn standard() -> Sandbox {
    Sandbox {
        mode: Mode::Standard,
        ..Sandbox::default()
    }
}

fn has(paths: &[PathBuf], p: &str) -> bool {
    paths.iter().any(|x| x == Path::new(p))
}

#[test]
#[cfg_attr(
    windows,
    ignore = "the policy is written for Unix paths; Windows has no sandbox backend yet"
)]
fn standard_reads_the_system_and_writes_only_its_own_folder_and_devices() {
    let p = plan_for(&standard(), "/usr/bin/node", &[], "/srv/notes", &[], &[]);
    for system in ["/usr", "/lib", "/proc", "/sys", "/etc/passwd", "/etc/ssl", "/run/dbus"] {
        assert!(has(&p.read, system), "{system} is read");
    }
    assert!(has(&p.read, "/srv/notes"), "its working directory is read");
    assert!(has(&p.write, OWN) && has(&p.write, "/dev/null") && has(&p.write, "/dev/pts"));
    assert!(!has(&p.write, "/dev") && !has(&p.read, "/dev"), "no disk, no console");
    // The users' runtime folders (buses, agents, mcpool's control
    // credential) and root's secrets in /etc are not given.
    assert!(!has(&p.read, "/run") && !has(&p.read, "/run/user") && !has(&p.read, "/etc"));
    for secret in [
        "/etc/shadow",
        "/etc/gshadow",
        "/etc/sudoers.d",
        "/etc/ssh/ssh_host_ed25519_key",
    ] {
        assert!(!p.read.iter().any(|r| Path::new(secret).starts_with(r)), "{secret}");
    }
    assert!(
        has(&p.read, "/etc/ssh/ssh_config"),
        "the rest of a folder given in parts"
    );
    // The user's package caches are read, never written: the server has
    // its own, and the tools are pointed there.
    for cache in [
        "/home/ada/.npm",
        "/home/ada/.cache/uv",
        "/home/ada/.bun",
        "/home/ada/.local/share/uv",
    ] {
        assert!(
            !p.write.iter().any(|w| Path::new(cache).starts_with(w)),
            "{cache} is not written"
        );
    }
    assert!(has(&p.read, "/home/ada/.npm") && has(&p.read, "/home/ada/.cache/uv"));
    let npm = p
        .caches
        .iter()
        .find(|c| c.user == Path::new("/home/ada/.npm"))
        .expect("npm's");
    assert_eq!(npm.own, Path::new(OWN).join("cache/npm"));
    for (var, sub) in [
        ("npm_config_cache", "cache/npm"),
        ("UV_CACHE_DIR", "cache/uv"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_DATA_HOME", "data"),
        ("BUN_INSTALL_CACHE_DIR", "cache/bun"),
        ("CARGO_HOME", "cargo"),
    ] {
        assert!(
            p.env.contains(&(var.to_string(), format!("{OWN}/{sub}"))),
            "{var}: {:?}",
            p.env
        );
    }
    let secrets = [
        "/home/ada",
        "/home/ada/.ssh",
        "/home/ada/.aws",
        "/home/ada/.gnupg",
        "/home/ada/.config",
    ];
    for secret in secrets {
        assert!(!has(&p.read, secret) && !has(&p.write, secret), "{secret} is not given");
    }
    assert!(
        p.read.iter().chain(&p.write).all(|g| !Path::new(HOME).starts_with(g)),
        "no grant holds the home folder: {p:?}"
    );
    assert!(p.network, "standard keeps the network");
    assert!(!p.clear_env);
    assert!(p.env.contains(&("TMPDIR".to_string(), format!("{OWN}/tmp"))));
}

#[test]
#[cfg_attr(
    windows,
    ignore = "the policy is written for Unix paths; Windows has no sandbox backend yet"
)]
fn the_program_is_read_with_its_installation_as_written_and_as_linked() {
    // A virtualenv's python is a link into the interpreter's own tree.
    let p = plan_for(
        &standard(),
        "/srv/app/.venv/bin/python",
        &[],
        "/srv/app",
        &[(
            "/srv/app/.venv/bin/python",
            "/home/ada/.pyenv/versions/3.11.7/bin/python3.11",
        )],
        &[],
    );
    assert!(has(&p.read, "/srv/app/.venv"));
    assert!(has(&p.read, "/home/ada/.pyenv/versions/3.11.7"));
    // A program right in the home folder gives itself, not the home folder.
    let p = plan_for(&standard(), "/home/ada/server", &[], "/", &[], &[]);
    assert!(has(&p.read, "/home/ada/server") && !has(&p.read, HOME));
    assert!(!has(&p.read, "/"), "a working directory as wide as / is not given");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "the policy is written for Unix paths; Windows has no sandbox backend yet"
)]
fn a_script_argument_gives_its_packages_and_a_wide_working_directory_is_not_given() {
    let script = "/srv/tools/node_modules/@scope/server/dist/index.js";
    let p = plan_for(
        &standard(),
        "/usr/bin/node",
        &[script, "--port", "/etc/passwd-not-a-file"],
        HOME,
        &[],
        &[script],
    );
    assert!(has(&p.read, "/srv/tools/node_modules"), "{p:?}");
    assert!(!has(&p.read, HOME), "the home folder as working directory is not given");
    let p = plan_for(
        &standard(),
        "/usr/bin/python3",
        &["./serve.py"],
        "/srv/py",
        &[],
        &["/srv/py/./serve.py"],
    );
    assert!(has(&p.read, "/srv/py/."), "a relative script's folder: {p:?}");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "the policy is written for Unix paths; Windows has no sandbox backend yet"
)]
fn grants_are_added_and_strict_cuts_the_network_and_the_environment() {
    let sandbox = Sandbox {
        mode: Mode::Strict,
        allow_read: vec![PathBuf::from("/data/in")],
        allow_write: vec![PathBuf::from("/data/out")],
        ..Sandbox::default()
    };
    let p = plan_for(&sandbox, "/usr/bin/node", &[], "/srv", &[], &[]);
    assert!(has(&p.read, "/data/in") && has(&p.write, "/data/out"));
    assert!(!p.network && p.clear_env);
    let with_network = Sandbox {
        network: Some(true),
        ..sandbox.clone()
    };
    assert!(plan_for(&with_network, "/usr/bin/node", &[], "/srv", &[], &[]).network);
    let no_network = Sandbox {
        network: Some(false),
        ..standard()
    };
    assert!(!plan_for(&no_network, "/usr/bin/node", &[], "/srv", &[], &[]).network);
    for kept in [
        "PATH",
        "LANG",
        "LC_ALL",
        "HOME",
        "NODE_OPTIONS",
        "PYTHONPATH",
        "UV_CACHE_DIR",
    ] {
        assert!(passes(Mode::Strict, kept), "{kept} reaches a strict server");
    }
    for dropped in ["AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "SSH_AUTH_SOCK"] {
        assert!(!passes(Mode::Strict, dropped), "{dropped} does not");
        assert!(passes(Mode::Standard, dropped), "{dropped} does under standard");
    }
    for never in [
        "MCPOOL_TOKEN",
        "MCPOOL_LISTEN",
        "DBUS_SESSION_BUS_ADDRESS",
        "DBUS_SYSTEM_BUS_ADDRESS",
    ] {
        assert!(
            !passes(Mode::Standard, never) && !passes(Mode::Strict, never),
            "{never}"
        );
    }
}

#[test]
fn status_names_the_mode_its_grants_and_what_the_kernel_gives() {
    let off = status(&Sandbox::default());
    assert_eq!((off.mode, off.state), (Mode::Off, State::Off));
    let sandbox = Sandbox {
        mode: Mode::Strict,
        allow_read: vec![PathBuf::from("/data/in")],
        allow_write: vec![PathBuf::from("/data/out")],
        ..Sandbox::default()
    };
    let s = status(&sandbox);
    assert_eq!(
        serde_json::to_value(&s.grants).expect("json"),
        serde_json::json!([{"path": "/data/out", "access": "write"}, {"path": "/data/in", "access": "read"}])
    );
    assert_ne!(s.state, State::Off);
    match s.state {
        State::Enforced => assert!(s.missing.is_empty()),
        State::PartlyEnforced | State::NotAvailable => assert!(!s.missing.is_empty(), "{s:?}"),
        State::Off => unreachable!(),
    }
    let text = serde_json::to_value(&s).expect("json");
    assert_eq!(text["mode"], "strict");
    assert!(["enforced", "partly enforced", "not available"].contains(&text["state"].as_str().unwrap_or("")));
}

#[test]
fn a_refusal_or_an_exit_at_start_is_noted_only_when_the_sandbox_is_on() {
    let standard = Sandbox {
        mode: Mode::Standard,
        ..Sandbox::default()
    };
    let refused = ["cat: /home/ada/.aws/credentials: Permission denied".to_string()];
    let named = status(&standard).noting(&refused, Some("the process exited with status 1"));
    assert_eq!(
        named.denied.map(|d| (d.access, d.path)),
        Some(("read", Some("/home/ada/.aws/credentials".to_string()))),
        "what its words name comes before the exit"
    );
    let quiet = status(&standard)
        .noting(&["starting".to_string()], Some("the process exited with status 1"))
        .denied
        .expect("an exit at start is noted");
    assert_eq!((quiet.access, quiet.path), ("exit", None));
    assert!(
        quiet
            .sentence
            .starts_with("It stopped right after it started (the process exited with status 1)"),
        "{}",
        quiet.sentence
    );
    assert_eq!(status(&standard).noting(&["starting".to_string()], None).denied, None);
    let off = status(&Sandbox::default()).noting(&refused, Some("the process exited with status 1"));
    assert_eq!(off.denied, None, "an unsandboxed server's refusals are its own");
}

/// Runs `script` with bash under `plan`, returns (exit ok, stderr).
#[cfg(target_os = "linux")]
async fn run_confined(plan: &Plan, sandbox: &Sandbox, script: &str) -> (bool, String) {
    use tokio::io::AsyncReadExt;
    let confinement = Confinement::prepare(sandbox, plan).expect("prepared");
    assert!(confinement.is_active(), "this machine's kernel has Landlock");
    let confine = crate::os::process::Confine {
        base_env: None,
        sandbox: Some(std::sync::Arc::new(confinement)),
    };
    let args = vec!["-c".to_string(), script.to_string()];
    let mut started =
        crate::os::process::spawn("bash", &args, &Default::default(), None, confine).expect("bash starts");
    let mut stderr = String::new();
    started.stderr.read_to_string(&mut stderr).await.expect("stderr");
    let mut exit = started.tree.exit_watch();
    let status = exit.wait_for(|s| s.is_some()).await.expect("exits").expect("a status");
    (status.success(), stderr)
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_kernel_keeps_a_child_and_its_children_to_the_plan() {
    let dir = std::env::temp_dir().join(format!("mcpool-sandbox-{}", std::process::id()));
    let (granted, secret) = (dir.join("granted"), dir.join("home/.ssh"));
    std::fs::create_dir_all(&granted).expect("granted");
    std::fs::create_dir_all(&secret).expect("secret");
    std::fs::write(granted.join("note.txt"), "hello").expect("note");
    std::fs::write(secret.join("id_ed25519"), "PRIVATE KEY").expect("key");
    let sandbox = Sandbox {
        mode: Mode::Strict,
        allow_write: vec![granted.clone()],
        ..Sandbox::default()
    };
    assert_eq!(
        status(&sandbox).state,
        State::Enforced,
        "this test needs Landlock ABI 4 (Linux 6.7)"
    );
    let plan = Plan {
        read: super::policy::SYSTEM_READ.iter().map(PathBuf::from).collect(),
        write: vec![PathBuf::from("/dev/null"), granted.clone()],
        network: false,
        env: Vec::new(),
        clear_env: true,
        sockets: Vec::new(),
        caches: Vec::new(),
        tmp: granted.clone(),
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
    let port = listener.local_addr().expect("port").port();
    let script = format!(
        "cat {note} && echo written > {granted}/new.txt && ! cat {key} && ! bash -c 'cat {key}' && ! (echo > /dev/tcp/127.0.0.1/{port})",
        note = granted.join("note.txt").display(),
        granted = granted.display(),
        key = secret.join("id_ed25519").display(),
    );
    let (ok, stderr) = run_confined(&plan, &sandbox, &script).await;
    assert!(
        ok,
        "read and write the grant, refused the key (also to a grandchild) and TCP: {stderr}"
    );
    assert!(stderr.contains("Permission denied"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(granted.join("new.txt")).expect("written"),
        "written\n"
    );
    // mcpool itself is not restricted.
    assert_eq!(
        std::fs::read_to_string(secret.join("id_ed25519")).expect("mcpool reads"),
        "PRIVATE KEY"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "the policy is written for Unix paths; Windows has no sandbox backend yet"
)]
fn an_allowance_is_written_into_the_entrys_sandbox_once() {
    use serde_json::json;
    let read = || Allowance::Read(PathBuf::from("/data/in"));
    assert_eq!(
        read().into_sandbox(None, Mode::Standard),
        json!({"mode": "standard", "allowRead": ["/data/in"]}),
        "an entry on the config's default keeps its mode"
    );
    assert_eq!(
        read().into_sandbox(Some(json!("strict")), Mode::Strict),
        json!({"mode": "strict", "allowRead": ["/data/in"]})
    );
    let had = json!({"mode": "strict", "allowRead": ["/data/in"], "allowWrite": ["/out"]});
    assert_eq!(read().into_sandbox(Some(had.clone()), Mode::Strict), had, "not twice");
    assert_eq!(
        Allowance::Network.into_sandbox(Some(json!("strict")), Mode::Strict),
        json!({"mode": "strict", "network": true})
    );
    assert_eq!(
        Allowance::parse("socket", Some("/var/run/docker.sock"))
            .map(|a| a.into_sandbox(Some(json!("standard")), Mode::Standard)),
        Ok(json!({"mode": "standard", "allowSockets": ["/var/run/docker.sock"]}))
    );
    assert_eq!(
        Allowance::parse("write", Some("/out/x")),
        Ok(Allowance::Write(PathBuf::from("/out/x")))
    );
    assert!(Allowance::parse("read", Some("relative")).is_err());
    assert!(Allowance::parse("exec", None).is_err());
}

/// The walls around a confined process, each tried from inside: no other
/// process in `/proc` nor reachable by a signal, no Unix socket by path or
/// abstract name that no grant names, no capability, no UDP under
/// `strict`; a granted socket still answers.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_walls_hide_other_processes_sockets_and_privileges() {
    use std::os::linux::net::SocketAddrExt;
    let support = super::linux::support_for_tests();
    if !support.namespaces {
        panic!("this test needs namespaces: {support:?}");
    }
    let dir = std::env::temp_dir().join(format!("mcpool-walls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("own/tmp")).expect("own");
    let (refused, granted) = (dir.join("refused.sock"), dir.join("granted.sock"));
    let _listeners = [
        std::os::unix::net::UnixListener::bind(&refused).expect("refused socket"),
        std::os::unix::net::UnixListener::bind(&granted).expect("granted socket"),
    ];
    let abstract_name = format!("mcpool-walls-{}", std::process::id());
    let address = std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes()).expect("name");
    let _abstract = std::os::unix::net::UnixListener::bind_addr(&address).expect("abstract socket");
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp");
    let sandbox = Sandbox {
        mode: Mode::Strict,
        ..Sandbox::default()
    };
    let plan = Plan {
        sockets: vec![granted.clone()],
        tmp: dir.join("own/tmp"),
        ..probe_plan(&dir, false)
    };
    let script = format!(
        r#"
import os, socket, signal
def attempt(what, f):
    try:
        f(); print(what, "done")
    except OSError as e:
        print(what, "refused", e.errno)
pids = [p for p in os.listdir("/proc") if p.isdigit()]
print("pids", len(pids), "mine", os.getpid())
attempt("signal", lambda: os.kill({outside}, 0))
def unix(address):
    s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect(address); s.close()
attempt("path", lambda: unix("{refused}"))
attempt("granted", lambda: unix("{granted}"))
attempt("abstract", lambda: unix("\0{abstract_name}"))
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"x", ("127.0.0.1", {udp_port}))
attempt("udp", udp)
caps = [l.split()[1] for l in open("/proc/self/status") if l.startswith(("CapEff", "CapPrm", "CapBnd"))]
print("caps", *caps)
"#,
        outside = std::process::id(),
        refused = refused.display(),
        granted = granted.display(),
        udp_port = udp.local_addr().expect("port").port(),
    );
    std::fs::write(dir.join("probe.py"), script).expect("script");
    let (ok, said) = run_confined_stdout(&plan, &sandbox, "python3", &[dir.join("probe.py")]).await;
    assert!(ok, "{said}");
    let line = |what: &str| said.lines().find(|l| l.starts_with(what)).unwrap_or("").to_string();
    assert_eq!(
        line("pids"),
        "pids 2 mine 2",
        "only the sandbox's first process and the probe itself: {said}"
    );
    assert!(line("signal").contains("refused"), "{said}");
    assert!(line("path ").contains("refused"), "{said}");
    assert_eq!(line("granted"), "granted done", "{said}");
    assert!(line("abstract").contains("refused"), "{said}");
    assert!(line("udp").contains("refused"), "{said}");
    assert_eq!(
        line("caps"),
        "caps 0000000000000000 0000000000000000 0000000000000000",
        "{said}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Where the kernel gives no namespaces, the server still starts, confined
/// by Landlock alone: its files and capabilities hold, and what does not
/// (its view of other processes) is what `missing` names.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn without_namespaces_landlock_alone_still_confines_it() {
    let dir = std::env::temp_dir().join(format!("mcpool-landlock-only-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("own")).expect("own");
    std::fs::write(dir.join("secret.txt"), "SECRET").expect("secret");
    let script = format!(
        r#"
import os
try:
    open("{secret}").read(); print("secret read")
except OSError as e:
    print("secret refused", e.errno)
print("pids", len([p for p in os.listdir("/proc") if p.isdigit()]) > 3)
print("caps", [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0])
"#,
        secret = dir.join("secret.txt").display(),
    );
    std::fs::write(dir.join("probe.py"), script).expect("script");
    let plan = probe_plan(&dir, true);
    let confinement = Confinement::prepare_without_namespaces(&plan).expect("prepared");
    let (ok, said) = run_with(confinement, "python3", &[dir.join("probe.py")]).await;
    assert!(ok, "it starts: {said}");
    assert!(said.contains("secret refused 13"), "{said}");
    assert!(
        said.contains("pids True"),
        "its own PID namespace is what it lacks here: {said}"
    );
    assert!(said.contains("caps 0000000000000000"), "{said}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A plan for `dir/probe.py`: the system, `/etc`, `/run` and the script
/// read; `/dev/null` and `dir/own` (also its temp folder) written.
#[cfg(target_os = "linux")]
fn probe_plan(dir: &Path, network: bool) -> Plan {
    let mut read: Vec<PathBuf> = super::policy::SYSTEM_READ.iter().map(PathBuf::from).collect();
    read.extend([PathBuf::from("/etc"), PathBuf::from("/run"), dir.join("probe.py")]);
    Plan {
        read,
        write: vec![PathBuf::from("/dev/null"), dir.join("own")],
        network,
        env: Vec::new(),
        clear_env: !network,
        sockets: Vec::new(),
        caches: Vec::new(),
        tmp: dir.join("own"),
    }
}

/// Runs `program` with `args` under `plan`; (exit ok, stdout and stderr).
#[cfg(target_os = "linux")]
async fn run_confined_stdout(plan: &Plan, sandbox: &Sandbox, program: &str, args: &[PathBuf]) -> (bool, String) {
    let confinement = Confinement::prepare(sandbox, plan).expect("prepared");
    run_with(confinement, program, args).await
}

/// Runs `program` with `args` in `confinement`; (exit ok, stdout and stderr).
#[cfg(target_os = "linux")]
async fn run_with(confinement: Confinement, program: &str, args: &[PathBuf]) -> (bool, String) {
    use tokio::io::AsyncReadExt;
    let confine = crate::os::process::Confine {
        base_env: None,
        sandbox: Some(std::sync::Arc::new(confinement)),
    };
    let args: Vec<String> = args.iter().map(|a| a.display().to_string()).collect();
    let mut started = crate::os::process::spawn(program, &args, &Default::default(), None, confine).expect("it starts");
    let (mut out, mut err) = (String::new(), String::new());
    started.stdout.read_to_string(&mut out).await.expect("stdout");
    started.stderr.read_to_string(&mut err).await.expect("stderr");
    let mut exit = started.tree.exit_watch();
    let status = exit.wait_for(|s| s.is_some()).await.expect("exits").expect("a status");
    (status.success(), format!("{out}{err}"))
}
