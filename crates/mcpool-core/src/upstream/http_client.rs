//! The HTTP client of a server's Streamable HTTP connection.

/// How many redirects one request may follow.
const MAX_REDIRECTS: usize = 10;

/// One client per connection, so its requests share kept-alive TCP
/// connections (rmcp's default client opens a new one for every request:
/// a connect, an accept and a socket in TIME-WAIT per call). Nagle is off:
/// with connections reused, a small request otherwise waits for the
/// server's delayed ACK (40 ms stalls on Linux). Redirects follow rmcp's
/// rule: only same-origin 307 and 308 (a 301/302/303 would turn the POST
/// into a bodyless GET, and another origin would get the configured
/// headers and the session id).
pub fn http_client() -> reqwest::Client {
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    });
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .redirect(policy)
        .build()
        // Building fails only when the TLS backend cannot start; the default
        // client then behaves as before (and fails the same way on use).
        .unwrap_or_default()
}
