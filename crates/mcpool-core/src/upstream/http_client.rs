//! The HTTP clients of a server's remote connection (Streamable HTTP, and
//! the legacy SSE transport's stream and posts).

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
    build(Follow::KeepingBody)
}

/// The client of a GET that opens an event stream (the SSE transport's):
/// a redirect of any kind is followed within the origin, never to another
/// (which would get the configured headers); a GET has no body to lose.
pub fn stream_client() -> reqwest::Client {
    build(Follow::AnyKind)
}

/// Which same-origin redirects a client follows.
#[derive(Debug, Clone, Copy)]
enum Follow {
    /// 307 and 308 only: the request is sent again as it was.
    KeepingBody,
    AnyKind,
}

fn build(follow: Follow) -> reqwest::Client {
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        let kind_followed = match follow {
            Follow::KeepingBody => matches!(
                attempt.status(),
                reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
            ),
            Follow::AnyKind => true,
        };
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !kind_followed || !same_origin {
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

#[cfg(test)]
mod tests {
    use axum::http::{header, StatusCode};
    use axum::response::IntoResponse;
    use axum::routing::get;
    use axum::Router;

    use super::*;

    /// A loopback server whose `/moved/CODE` answers CODE to `/here` (on
    /// itself) and `/away/CODE` answers CODE to `other`; its address.
    async fn redirecting(other: String) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let to = |code: u16, location: String| {
            (StatusCode::from_u16(code).unwrap(), [(header::LOCATION, location)]).into_response()
        };
        let app = Router::new()
            .route("/here", get(|| async { "arrived" }).post(|| async { "arrived" }))
            .route(
                "/moved/{code}",
                get(move |axum::extract::Path(code): axum::extract::Path<u16>| async move { to(code, "/here".into()) })
                    .post(move |axum::extract::Path(code): axum::extract::Path<u16>| async move {
                        to(code, "/here".into())
                    }),
            )
            .route(
                "/away/{code}",
                get(move |axum::extract::Path(code): axum::extract::Path<u16>| {
                    let other = other.clone();
                    async move { to(code, format!("{other}/here")) }
                }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await });
        base
    }

    #[tokio::test]
    async fn a_stream_follows_any_redirect_of_its_origin_and_a_post_only_those_that_keep_its_body() {
        let other = redirecting(String::new()).await;
        let base = redirecting(other).await;
        let stream = stream_client();
        let post = http_client();
        for code in [301, 302, 303, 307, 308] {
            let got = stream.get(format!("{base}/moved/{code}")).send().await.unwrap();
            assert_eq!(got.status(), StatusCode::OK, "GET after {code}");
            // Never to another origin, which would get the headers.
            let away = stream.get(format!("{base}/away/{code}")).send().await.unwrap();
            assert_eq!(away.status().as_u16(), code, "GET to another origin after {code}");
            let posted = post
                .post(format!("{base}/moved/{code}"))
                .body("x")
                .send()
                .await
                .unwrap();
            let kept = matches!(code, 307 | 308);
            assert_eq!(
                posted.status().is_success(),
                kept,
                "POST after {code}: {}",
                posted.status()
            );
        }
    }
}
