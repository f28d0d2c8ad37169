//! The checks of this machine's setup: the keyring, the config file, the
//! runtimes its servers need, and the port.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcpool_core::config::{Config, ConfigProblem, ServerSpec, TransportSpec};
use mcpool_core::registry::runtime;
use mcpool_core::secrets::{SecretStore, TOKEN_ENTRY};
use mcpool_core::service::Setup;
use mcpool_core::upstream::stdio;
use serde::Serialize;
use serde_json::Value;

use super::report::Check;

/// How long the keyring may take to answer one read.
const KEYRING_WAIT: Duration = Duration::from_secs(5);
/// How long `COMMAND --version` may take (a busy machine starts node slowly).
const VERSION_WAIT: Duration = Duration::from_secs(5);
/// How long the program on the port may take to answer.
const PORT_WAIT: Duration = Duration::from_secs(3);

/// Check 1: the keyring answers (on Windows: the Credential Manager,
/// through the same read and write probe), or the file fallback is in use.
pub async fn keyring(setup: &Setup) -> Check {
    let store = setup.keyring();
    let profile = setup.profile().to_string();
    let read = tokio::task::spawn_blocking(move || read_and_write(&store));
    let answer = match tokio::time::timeout(KEYRING_WAIT, read).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => Err(format!("the keyring read failed: {e}")),
        Err(_) => Err(format!(
            "the keyring did not answer within {} s",
            KEYRING_WAIT.as_secs()
        )),
    };
    let data = mcpool_core::os::paths::data_dir();
    let words = mcpool_core::os::keyring::this_platform();
    match answer {
        Ok(()) => Check::ok(
            "keyring",
            format!("the OS keyring{} answers (profile {profile})", words.store),
        ),
        Err(why) if why.starts_with(WRITE_REFUSED) => Check::warn("keyring", why, words.refused_hint),
        Err(why) => {
            let files: Vec<String> = [mcpool_core::token::token_file(&data), data.join("fingerprint.key")]
                .iter()
                .filter(|f| f.exists())
                .map(|f| f.display().to_string())
                .collect();
            let fallback = if files.is_empty() {
                "secrets set with `mcpool secret set` cannot be read".to_string()
            } else {
                format!("the file fallback is in use ({}, mode 0600)", files.join(", "))
            };
            Check::warn("keyring", format!("{why}; {fallback}"), words.unreachable_hint)
        }
    }
}

/// Reads the token's entry; when there is none yet, also writes and
/// deletes a probe entry, since mcpool's first start must write the token.
fn read_and_write(store: &dyn SecretStore) -> Result<(), String> {
    if store.get(TOKEN_ENTRY).map_err(|e| e.to_string())?.is_some() {
        return Ok(());
    }
    store
        .set(PROBE_ENTRY, "mcpool doctor")
        .and_then(|()| store.delete(PROBE_ENTRY).map(|_| ()))
        .map_err(|e| format!("{WRITE_REFUSED} ({e})"))
}

const WRITE_REFUSED: &str = "the OS keyring answers but refuses a write";

/// The entry the keyring check writes and deletes.
const PROBE_ENTRY: &str = "__mcpool_doctor_probe__";

/// Check 2: the config parses: a whole-file error, or one line per problem in the
/// config's own words (file, server, field).
pub fn config(path: &Path, loaded: &Result<Config, ConfigProblem>) -> Vec<Check> {
    match loaded {
        Err(problem) => vec![Check::fail(
            "config",
            problem.to_string(),
            "fix the file (a running mcpool keeps what it ran before)",
        )],
        Ok(config) if !path.exists() && config.servers.is_empty() && config.problems.is_empty() => {
            vec![Check::ok("config", format!("no config yet at {}", path.display()))]
        }
        Ok(config) => {
            let enabled = config.servers.values().filter(|s| !s.disabled).count();
            let mut out = vec![Check::ok(
                "config",
                format!(
                    "{}: {} server{} ({enabled} enabled)",
                    path.display(),
                    config.servers.len(),
                    if config.servers.len() == 1 { "" } else { "s" }
                ),
            )];
            for problem in &config.problems {
                out.push(if problem.warning {
                    Check::warn("config", problem.to_string(), "remove the repeated key")
                } else {
                    Check::fail(
                        "config",
                        problem.to_string(),
                        "fix that entry; the other servers start without it",
                    )
                });
            }
            out
        }
    }
}

/// A program the config's local servers run, as found on this machine.
#[derive(Debug, Clone, Serialize)]
pub struct Program {
    pub path: Option<PathBuf>,
    pub version: Option<String>,
    pub servers: Vec<String>,
}

