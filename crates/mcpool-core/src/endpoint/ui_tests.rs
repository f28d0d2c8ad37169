//! The dashboard's sign-in rules, through the whole router.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::CSP;
use crate::agent_config::Dirs;
use crate::endpoint::{router, EndpointOptions};
use crate::pool::Pool;
use std::sync::Arc;

const TOKEN: &str = "s3cret-token";
const CONTROL: &str = "c0ntrol-credential";
const HOST: &str = "127.0.0.1:7410";

fn new_app() -> Router {
    router(
        Pool::default(),
        EndpointOptions {
            token: TOKEN.into(),
            control: CONTROL.into(),
            token_fixed: false,
            client_dirs: Arc::new(Dirs::from_env()),
            any_host: false,
            max_request_bytes: crate::endpoint::mcp::request_check::DEFAULT_MAX_REQUEST_BYTES,
            shutdown: CancellationToken::new(),
            dashboard: Arc::default(),
        },
    )
}

struct Reply {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: String,
}

async fn send(app: &Router, method: &str, uri: &str, headers: &[(&str, &str)]) -> Reply {
    let mut req = Request::builder().method(method).uri(uri).header(header::HOST, HOST);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let response = app.clone().oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
    Reply {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

fn bearer() -> (&'static str, String) {
    ("authorization", format!("Bearer {TOKEN}"))
}

fn control() -> (&'static str, String) {
    ("authorization", format!("Bearer {CONTROL}"))
}

/// A one-time link path from `POST /api/ui/link`.
async fn link(app: &Router) -> String {
    let (k, v) = control();
    let r = send(app, "POST", "/api/ui/link", &[(k, &v)]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    let path = v["path"].as_str().unwrap().to_string();
    assert_eq!(v["url"], format!("http://{HOST}{path}"));
    assert!(path.starts_with("/ui/login?code="), "{path}");
    path
}

/// Signs in through a fresh link; returns the `Cookie` header value.
async fn sign_in(app: &Router) -> String {
    let r = send(app, "GET", &link(app).await, &[]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(r.headers[header::LOCATION], "/ui");
    let set = r.headers[header::SET_COOKIE].to_str().unwrap().to_string();
    for part in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(part), "{set}");
    }
    assert!(set.starts_with("mcpool_session_7410="), "{set}");
    set.split(';').next().unwrap().to_string()
}

#[tokio::test]
async fn without_a_session_the_dashboard_says_how_to_get_one() {
    let app = new_app();
    let r = send(&app, "GET", "/ui", &[]).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.headers[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(r.headers[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .starts_with("default-src 'self'"));
    assert!(r.body.contains("mcpool ui"), "{}", r.body);
    // A forged cookie is no session.
    let r = send(&app, "GET", "/ui", &[("cookie", "mcpool_session_7410=forged")]).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    let r = send(&app, "GET", "/api/servers", &[("cookie", "mcpool_session_7410=forged")]).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_link_signs_in_once() {
    let app = new_app();
    let path = link(&app).await;
    let first = send(&app, "GET", &path, &[]).await;
    assert_eq!(first.status, StatusCode::SEE_OTHER);
    let again = send(&app, "GET", &path, &[]).await;
    assert_eq!(again.status, StatusCode::UNAUTHORIZED, "a link works once");
    assert!(again.headers.get(header::SET_COOKIE).is_none());
    assert!(again.body.contains("mcpool ui"));
    let bad = send(&app, "GET", "/ui/login?code=0000", &[]).await;
    assert_eq!(bad.status, StatusCode::UNAUTHORIZED);
    let none = send(&app, "GET", "/ui/login", &[]).await;
    assert_eq!(none.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_session_opens_the_dashboard_and_the_api_but_not_mcp() {
    let app = new_app();
    let cookie = sign_in(&app).await;
    let r = send(&app, "GET", "/ui", &[("cookie", &cookie)]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.headers[header::CONTENT_TYPE], "text/html; charset=utf-8");
    assert_eq!(r.headers[header::CONTENT_SECURITY_POLICY], CSP);
    assert!(!r.body.contains(TOKEN), "the page never holds the token");
    let r = send(&app, "GET", "/api/servers", &[("cookie", &cookie)]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body, "[]");
    let r = send(&app, "GET", "/api/connect", &[("cookie", &cookie)]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.contains("http://127.0.0.1:7410/mcp"), "{}", r.body);
    let r = send(&app, "POST", "/mcp", &[("cookie", &cookie)]).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "agents need the bearer token");
    // A session cannot mint more links.
    let r = send(
        &app,
        "POST",
        "/api/ui/link",
        &[("cookie", &cookie), ("origin", "http://127.0.0.1:7410")],
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    // A cookie of another mcpool instance on this host is not a session here.
    let other = new_app();
    let r = send(&other, "GET", "/api/servers", &[("cookie", &cookie)]).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_token_goes_to_the_signed_in_dashboard_only() {
    let app = new_app();
    let cookie = sign_in(&app).await;
    let same_origin = [("cookie", cookie.as_str()), ("sec-fetch-site", "same-origin")];
    let r = send(&app, "GET", "/api/token", &same_origin).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.headers[header::CACHE_CONTROL], "no-store");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&r.body).unwrap()["token"],
        TOKEN
    );
    for site in ["same-site", "cross-site"] {
        let r = send(
            &app,
            "GET",
            "/api/token",
            &[("cookie", &cookie), ("sec-fetch-site", site)],
        )
        .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{site}");
    }
    let (k, v) = bearer();
    assert_eq!(
        send(&app, "GET", "/api/token", &[(k, &v)]).await.status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        send(&app, "GET", "/api/token", &[]).await.status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn session_actions_must_come_from_the_dashboard() {
    let app = new_app();
    let cookie = sign_in(&app).await;
    let post = |extra: &[(&'static str, &'static str)]| {
        let (app, cookie, extra) = (app.clone(), cookie.clone(), extra.to_vec());
        async move {
            let mut headers = vec![("cookie", cookie.as_str())];
            headers.extend(extra);
            send(&app, "POST", "/api/servers/nope/reconnect", &headers).await.status
        }
    };
    // Through the guard: the pool has no such server.
    let ok = [("origin", "http://127.0.0.1:7410"), ("sec-fetch-site", "same-origin")];
    assert_eq!(post(&ok).await, StatusCode::NOT_FOUND);
    assert_eq!(
        post(&[("origin", "http://127.0.0.1:7410")]).await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(post(&[]).await, StatusCode::FORBIDDEN, "no Origin");
    assert_eq!(post(&[("origin", "https://evil.example")]).await, StatusCode::FORBIDDEN);
    assert_eq!(
        post(&[("origin", "http://127.0.0.1:3000"), ("sec-fetch-site", "same-site")]).await,
        StatusCode::FORBIDDEN,
        "another port of this host"
    );
    assert_eq!(
        post(&[("origin", "http://127.0.0.1:7410"), ("sec-fetch-site", "cross-site")]).await,
        StatusCode::FORBIDDEN
    );
    // The bearer token needs none of that (the CLI sends no Origin).
    let (k, v) = bearer();
    let r = send(&app, "POST", "/api/servers/nope/reconnect", &[(k, &v)]).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_agents_token_reads_and_the_control_credential_changes() {
    let app = new_app();
    let (k, token) = bearer();
    let (_, control) = control();
    for (method, path) in [
        ("PUT", "/api/servers/fs"),
        ("DELETE", "/api/servers/fs"),
        ("POST", "/api/servers"),
        ("POST", "/api/servers/test"),
        ("POST", "/api/servers/fs/sandbox/allow"),
        ("POST", "/api/servers/fs/enable"),
        ("POST", "/api/servers/fs/login"),
        ("POST", "/api/servers/fs/logout"),
        ("POST", "/api/servers/fs/tools/read/disable"),
        ("POST", "/api/registry/add"),
        ("POST", "/api/connect/cursor"),
        ("POST", "/api/secrets"),
        ("DELETE", "/api/secrets/NAME"),
        ("POST", "/api/ui/link"),
    ] {
        let r = send(&app, method, path, &[(k, &token)]).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{method} {path}");
        let body: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        assert!(body["error"].as_str().unwrap().contains("mcpool ui"), "{}", r.body);
        // Past the guard: the pool has no such server, or the body is missing.
        let r = send(&app, method, path, &[(k, &control)]).await;
        assert_ne!(r.status, StatusCode::FORBIDDEN, "{method} {path}: {}", r.body);
        assert_ne!(r.status, StatusCode::UNAUTHORIZED, "{method} {path}");
    }
    for verb in ["reconnect", "disconnect"] {
        let path = format!("/api/servers/nope/{verb}");
        for credential in [&token, &control] {
            let r = send(&app, "POST", &path, &[(k, credential)]).await;
            assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}: {}", r.body);
        }
    }
    for credential in [&token, &control] {
        assert_eq!(
            send(&app, "GET", "/api/servers", &[(k, credential)]).await.status,
            StatusCode::OK
        );
        assert_eq!(
            send(&app, "GET", "/metrics", &[(k, credential)]).await.status,
            StatusCode::OK
        );
    }
    let wrong = ("authorization", format!("Bearer {CONTROL}x"));
    assert_eq!(
        send(&app, "POST", "/api/servers", &[(wrong.0, &wrong.1)]).await.status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn a_session_may_change_what_the_agents_token_may_not() {
    let app = new_app();
    let cookie = sign_in(&app).await;
    let headers = [
        ("cookie", cookie.as_str()),
        ("origin", "http://127.0.0.1:7410"),
        ("sec-fetch-site", "same-origin"),
    ];
    let r = send(&app, "POST", "/api/servers/fs/enable", &headers).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    let r = send(&app, "DELETE", "/api/servers/fs", &headers).await;
    assert_ne!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
}

#[tokio::test]
async fn a_session_needs_a_loopback_host() {
    let app = new_app();
    let cookie = sign_in(&app).await;
    let req = Request::builder()
        .uri("/api/servers")
        .header(header::HOST, "rebound.example:7410")
        .header("cookie", &cookie)
        .body(Body::empty())
        .unwrap();
    assert_eq!(app.oneshot(req).await.unwrap().status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn files_are_embedded_with_their_types_and_the_csp() {
    let app = new_app();
    let cookie = sign_in(&app).await;
    for (path, ty) in [
        ("/ui/app.js", "text/javascript; charset=utf-8"),
        ("/ui/lib.js", "text/javascript; charset=utf-8"),
        ("/ui/cards.js", "text/javascript; charset=utf-8"),
        ("/ui/activity.js", "text/javascript; charset=utf-8"),
        ("/ui/search.js", "text/javascript; charset=utf-8"),
        ("/ui/servers.js", "text/javascript; charset=utf-8"),
        ("/ui/server_form.js", "text/javascript; charset=utf-8"),
        ("/ui/connect.js", "text/javascript; charset=utf-8"),
        ("/ui/registry.js", "text/javascript; charset=utf-8"),
        ("/ui/plots.js", "text/javascript; charset=utf-8"),
        ("/ui/history.js", "text/javascript; charset=utf-8"),
        ("/ui/logs.js", "text/javascript; charset=utf-8"),
        ("/ui/style.css", "text/css; charset=utf-8"),
        ("/ui/icon.svg", "image/svg+xml"),
    ] {
        let r = send(&app, "GET", path, &[("cookie", &cookie)]).await;
        assert_eq!(r.status, StatusCode::OK, "{path}");
        assert_eq!(r.headers[header::CONTENT_TYPE], ty, "{path}");
        assert_eq!(r.headers[header::CONTENT_SECURITY_POLICY], CSP, "{path}");
        assert_eq!(r.headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    }
    // The sign-in page's own files need no session.
    assert_eq!(send(&app, "GET", "/ui/style.css", &[]).await.status, StatusCode::OK);
    assert_eq!(
        send(&app, "GET", "/ui/app.js", &[]).await.status,
        StatusCode::UNAUTHORIZED
    );
}

#[test]
fn no_inline_script_or_style() {
    for page in [super::INDEX_HTML, super::SIGNIN_HTML] {
        for (i, _) in page.match_indices("<script") {
            let tag = &page[i..i + page[i..].find('>').unwrap()];
            assert!(tag.contains(" src=\"/ui/"), "{tag}");
        }
        assert!(!page.contains("<style"), "styles come from style.css");
        assert!(!page.contains(" style="), "no inline style attributes");
        assert!(!page.contains(" onclick="), "no inline handlers");
    }
}

type Graph<'a> = std::collections::BTreeMap<&'a str, Vec<&'a str>>;

/// The `./name.js` modules a module of ui/ imports (`import ... from './x.js'`).
fn imports(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("import ") || l.starts_with("export ") && l.contains(" from '"))
        .filter_map(|l| l.rsplit_once(" from '").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split_once('\'').map(|(module, _)| module))
        .filter_map(|module| module.strip_prefix("./"))
        .collect()
}

/// An import circle of `graph` as "a.js -> b.js -> a.js", if there is one.
fn circle(graph: &Graph) -> Option<String> {
    fn visit<'a>(m: &'a str, graph: &Graph<'a>, path: &mut Vec<&'a str>) -> Option<String> {
        if path.contains(&m) {
            return Some(format!("{} -> {m}", path.join(" -> ")));
        }
        path.push(m);
        let found = graph.get(m)?.iter().find_map(|dep| visit(dep, graph, path));
        path.pop();
        found
    }
    graph.keys().find_map(|m| visit(m, graph, &mut Vec::new()))
}

#[test]
fn every_file_of_ui_is_served() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui");
    let served: Vec<&str> = super::ASSETS.iter().map(|(name, _, _)| *name).collect();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if !name.ends_with(".html") {
            assert!(
                served.contains(&name.as_str()),
                "ui/{name} is not served: add it to ASSETS"
            );
        }
    }
}

#[test]
fn the_modules_import_no_entry_point_and_no_circle() {
    let modules: Graph = super::ASSETS
        .iter()
        .filter(|(name, _, _)| name.ends_with(".js"))
        .map(|&(name, _, text)| (name, imports(text)))
        .collect();
    assert_eq!(modules["lib.js"], Vec::<&str>::new(), "lib.js is a leaf");
    assert!(modules["app.js"].contains(&"lib.js"), "{:?}", modules["app.js"]);
    for (name, deps) in &modules {
        assert!(!deps.contains(&"app.js"), "{name} imports app.js, the entry point");
        for dep in deps {
            assert!(modules.contains_key(dep), "{name} imports {dep}, which is not served");
        }
    }
    assert_eq!(circle(&modules), None);
}

#[test]
fn imports_and_circles_are_found() {
    let text = "// import x from './no.js'\nimport { a, b } from './a.js';\n  import { c } from './c.js';\nexport { d } from './d.js';\nconst { e } = await import(x);\n";
    assert_eq!(imports(text), ["a.js", "c.js", "d.js"]);
    let graph = Graph::from([("a.js", vec!["b.js"]), ("b.js", vec!["c.js"]), ("c.js", vec!["a.js"])]);
    assert_eq!(circle(&graph).as_deref(), Some("a.js -> b.js -> c.js -> a.js"));
    let graph = Graph::from([("a.js", vec!["b.js", "c.js"]), ("b.js", vec!["c.js"]), ("c.js", vec![])]);
    assert_eq!(circle(&graph), None);
}
