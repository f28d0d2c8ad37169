//! mcpool's own lines about a server: a `tracing` layer that copies every
//! event carrying a `server` field into that server's log, redacted as the
//! stderr log is.

use std::fmt::Write as _;
use std::sync::RwLock;

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

use super::{ServerLogs, Source};
use crate::sync::{read, write};

/// The logs the process-wide layer writes to. The subscriber is set once
/// per process (`log::init`), before the service knows its data dir, so
/// the service installs its logs here when it starts.
static INSTALLED: RwLock<Option<ServerLogs>> = RwLock::new(None);

/// Points the process-wide layer at `logs` (`None`: nowhere).
pub fn install(logs: Option<ServerLogs>) {
    *write(&INSTALLED) = logs;
}

/// The layer `log::init` adds: writes to whatever [`install`] set.
pub fn layer() -> ServerLogLayer {
    ServerLogLayer { fixed: None }
}

pub struct ServerLogLayer {
    /// Set in tests; else the installed logs.
    fixed: Option<ServerLogs>,
}

impl ServerLogLayer {
    /// A layer that writes to `logs` alone.
    pub fn to(logs: ServerLogs) -> Self {
        ServerLogLayer { fixed: Some(logs) }
    }
}

impl<S: Subscriber> Layer<S> for ServerLogLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        // Only mcpool's own sites: a library's `server` field means
        // something else.
        if !event.metadata().target().starts_with("mcpool") {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let Some(server) = fields.server.clone() else {
            return;
        };
        let text = crate::secrets::redact_resolved(&fields.text());
        let level = event.metadata().level().as_str().to_lowercase();
        match &self.fixed {
            Some(logs) => logs.append(&server, Source::Mcpool, Some(&level), &text),
            None => {
                if let Some(logs) = read(&INSTALLED).as_ref() {
                    logs.append(&server, Source::Mcpool, Some(&level), &text);
                }
            }
        }
    }
}

/// An event's `server`, its message, and its other fields as ` key=value`.
#[derive(Default)]
struct Fields {
    server: Option<String>,
    text: String,
    rest: String,
}

impl Fields {
    fn add(&mut self, field: &Field, value: std::fmt::Arguments<'_>) {
        match field.name() {
            "server" => self.server = Some(value.to_string()),
            "message" => {
                let _ = write!(self.text, "{value}");
            }
            name => {
                let _ = write!(self.rest, " {name}={value}");
            }
        }
    }

    fn text(&self) -> String {
        format!("{}{}", self.text, self.rest).trim_start().to_string()
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.add(field, format_args!("{value}"));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.add(field, format_args!("{value:?}"));
    }
}
