//! The loopback redirect: a listener on 127.0.0.1 that takes the browser's
//! one `GET /callback?code=…&state=…`, and the checks on what it carries
//! (`state`, RFC 9207 `iss`, an error from the authorization server).

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The path of the redirect URI.
pub const CALLBACK_PATH: &str = "/callback";

/// What the authorization server sent back with the browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Callback {
    pub code: String,
    pub state: String,
    pub iss: Option<String>,
}

/// Reads a redirect's request target (`/callback?…`). `Ok(None)` is a
/// request for another path (a browser's favicon), to be answered 404.
pub fn parse_callback(target: &str, expected_state: &str) -> Result<Option<Callback>, String> {
    let Ok(url) = url::Url::parse(&format!("http://127.0.0.1{target}")) else {
        return Ok(None);
    };
    if url.path() != CALLBACK_PATH {
        return Ok(None);
    }
    let param = |k: &str| url.query_pairs().find(|(key, _)| key == k).map(|(_, v)| v.into_owned());
    let state = param("state");
    if state.as_deref() != Some(expected_state) {
        return Err("the answer from the authorization server did not match the sign-in (state)".into());
    }
    if let Some(error) = param("error") {
        let text = match param("error_description") {
            Some(d) => format!("{error}: {d}"),
            None => error,
        };
        return Err(format!("the authorization server refused the sign-in ({text})"));
    }
    let Some(code) = param("code").filter(|c| !c.is_empty()) else {
        return Err("the authorization server sent no authorization code".into());
    };
    Ok(Some(Callback {
        code,
        state: state.unwrap_or_default(),
        iss: param("iss"),
    }))
}

/// RFC 9207: where the authorization server advertises
/// `authorization_response_iss_parameter_supported`, `iss` must be there;
/// where it is there, it must equal the issuer byte for byte.
pub fn check_iss(expected: Option<&str>, advertised: bool, received: Option<&str>) -> Result<(), String> {
    match (received, expected) {
        (None, _) if advertised => Err("the authorization server did not say who it is (iss is missing)".into()),
        (None, _) => Ok(()),
        (Some(got), Some(want)) if got == want => Ok(()),
        (Some(got), Some(want)) => Err(format!(
            "the answer came from another authorization server (iss '{got}', expected '{want}')"
        )),
        (Some(got), None) => Err(format!(
            "the answer names an authorization server ('{got}') that cannot be checked"
        )),
    }
}

/// Binds the redirect listener: `port`, or an ephemeral one.
pub async fn bind(port: Option<u16>) -> std::io::Result<TcpListener> {
    TcpListener::bind(("127.0.0.1", port.unwrap_or(0))).await
}

/// Waits for the redirect, answering every request the browser makes.
/// Returns the callback, or why the sign-in failed.
pub async fn wait(listener: TcpListener, expected_state: &str, server: &str) -> Result<Callback, String> {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            continue;
        };
        let Some(target) = read_target(&mut stream).await else {
            continue;
        };
        match parse_callback(&target, expected_state) {
            Ok(None) => respond(&mut stream, "404 Not Found", "Not found.").await,
            Ok(Some(callback)) => {
                let page = format!("mcpool got the sign-in for '{server}'. You can close this tab.");
                respond(&mut stream, "200 OK", &page).await;
                return Ok(callback);
            }
            Err(e) => {
                respond(
                    &mut stream,
                    "400 Bad Request",
                    &format!("Sign-in to '{server}' failed: {e}."),
                )
                .await;
                return Err(e);
            }
        }
    }
}

/// The request target of a `GET`, read within a few seconds.
async fn read_target(stream: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let read = async {
        let mut chunk = [0u8; 1024];
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        Some(())
    };
    tokio::time::timeout(Duration::from_secs(10), read).await.ok()??;
    let head = String::from_utf8_lossy(&buf);
    let mut parts = head.lines().next()?.split_whitespace();
    match (parts.next(), parts.next()) {
        (Some("GET"), Some(target)) => Some(target.to_string()),
        _ => None,
    }
}

async fn respond(stream: &mut TcpStream, status: &str, text: &str) {
    let body = format!(
        "<!doctype html><meta charset=utf-8><title>mcpool</title><p style=\"font:16px system-ui;margin:3em\">{}</p>\n",
        html_escape(text)
    );
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_must_match_and_errors_are_said() {
        let ok = parse_callback("/callback?code=abc&state=s1&iss=https%3A%2F%2Fas.test", "s1").unwrap();
        assert_eq!(
            ok,
            Some(Callback {
                code: "abc".into(),
                state: "s1".into(),
                iss: Some("https://as.test".into())
            })
        );
        assert_eq!(parse_callback("/favicon.ico", "s1"), Ok(None));
        assert_eq!(
            parse_callback("/callback?code=abc&state=other", "s1").unwrap_err(),
            "the answer from the authorization server did not match the sign-in (state)"
        );
        assert!(parse_callback("/callback?code=abc", "s1").is_err());
        assert_eq!(
            parse_callback(
                "/callback?error=access_denied&error_description=User+said+no&state=s1",
                "s1"
            )
            .unwrap_err(),
            "the authorization server refused the sign-in (access_denied: User said no)"
        );
        assert_eq!(
            parse_callback("/callback?state=s1", "s1").unwrap_err(),
            "the authorization server sent no authorization code"
        );
    }

    #[test]
    fn iss_is_compared_exactly_when_present_and_required_when_advertised() {
        let want = Some("https://as.test");
        assert_eq!(check_iss(want, true, Some("https://as.test")), Ok(()));
        assert_eq!(check_iss(want, false, None), Ok(()));
        assert!(check_iss(want, true, None).is_err());
        // No normalisation: a trailing slash or another case is another issuer.
        assert!(check_iss(want, true, Some("https://as.test/")).is_err());
        assert!(check_iss(want, false, Some("https://AS.test")).is_err());
        assert!(check_iss(want, false, Some("https://evil.test")).is_err());
        assert!(check_iss(None, false, Some("https://as.test")).is_err());
    }

    #[tokio::test]
    async fn the_listener_answers_the_browser_and_returns_the_code() {
        let listener = bind(None).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let waiting = tokio::spawn(async move { wait(listener, "st", "srv").await });
        let get = |path: &str| {
            reqwest::Client::new()
                .get(format!("http://127.0.0.1:{port}{path}"))
                .send()
        };
        let miss = get("/favicon.ico").await.unwrap();
        assert_eq!(miss.status(), 404);
        let hit = get("/callback?code=c0de&state=st").await.unwrap();
        assert_eq!(hit.status(), 200);
        assert!(hit.text().await.unwrap().contains("You can close this tab"));
        let got = waiting.await.unwrap().unwrap();
        assert_eq!(got.code, "c0de");
    }
}
