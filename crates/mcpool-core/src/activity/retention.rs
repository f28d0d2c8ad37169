//! How long and how much of the activity log is kept: the config's
//! top-level `activity` object.

use std::time::Duration;

use serde_json::Value;

/// Default age limit: 30 days.
pub const DEFAULT_DAYS: u64 = 30;
/// Default size limit: 200 MB.
pub const DEFAULT_MEGABYTES: u64 = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// `enabled` (default true): false keeps nothing.
    pub enabled: bool,
    /// `retentionDays`: older entries are deleted.
    pub max_age: Duration,
    /// `maxSizeMB`: past it the oldest entries go until the file fits.
    pub max_bytes: u64,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            enabled: true,
            max_age: Duration::from_secs(DEFAULT_DAYS * 86_400),
            max_bytes: DEFAULT_MEGABYTES * 1_000_000,
        }
    }
}

impl Retention {
    /// Reads `activity` (absent: the defaults). The error is the field and
    /// what it should have been.
    pub fn parse(value: Option<&Value>) -> Result<Retention, (String, String)> {
        let mut r = Retention::default();
        let obj = match value {
            None | Some(Value::Null) => return Ok(r),
            Some(Value::Object(o)) => o,
            Some(_) => {
                return Err((
                    "activity".into(),
                    "expected an object such as {\"retentionDays\": 30, \"maxSizeMB\": 200}".into(),
                ))
            }
        };
        if let Some(v) = obj.get("enabled") {
            r.enabled = v
                .as_bool()
                .ok_or_else(|| ("activity.enabled".to_string(), "expected true or false".to_string()))?;
        }
        if let Some(v) = obj.get("retentionDays") {
            let days = v.as_u64().filter(|d| (1..=3650).contains(d)).ok_or_else(|| {
                (
                    "activity.retentionDays".to_string(),
                    "expected a number of days from 1 to 3650".to_string(),
                )
            })?;
            r.max_age = Duration::from_secs(days * 86_400);
        }
        if let Some(v) = obj.get("maxSizeMB") {
            let mb = v.as_u64().filter(|m| (1..=100_000).contains(m)).ok_or_else(|| {
                (
                    "activity.maxSizeMB".to_string(),
                    "expected a number of megabytes from 1 to 100000".to_string(),
                )
            })?;
            r.max_bytes = mb * 1_000_000;
        }
        Ok(r)
    }
}
