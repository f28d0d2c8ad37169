//! One check's result and how it is printed: a line for people, an object
//! for scripts.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Warn,
    Fail,
}

impl Status {
    /// The word a line starts with, padded to 4 characters.
    fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok  ",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
        }
    }
}

/// One check: what was checked, what was found, and what to do about it
/// (`None` for an ok).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    pub check: String,
    pub status: Status,
    pub detail: String,
    pub hint: Option<String>,
}

impl Check {
    pub fn ok(check: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            check: check.into(),
            status: Status::Ok,
            detail: detail.into(),
            hint: None,
        }
    }

    pub fn warn(check: impl Into<String>, detail: impl Into<String>, hint: impl Into<String>) -> Check {
        Check {
            check: check.into(),
            status: Status::Warn,
            detail: detail.into(),
            hint: Some(hint.into()),
        }
    }

    pub fn fail(check: impl Into<String>, detail: impl Into<String>, hint: impl Into<String>) -> Check {
        Check {
            check: check.into(),
            status: Status::Fail,
            detail: detail.into(),
            hint: Some(hint.into()),
        }
    }

    /// `ok   CHECK: DETAIL`, `warn CHECK: DETAIL — HINT`, `FAIL CHECK: DETAIL — HINT`;
    /// one line whatever the detail holds.
    pub fn line(&self) -> String {
        let one_line = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut line = format!("{} {}: {}", self.status.word(), self.check, one_line(&self.detail));
        if let Some(hint) = self.hint.as_deref().filter(|h| !h.is_empty()) {
            line.push_str(" — ");
            line.push_str(&one_line(hint));
        }
        line
    }

    /// The same check with every known secret value replaced.
    pub fn redacted(mut self, secrets: &[String]) -> Check {
        self.detail = mcpool_core::secrets::redact(&self.detail, secrets);
        self.hint = self.hint.map(|h| mcpool_core::secrets::redact(&h, secrets));
        self
    }
}

/// Whether anything is wrong: the exit code is 1 then.
pub fn failed(checks: &[Check]) -> bool {
    checks.iter().any(|c| c.status == Status::Fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_have_the_status_word_padded_to_four() {
        let checks = [
            Check::ok("keyring", "Secret Service reachable"),
            Check::warn("tray", "no StatusNotifierWatcher", "install a tray host"),
            Check::fail("runtime uvx", "not on PATH;\n needed by a", "install uv"),
        ];
        let text: Vec<String> = checks.iter().map(Check::line).collect();
        expect_test::expect![[r#"
            [
                "ok   keyring: Secret Service reachable",
                "warn tray: no StatusNotifierWatcher — install a tray host",
                "FAIL runtime uvx: not on PATH; needed by a — install uv",
            ]
        "#]]
        .assert_debug_eq(&text);
        assert!(failed(&checks));
        assert!(!failed(&checks[..2]));
    }

    #[test]
    fn json_has_check_status_detail_and_hint() {
        let json = serde_json::to_value([Check::ok("port", "free"), Check::fail("x", "y", "z")]).unwrap();
        assert_eq!(
            json,
            serde_json::json!([
                {"check": "port", "status": "ok", "detail": "free", "hint": null},
                {"check": "x", "status": "fail", "detail": "y", "hint": "z"},
            ])
        );
    }

    #[test]
    fn a_secret_in_a_detail_or_hint_is_redacted() {
        let secret = "sk-very-secret-value".to_string();
        let c = Check::fail("server a", format!("refused {secret}"), format!("try {secret}")).redacted(&[secret]);
        assert_eq!(c.line(), "FAIL server a: refused [secret] — try [secret]");
    }
}
