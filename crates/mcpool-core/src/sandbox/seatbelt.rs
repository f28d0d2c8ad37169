//! A sandbox [`Plan`] as a Seatbelt profile (SBPL, the language of macOS's
//! `sandbox_init`): pure text, compiled on every platform so that its rules
//! are unit-tested on Linux; `macos.rs` applies it.
//!
//! The profile denies everything (`(deny default)`) and allows what the
//! Linux backend allows: the plan's `read` paths read and run, its `write`
//! paths read, written and run, TCP and UDP only where the plan has the
//! network, Unix sockets by path only those it names. macOS itself needs a
//! little more than Linux to run a program at all, given here and nothing
//! else: its system folders ([`SYSTEM_READ`]), a few system services over
//! Mach ([`SERVICES`], [`NETWORK_SERVICES`]; never the keychain's
//! `com.apple.SecurityServer`), the metadata of any path (as Landlock,
//! which cannot hide it either), and signals only within its own sandbox.
//!
//! Then the `hidden` folders (mcpool's own files, the keychains) are denied
//! even where a broader path of the plan covers them (a grant of the home
//! folder); SBPL lets the last matching rule win, so a path the plan names
//! inside a hidden folder (the server's own folder under mcpool's data
//! folder) is given back after the denial.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::Plan;

/// What macOS needs read (and run) for any program to start, beside what
/// the plan gives every platform (`/usr`, `/bin`, `/etc` but its secrets,
/// …): its system, its developer tools, the dynamic linker's caches, time
/// zones. (`/etc` is a link into `/private/etc`; `macos.rs` adds the real
/// path of each path it is given, which is what Seatbelt matches.)
pub const SYSTEM_READ: &[&str] = &[
    "/System",
    "/usr",
    "/bin",
    "/sbin",
    "/Library/Apple",
    "/Library/Frameworks",
    "/Library/Developer/CommandLineTools",
    "/private/var/db/timezone",
    "/private/var/db/dyld",
];

/// The system services every program may look up: user and group names,
/// logging, notifications and its own temp folder's name.
pub const SERVICES: &[&str] = &[
    "com.apple.system.opendirectoryd.libinfo",
    "com.apple.system.opendirectoryd.membership",
    "com.apple.system.logger",
    "com.apple.logd",
    "com.apple.system.notification_center",
    "com.apple.bsd.dirhelper",
];

/// The services of name resolution and of TLS certificate checks, given
/// with the network.
pub const NETWORK_SERVICES: &[&str] = &[
    "com.apple.SystemConfiguration.DNSConfiguration",
    "com.apple.SystemConfiguration.configd",
    "com.apple.networkd",
    "com.apple.trustd.agent",
    "com.apple.ocspd",
];

/// The resolver's socket, reached by path (given with the network).
pub const RESOLVER_SOCKET: &str = "/private/var/run/mDNSResponder";

/// The profile for `plan`, with `hidden` denied over it. An error names a
/// path that a profile cannot name (not UTF-8, which no macOS file name
/// is not).
pub fn profile(plan: &Plan, hidden: &[PathBuf]) -> Result<String, String> {
    let mut out = String::from("(version 1)\n(deny default)\n");
    out.push_str(
        "(allow process-fork)\n\
         (allow signal (target same-sandbox))\n\
         (allow process-info* (target same-sandbox))\n\
         (allow sysctl-read)\n\
         (allow ipc-posix-shm ipc-posix-sem)\n\
         (allow file-read-metadata)\n\
         (allow system-socket (socket-domain AF_UNIX))\n",
    );
    rule(
        &mut out,
        "allow mach-lookup",
        "global-name",
        SERVICES.iter().map(|s| s.to_string()),
    );
    let system = SYSTEM_READ.iter().map(PathBuf::from);
    let read: Vec<PathBuf> = system.chain(plan.read.iter().cloned()).collect();
    rule(&mut out, "allow file-read* process-exec", "subpath", names(&read)?);
    rule(
        &mut out,
        "allow file-read* file-write* process-exec",
        "subpath",
        names(&plan.write)?,
    );
    rule(
        &mut out,
        "deny file-read* file-write* process-exec",
        "subpath",
        names(hidden)?,
    );
    let inside = |p: &&PathBuf| hidden.iter().any(|h| p.starts_with(h) && *p != h);
    let back_read: Vec<PathBuf> = plan.read.iter().filter(inside).cloned().collect();
    let back_write: Vec<PathBuf> = plan.write.iter().filter(inside).cloned().collect();
    rule(&mut out, "allow file-read* process-exec", "subpath", names(&back_read)?);
    rule(
        &mut out,
        "allow file-read* file-write* process-exec",
        "subpath",
        names(&back_write)?,
    );
    rule(&mut out, "allow network-outbound", "literal", names(&plan.sockets)?);
    if plan.network {
        out.push_str(
            "(allow system-socket)\n\
             (allow network-outbound (remote ip))\n\
             (allow network-inbound (local ip))\n\
             (allow network-bind (local ip))\n",
        );
        let _ = writeln!(out, "(allow network-outbound (literal {}))", quote(RESOLVER_SOCKET));
        rule(
            &mut out,
            "allow mach-lookup",
            "global-name",
            NETWORK_SERVICES.iter().map(|s| s.to_string()),
        );
    }
    Ok(out)
}

