//! Systems without a sandbox backend yet (Windows: an AppContainer with job
//! limits, planned behind the same policy): nothing is enforced, and
//! `status` says so.

use std::io;

use super::Plan;

pub const UNAVAILABLE: &str = "not available on this system yet";

pub fn missing(_network: bool) -> Option<Vec<String>> {
    None
}

pub struct Prepared;

pub fn prepare(_plan: &Plan) -> Result<Prepared, String> {
    Err(UNAVAILABLE.to_string())
}

pub fn apply(_prepared: &Prepared) -> io::Result<()> {
    Ok(())
}