/// Check 3: each program the enabled local servers run: found, with its
/// version, else which servers need it and how to install it. All are
/// asked for their version at once.
pub async fn runtimes(specs: &[ServerSpec]) -> (Vec<Check>, BTreeMap<String, Program>) {
    let path = std::env::var_os("PATH");
    let mut needed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for spec in specs.iter().filter(|s| !s.disabled) {
        if let TransportSpec::Stdio { command, cwd, .. } = &spec.transport {
            let command = match cwd {
                Some(dir) if command.contains('/') && !command.starts_with('/') => {
                    dir.join(command).display().to_string()
                }
                _ => command.clone(),
            };
            needed.entry(command).or_default().push(spec.name.clone());
        }
    }
    let asks = needed.into_iter().map(|(command, servers)| {
        let found = runtime::find(&command, path.as_deref());
        async move {
            let version = match &found {
                Some(file) => version(file).await,
                None => None,
            };
            (
                command,
                Program {
                    path: found,
                    version,
                    servers,
                },
            )
        }
    });
    let programs: BTreeMap<String, Program> = futures::future::join_all(asks).await.into_iter().collect();
    let checks = programs
        .iter()
        .map(|(command, program)| runtime_check(command, program))
        .collect();
    (checks, programs)
}

fn runtime_check(command: &str, program: &Program) -> Check {
    let name = Path::new(command)
        .file_name()
        .map_or(command.to_string(), |n| n.to_string_lossy().into_owned());
    let check = format!("runtime {name}");
    let servers = program.servers.join(", ");
    match &program.path {
        Some(file) => {
            let version = match &program.version {
                Some(v) => v.clone(),
                None => format!("no version from `--version` within {} s", VERSION_WAIT.as_secs()),
            };
            Check::ok(check, format!("{version} ({}), for {servers}", file.display()))
        }
        None => {
            let (what, hint) = match runtime::install_hint(&name) {
                Some((provider, install)) => (format!("{command} ({provider}) is not on PATH"), install.to_string()),
                None if command.contains('/') => (
                    format!("{command} is not an executable file"),
                    "fix `command` in the config".to_string(),
                ),
                None => (
                    format!("{command} is not on PATH"),
                    "install it, or give its absolute path as `command` in the config".to_string(),
                ),
            };
            Check::fail(check, format!("{what}; needed by {servers}"), hint)
        }
    }
}

/// The first line `FILE --version` prints, within [`VERSION_WAIT`]. It
/// runs as a local server does (core's `upstream::stdio`: a process tree
/// of its own, a group or a job), so a launcher like `npx` that hangs is
/// stopped tree and all and leaves nothing behind.
async fn version(file: &Path) -> Option<String> {
    use tokio::io::AsyncReadExt;
    let spec = TransportSpec::Stdio {
        command: file.to_string_lossy().into_owned(),
        args: vec!["--version".into()],
        env: BTreeMap::new(),
        cwd: None,
    };
    let stdio::Spawned {
        tree,
        mut stdout,
        stdin,
        stderr,
    } = stdio::spawn_unconfined(&spec, None).ok()?;
    drop(stdin);
    let run = async {
        let mut out = Vec::new();
        stdout.read_to_end(&mut out).await.ok()?;
        let status = tree.wait_exit(VERSION_WAIT).await?;
        Some((status, out, stderr.last_words(VERSION_WAIT).await))
    };
    // Past the wait, dropping `tree` kills the whole tree.
    let (status, out, tail) = tokio::time::timeout(VERSION_WAIT, run).await.ok()??;
    if !status.success() {
        return None;
    }
    let first = |lines: &mut dyn Iterator<Item = &str>| {
        lines
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| l.chars().take(80).collect::<String>())
    };
    first(&mut String::from_utf8_lossy(&out).lines()).or_else(|| first(&mut tail.iter().map(String::as_str)))
}

/// What answers on the port: nothing, this mcpool (its servers and config
/// path), or something else.
pub struct Port {
    pub check: Check,
    /// `/api/servers` of the running instance.
    pub servers: Option<Vec<Value>>,
    /// The config file the running instance reads.
    pub config_path: Option<PathBuf>,
}

