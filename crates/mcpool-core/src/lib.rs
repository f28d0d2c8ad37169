//! mcpool's headless core: the config, the upstream connections, the pool
//! that keeps them alive, and the local endpoint agents connect to.

pub mod activity;
pub mod agent_config;
pub mod backoff;
pub mod cache;
pub mod calls;
pub mod config;
pub mod control;
pub mod control_credential;
pub mod editing;
pub mod endpoint;
pub mod error_text;
pub mod errors;
pub mod hub;
pub mod import;
pub mod jsonc;
pub mod kept;
pub mod lifecycle;
pub mod log;
pub mod loopback;
pub mod names;
pub mod oauth;
pub mod os;
pub mod pool;
pub mod registry;
pub mod sandbox;
pub mod scan;
#[cfg(test)]
pub(crate) mod scratch;
pub mod script;
pub mod search;
pub mod secrets;
pub mod server_logs;
pub mod service;
pub mod stderr_tail;
pub mod supervisor;
pub mod sync;
pub mod telemetry;
pub mod token;
pub mod tool_check;
pub mod toolctl;
pub mod upstream;
pub mod usage;
pub mod wake;