/// `(ACTION (FILTER "a") (FILTER "b"))`, one filter a line; nothing for
/// no items (an action without filters would apply to everything).
fn rule(out: &mut String, action: &str, filter: &str, items: impl IntoIterator<Item = String>) {
    let items: Vec<String> = items.into_iter().collect();
    if items.is_empty() {
        return;
    }
    let _ = write!(out, "({action}");
    for item in &items {
        let _ = write!(out, "\n    ({filter} {})", quote(item));
    }
    out.push_str(")\n");
}

/// The paths as text, or an error naming the first that is not UTF-8.
fn names(paths: &[PathBuf]) -> Result<Vec<String>, String> {
    paths.iter().map(|p| name(p)).collect()
}

fn name(path: &Path) -> Result<String, String> {
    path.to_str().map(str::to_string).ok_or_else(|| {
        format!(
            "the path {} is not UTF-8, which a Seatbelt profile cannot name",
            path.display()
        )
    })
}

/// An SBPL string literal: in double quotes, with `\` and `"` escaped.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if matches!(c, '\\' | '"') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(network: bool) -> Plan {
        Plan {
            read: vec![PathBuf::from("/opt/tool")],
            write: vec![
                PathBuf::from("/dev/null"),
                PathBuf::from("/Users/u/Library/Application Support/mcpool/servers/fs"),
            ],
            network,
            env: Vec::new(),
            clear_env: true,
            sockets: vec![PathBuf::from("/tmp/agent.sock")],
            caches: Vec::new(),
            tmp: PathBuf::from("/Users/u/Library/Application Support/mcpool/servers/fs/tmp"),
        }
    }

    fn hidden() -> Vec<PathBuf> {
        vec![PathBuf::from("/Users/u/Library/Application Support/mcpool")]
    }

    #[test]
    fn a_small_plan_without_network_is_this_profile() {
        let text = profile(&plan(false), &hidden()).unwrap();
        let system: String = SYSTEM_READ.iter().map(|p| format!("\n    (subpath \"{p}\")")).collect();
        let services: String = SERVICES
            .iter()
            .map(|s| format!("\n    (global-name \"{s}\")"))
            .collect();
        let want = format!(
            r#"(version 1)
(deny default)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow sysctl-read)
(allow ipc-posix-shm ipc-posix-sem)
(allow file-read-metadata)
(allow system-socket (socket-domain AF_UNIX))
(allow mach-lookup{services})
(allow file-read* process-exec{system}
    (subpath "/opt/tool"))
(allow file-read* file-write* process-exec
    (subpath "/dev/null")
    (subpath "/Users/u/Library/Application Support/mcpool/servers/fs"))
(deny file-read* file-write* process-exec
    (subpath "/Users/u/Library/Application Support/mcpool"))
(allow file-read* file-write* process-exec
    (subpath "/Users/u/Library/Application Support/mcpool/servers/fs"))
(allow network-outbound
    (literal "/tmp/agent.sock"))
"#
        );
        assert_eq!(text, want);
    }

    #[test]
    fn the_network_adds_ip_the_resolver_and_its_services() {
        let off = profile(&plan(false), &hidden()).unwrap();
        let on = profile(&plan(true), &hidden()).unwrap();
        assert!(on.starts_with(&off), "the network only adds rules");
        let added = &on[off.len()..];
        assert!(
            added.starts_with("(allow system-socket)\n(allow network-outbound (remote ip))\n"),
            "{added}"
        );
        assert!(added.contains("(allow network-outbound (literal \"/private/var/run/mDNSResponder\"))"));
        assert!(added.contains("(global-name \"com.apple.trustd.agent\")"), "{added}");
        assert!(
            !on.contains("com.apple.SecurityServer"),
            "the keychain's service is never looked up"
        );
        assert!(!off.contains("(remote ip)") && !off.contains("mDNSResponder"), "{off}");
    }

    #[test]
    fn a_hidden_folder_is_denied_after_the_grants_that_cover_it() {
        let mut wide = plan(false);
        wide.read.push(PathBuf::from("/Users/u"));
        let keychains = PathBuf::from("/Users/u/Library/Keychains");
        let text = profile(&wide, &[keychains]).unwrap();
        let grant = text.find("(subpath \"/Users/u\")").unwrap();
        let denial =
            text.find("(deny file-read* file-write* process-exec\n    (subpath \"/Users/u/Library/Keychains\"))");
        assert!(denial.is_some_and(|d| d > grant), "{text}");
        assert_eq!(
            text.matches("(deny ").count(),
            2,
            "deny default and the keychains: {text}"
        );
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(quote(r#"/a "b" \c"#), r#""/a \"b\" \\c""#);
        let mut odd = plan(false);
        odd.read = vec![PathBuf::from(r#"/opt/we"ird\"#)];
        let text = profile(&odd, &[]).unwrap();
        assert!(text.contains(r#"(subpath "/opt/we\"ird\\")"#), "{text}");
        assert!(
            !text.contains("(deny file-read*"),
            "no hidden folder, no denial: {text}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_path_that_is_not_utf8_is_an_error_that_names_it() {
        use std::os::unix::ffi::OsStrExt;
        let mut bad = plan(false);
        bad.write.push(PathBuf::from(std::ffi::OsStr::from_bytes(b"/tmp/\xff")));
        let e = profile(&bad, &[]).unwrap_err();
        assert!(
            e.starts_with("the path /tmp/") && e.ends_with("is not UTF-8, which a Seatbelt profile cannot name"),
            "{e}"
        );
    }
}