/// Check 4: the port: free, held by mcpool (it answers `/api/servers` with the
/// token), or held by something else.
pub async fn port(listen: SocketAddr, token: Option<&str>) -> Port {
    let nothing = |check| Port {
        check,
        servers: None,
        config_path: None,
    };
    let client = match reqwest::Client::builder().timeout(PORT_WAIT).build() {
        Ok(c) => c,
        Err(e) => {
            return nothing(Check::fail(
                "port",
                format!("cannot make an HTTP client: {e}"),
                "report this bug",
            ))
        }
    };
    let get = |path: &str| {
        let request = client.get(format!("http://{listen}{path}"));
        match token {
            Some(t) => request.bearer_auth(t),
            None => request,
        }
        .send()
    };
    let elsewhere = "stop that program, or run mcpool on another port (`--listen 127.0.0.1:PORT` or MCPOOL_LISTEN)";
    let response = match get("/api/servers").await {
        Ok(r) => r,
        Err(e) if e.is_connect() => {
            return nothing(match std::net::TcpListener::bind(listen) {
                Ok(_) => Check::ok("port", format!("{listen} is free (no mcpool instance is running)")),
                Err(e) => Check::fail(
                    "port",
                    format!("{listen} cannot be listened on: {e}"),
                    "choose another address with `--listen` or MCPOOL_LISTEN",
                ),
            })
        }
        Err(_) => {
            return nothing(Check::fail(
                "port",
                format!("{listen} is held by a program that does not answer HTTP"),
                elsewhere,
            ))
        }
    };
    let status = response.status();
    if status == reqwest::StatusCode::UNAUTHORIZED {
        let why = match token {
            Some(_) => "refuses this token (another mcpool profile, or a different MCPOOL_TOKEN?)",
            None => "asks for a token and this setup has none (another mcpool profile?)",
        };
        return nothing(Check::fail(
            "port",
            format!("{listen} answers but {why}"),
            "use the instance's `--profile` and MCPOOL_TOKEN, or stop it",
        ));
    }
    let servers = match response.json::<Vec<Value>>().await {
        Ok(servers) if status.is_success() => servers,
        _ => {
            return nothing(Check::fail(
                "port",
                format!("{listen} is held by another program (HTTP {status} on /api/servers)"),
                elsewhere,
            ))
        }
    };
    let config_path = match get("/api/config").await {
        Ok(r) => r
            .json::<Value>()
            .await
            .ok()
            .and_then(|c| c["path"].as_str().map(PathBuf::from)),
        Err(_) => None,
    };
    Port {
        check: Check::ok(
            "port",
            format!(
                "{listen} is held by mcpool ({} server{})",
                servers.len(),
                if servers.len() == 1 { "" } else { "s" }
            ),
        ),
        servers: Some(servers),
        config_path,
    }
}

/// The activity log: readable, or what is wrong with it (mcpool itself
/// moves a damaged file aside and starts a new one).
pub fn activity(profile: &str) -> Check {
    let path = mcpool_core::activity::file_for(&mcpool_core::os::paths::data_dir(), profile);
    if !path.exists() {
        return Check::ok(
            "activity",
            format!("no activity log yet ({} is made when mcpool runs)", path.display()),
        );
    }
    let filter = mcpool_core::activity::Filter {
        limit: 1,
        ..Default::default()
    };
    match mcpool_core::activity::query_file(&path, &filter) {
        Ok(page) => Check::ok(
            "activity",
            format!("{} readable (newest entry #{})", path.display(), page.last_id),
        ),
        Err(sentence) => Check::fail(
            "activity",
            sentence,
            "mcpool moves a damaged file aside and starts a new one when it starts; or move it away yourself",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_runtime_names_its_servers_and_what_to_install() {
        let program = Program {
            path: None,
            version: None,
            servers: vec!["fetch".into(), "time".into()],
        };
        let c = runtime_check("uvx", &program);
        assert_eq!(c.status, super::super::report::Status::Fail);
        assert_eq!(c.check, "runtime uvx");
        assert_eq!(c.detail, "uvx (uv) is not on PATH; needed by fetch, time");
        assert!(c.hint.as_deref().unwrap_or_default().starts_with("install uv"), "{c:?}");
        let own = runtime_check("/opt/x/server", &program);
        assert_eq!(own.check, "runtime server");
        assert_eq!(
            own.detail,
            "/opt/x/server is not an executable file; needed by fetch, time"
        );
        let found = runtime_check(
            "node",
            &Program {
                path: Some("/usr/bin/node".into()),
                version: Some("v22.1.0".into()),
                servers: vec!["fs".into()],
            },
        );
        assert_eq!(found.line(), "ok   runtime node: v22.1.0 (/usr/bin/node), for fs");
    }

    #[test]
    fn config_problems_are_named_in_the_configs_own_words() {
        let path = Path::new("/nonexistent/config.json");
        let loaded =
            mcpool_core::config::parse(path, r#"{"mcpServers": {"a": {"command": 3}, "b": {"command": "x"}}}"#);
        let checks = config(path, &loaded);
        let problem = loaded.as_ref().map(|c| c.problems[0].to_string()).unwrap_or_default();
        assert!(
            problem.contains("server 'a'") && problem.contains("field 'command'"),
            "{problem}"
        );
        assert_eq!(checks.len(), 2, "{checks:?}");
        assert_eq!(checks[1].detail, problem);
        assert_eq!(checks[1].status, super::super::report::Status::Fail);
        let absent = config(path, &Ok(Config::default()));
        assert_eq!(
            absent[0].line(),
            "ok   config: no config yet at /nonexistent/config.json"
        );
    }
}
