//! Whether this machine's kernel gives each local server the sandbox its
//! entry asks for (README: Sandboxing local servers).

use mcpool_core::config::ServerSpec;
use mcpool_core::sandbox::{self, Mode, State};

use super::report::Check;

/// One line per sandboxed local server; none for servers without one.
pub fn checks(specs: &[ServerSpec]) -> Vec<Check> {
    specs
        .iter()
        .filter(|s| s.transport.kind() == "stdio" && s.sandbox.mode != Mode::Off)
        .map(check)
        .collect()
}

fn check(spec: &ServerSpec) -> Check {
    let status = sandbox::status(&spec.sandbox);
    let name = format!("sandbox {}", spec.name);
    let mode = status.mode.as_str();
    let missing = status.missing.join("; ");
    match status.state {
        State::Enforced | State::Off => Check::ok(
            name,
            format!("{mode}, enforced by the kernel (Landlock and namespaces)"),
        ),
        State::PartlyEnforced => Check::warn(
            name,
            format!("{mode}, partly enforced: this kernel cannot restrict {missing}"),
            "a newer kernel enforces all of it",
        ),
        State::NotAvailable if spec.sandbox.mode == Mode::Strict && !spec.sandbox.allow_unsandboxed => Check::fail(
            name,
            format!("{mode} cannot be enforced here ({missing}), so the server is not started"),
            "run mcpool on Linux 5.13 or later with Landlock enabled, or set \"allowUnsandboxed\": true in its sandbox",
        ),
        State::NotAvailable => Check::warn(
            name,
            format!("{mode} cannot be enforced here ({missing}); the server runs unconfined"),
            "run mcpool on Linux 5.13 or later with Landlock enabled",
        ),
    }
}
