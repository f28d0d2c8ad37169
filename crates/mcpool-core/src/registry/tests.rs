//! The published example server.json documents (tests/registry/) through
//! the plan: forms, filled entries, secrets kept apart, refusals.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::plan::suggested_name;
use super::server_json::{Listed, ServerList};
use super::*;

fn doc(name: &str) -> ServerJson {
    let text = match name {
        "brave-search" => include_str!("../../../../tests/registry/brave-search.json"),
        "filesystem" => include_str!("../../../../tests/registry/filesystem.json"),
        "mcp-fs" => include_str!("../../../../tests/registry/mcp-fs.json"),
        "weather-mcp" => include_str!("../../../../tests/registry/weather-mcp.json"),
        "database-manager" => include_str!("../../../../tests/registry/database-manager.json"),
        "hybrid-mcp" => include_str!("../../../../tests/registry/hybrid-mcp.json"),
        "text-editor" => include_str!("../../../../tests/registry/text-editor.json"),
        "legacy-brave-search" => include_str!("../../../../tests/registry/legacy-brave-search.json"),
        other => panic!("no fixture {other}"),
    };
    serde_json::from_str(text).expect("fixture reads")
}

fn answers(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn names(form: &Form) -> Vec<(&str, bool, bool)> {
    form.variables
        .iter()
        .map(|v| (v.name.as_str(), v.required, v.secret))
        .collect()
}

#[test]
fn npm_with_a_required_secret() {
    let server = doc("brave-search");
    let form = form(&server, None).expect("form");
    assert_eq!(form.suggested_name, "brave-search");
    assert_eq!(form.kind, "local");
    assert_eq!(form.registry_type, "npm");
    assert_eq!(
        Value::Object(form.entry.clone()),
        json!({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-brave-search@1.0.2"],
               "env": {"BRAVE_API_KEY": "{BRAVE_API_KEY}"}})
    );
    assert_eq!(names(&form), [("BRAVE_API_KEY", true, true)]);
    assert_eq!(form.variables[0].target, Target::Env);
    assert_eq!(form.variables[0].description.as_deref(), Some("Brave Search API Key"));

    let filled = apply(&form, &answers(&[("BRAVE_API_KEY", "sk-test")])).expect("filled");
    assert_eq!(
        Value::Object(filled.entry.clone()),
        json!({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-brave-search@1.0.2"]})
    );
    assert_eq!(filled.secret_env, answers(&[("BRAVE_API_KEY", "sk-test")]));
    assert!(!serde_json::to_string(&filled.entry)
        .unwrap_or_default()
        .contains("sk-test"));
}

#[test]
fn a_missing_required_variable_is_named() {
    let form = form(&doc("brave-search"), None).expect("form");
    let err = apply(&form, &answers(&[("BRAVE_API_KEY", "")])).expect_err("refused");
    assert_eq!(
        err.to_string(),
        "'brave-search' needs a value for this required variable: BRAVE_API_KEY"
    );
}

#[test]
fn the_older_snake_case_document_reads_the_same() {
    let old = form(&doc("legacy-brave-search"), None).expect("form");
    let new = form(&doc("brave-search"), None).expect("form");
    assert_eq!(old.entry, new.entry);
    assert_eq!(old.variables, new.variables);
    assert_eq!(old.version.as_deref(), Some("1.0.2"));
}

#[test]
fn pypi_with_a_default_and_a_secret() {
    let form = form(&doc("weather-mcp"), None).expect("form");
    assert_eq!(form.entry["command"], "uvx");
    assert_eq!(
        names(&form),
        [("WEATHER_API_KEY", true, true), ("WEATHER_UNITS", false, false)]
    );
    let filled = apply(&form, &answers(&[("WEATHER_API_KEY", "k")])).expect("filled");
    assert_eq!(
        Value::Object(filled.entry),
        json!({"command": "uvx", "args": ["weather-mcp-server==0.5.0"], "env": {"WEATHER_UNITS": "celsius"}})
    );
    assert_eq!(filled.secret_env, answers(&[("WEATHER_API_KEY", "k")]));
}

#[test]
fn the_first_package_is_the_default_and_the_oci_one_can_be_chosen() {
    let server = doc("filesystem");
    assert_eq!(choices(&server), [Choice::Package(0), Choice::Package(1)]);
    let npm = form(&server, None).expect("form");
    let filled = apply(&npm, &BTreeMap::new()).expect("defaults fill it");
    assert_eq!(
        Value::Object(filled.entry),
        json!({"command": "npx",
               "args": ["-y", "@modelcontextprotocol/server-filesystem@1.0.2", "/Users/username/Desktop"],
               "env": {"LOG_LEVEL": "info"}})
    );

    let oci = form(&server, Some(Choice::Package(1))).expect("form");
    assert_eq!(oci.registry_type, "oci");
    assert_eq!(
        names(&oci),
        [
            ("LOG_LEVEL", false, false),
            ("source_path", true, false),
            ("target_path", true, false)
        ]
    );
    assert_eq!(oci.variables[1].format.as_deref(), Some("filepath"));
    let err = apply(&oci, &BTreeMap::new()).expect_err("source_path has no default");
    assert!(err.to_string().ends_with(": source_path"), "{err}");
    let filled = apply(&oci, &answers(&[("source_path", "/home/me")])).expect("filled");
    assert_eq!(
        Value::Object(filled.entry),
        json!({"command": "docker",
               "args": ["run", "-i", "--rm", "--mount", "type=bind,src=/home/me,dst=/project",
                        "-e", "LOG_LEVEL", "docker.io/mcp/filesystem:1.0.2", "/project"],
               "env": {"LOG_LEVEL": "info"}})
    );
}

#[test]
fn oci_with_named_arguments_choices_and_a_secret() {
    let form = form(&doc("database-manager"), None).expect("form");
    assert_eq!(
        names(&form),
        [
            ("DB_USERNAME", true, false),
            ("DB_PASSWORD", true, true),
            ("SSL_MODE", false, false),
            ("db_type", true, false),
            ("host", true, false),
            ("port", false, false),
            ("database_name", true, false),
        ]
    );
    let base = [
        ("DB_USERNAME", "me"),
        ("DB_PASSWORD", "pw"),
        ("db_type", "postgres"),
        ("database_name", "shop"),
    ];
    let mut wrong = answers(&base);
    wrong.insert("db_type".into(), "oracle".into());
    assert_eq!(
        apply(&form, &wrong).expect_err("not a choice").to_string(),
        "'db_type' must be one of postgres, mysql, mongodb, redis; 'oracle' is not"
    );
    let filled = apply(&form, &answers(&base)).expect("filled");
    assert_eq!(
        Value::Object(filled.entry),
        json!({"command": "docker",
               "args": ["run", "-i", "--rm", "--network", "host", "-e", "DB_TYPE=postgres",
                        "-e", "DB_USERNAME", "-e", "DB_PASSWORD", "-e", "SSL_MODE",
                        "docker.io/example/database-manager-mcp:3.1.0",
                        "--host", "localhost", "shop"],
               "env": {"DB_USERNAME": "me", "SSL_MODE": "prefer"}})
    );
    assert_eq!(filled.secret_env, answers(&[("DB_PASSWORD", "pw")]));
    let with_port = apply(&form, &{
        let mut a = answers(&base);
        a.insert("port".into(), "5432".into());
        a
    })
    .expect("filled");
    let args = with_port.entry["args"].as_array().cloned().unwrap_or_default();
    assert!(
        args.windows(2).any(|w| w == [json!("--port"), json!("5432")]),
        "{args:?}"
    );
}

#[test]
fn a_remote_with_a_secret_header() {
    let server = doc("hybrid-mcp");
    assert_eq!(
        choices(&server),
        [Choice::Package(0), Choice::Remote(0), Choice::Remote(1)]
    );
    let form = form(&server, Some(Choice::Remote(0))).expect("form");
    assert_eq!(form.kind, "remote");
    assert_eq!(names(&form), [("X-API-Key", true, true), ("X-Region", false, false)]);
    assert_eq!(form.variables[0].target, Target::Header);
    let filled = apply(&form, &answers(&[("X-API-Key", "secret-key")])).expect("filled");
    assert_eq!(
        Value::Object(filled.entry),
        json!({"type": "http", "url": "https://mcp.anonymous.modelcontextprotocol.io/http",
               "headers": {"X-Region": "us-east-1"}})
    );
    assert_eq!(filled.secret_headers, answers(&[("X-API-Key", "secret-key")]));
    let sse = apply(
        &super::form(&server, Some(Choice::Remote(1))).expect("form"),
        &BTreeMap::new(),
    )
    .expect("filled");
    assert_eq!(
        Value::Object(sse.entry),
        json!({"type": "sse", "url": "https://mcp.anonymous.modelcontextprotocol.io/sse"})
    );
}

#[test]
fn a_remote_only_server_defaults_to_its_remote() {
    let form = form(&doc("mcp-fs"), None).expect("form");
    assert_eq!(form.suggested_name, "mcp-fs");
    assert!(form.variables.is_empty());
    assert_eq!(
        Value::Object(apply(&form, &BTreeMap::new()).expect("filled").entry),
        json!({"type": "http", "url": "https://mcp-fs.anonymous.modelcontextprotocol.io/http"})
    );
}

#[test]
fn a_bundle_only_server_cannot_be_run() {
    let err = form(&doc("text-editor"), None).expect_err("mcpb");
    assert_eq!(
        err.to_string(),
        "'io.modelcontextprotocol/text-editor' has no package or remote that mcpool can run (it offers: mcpb)"
    );
}

#[test]
fn a_secret_argument_is_refused_but_a_docker_env_secret_moves_to_env() {
    let mut server = doc("database-manager");
    server.packages[0].package_arguments[0].is_secret = true;
    let err = form(&server, None).expect_err("secret argument");
    assert!(
        matches!(err, PlanError::SecretOutsideKeyring { ref variable, .. } if variable == "host"),
        "{err}"
    );

    let mut server = doc("database-manager");
    server.packages[0].runtime_arguments[1]
        .variables
        .get_mut("db_type")
        .expect("db_type")
        .is_secret = true;
    let form = form(&server, None).expect("form");
    let filled = apply(
        &form,
        &answers(&[
            ("DB_USERNAME", "me"),
            ("DB_PASSWORD", "pw"),
            ("db_type", "redis"),
            ("database_name", "x"),
        ]),
    )
    .expect("filled");
    assert_eq!(filled.secret_env.get("DB_TYPE").map(String::as_str), Some("redis"));
    let args = serde_json::to_string(&filled.entry["args"]).unwrap_or_default();
    assert!(!args.contains("redis") && args.contains("\"-e\",\"DB_TYPE\""), "{args}");
}

#[test]
fn braces_that_name_no_variable_stay() {
    let mut server = doc("mcp-fs");
    server.remotes[0].url = "https://example.com/{tenant}/mcp?x={y}".into();
    server.remotes[0].variables.insert(
        "tenant".into(),
        serde_json::from_value(json!({"isRequired": true})).expect("input"),
    );
    let form = form(&server, None).expect("form");
    let filled = apply(&form, &answers(&[("tenant", "acme")])).expect("filled");
    assert_eq!(filled.entry["url"], "https://example.com/acme/mcp?x={y}");
}

#[test]
fn suggested_names_are_sanitised() {
    assert_eq!(suggested_name("io.github.user/weather"), "weather");
    assert_eq!(suggested_name("io.github.user/my.server v2"), "my-server-v2");
    assert_eq!(suggested_name("com.example/..."), "server");
}

#[test]
fn list_answers_wrapped_flat_and_deleted() {
    let list: ServerList = serde_json::from_value(json!({
        "servers": [
            {"server": {"name": "a/one", "description": "d", "version": "1.0.0"},
             "_meta": {"io.modelcontextprotocol.registry/official": {"status": "active", "isLatest": true}}},
            {"server": {"name": "a/gone", "description": "d", "version": "1.0.0"},
             "_meta": {"io.modelcontextprotocol.registry/official": {"status": "deleted"}}},
            {"name": "a/flat", "description": "d", "version_detail": {"version": "0.1.0"}},
            {"unreadable": true}
        ],
        "metadata": {"nextCursor": "x", "count": 3}
    }))
    .expect("list");
    let got: Vec<(&str, Option<&str>, Option<&str>)> = list
        .servers
        .iter()
        .map(|l: &Listed| (l.server().name.as_str(), l.server().version(), l.status()))
        .collect();
    assert_eq!(
        got,
        [
            ("a/one", Some("1.0.0"), Some("active")),
            ("a/gone", Some("1.0.0"), Some("deleted")),
            ("a/flat", Some("0.1.0"), None)
        ]
    );
}

#[test]
fn server_names_are_one_path_segment() {
    let url = client::endpoint(
        "http://127.0.0.1:9/base/",
        &["v0", "servers", "io.x/y", "versions", "1.0.0+b"],
    )
    .expect("url");
    assert_eq!(
        url.as_str(),
        "http://127.0.0.1:9/base/v0/servers/io.x%2Fy/versions/1.0.0+b"
    );
}

#[test]
fn a_runtime_on_path_or_what_to_install() {
    let dir = crate::scratch::made_scratch_dir("registry-runtime");
    // A program as each OS finds one: on Windows by an extension of PATHEXT.
    let npx = dir.join(if cfg!(windows) { "npx.cmd" } else { "npx" });
    std::fs::write(&npx, "#!/bin/sh\n").expect("write");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&npx, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let entry = form(&doc("brave-search"), None).expect("form").entry;
    let found = runtime_for(&entry, Some(dir.as_os_str())).expect("npx is a runtime");
    assert!(found.present);
    assert_eq!(found.missing_sentence(), None);
    let empty = dir.join("empty");
    let missing = runtime_for(&entry, Some(empty.as_os_str())).expect("npx is a runtime");
    assert!(!missing.present);
    let sentence = missing.missing_sentence().unwrap_or_default();
    assert!(
        sentence.starts_with("needs npx (Node.js (npm)) which is not on PATH; install Node.js"),
        "{sentence}"
    );
    let remote = form(&doc("mcp-fs"), None).expect("form").entry;
    assert_eq!(runtime_for(&remote, Some(dir.as_os_str())), None);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_boolean_flag_is_there_only_when_true() {
    let mut server = doc("hybrid-mcp");
    server.packages[0].package_arguments.push(
        serde_json::from_value(json!({"type": "named", "name": "--verbose", "format": "boolean"})).expect("input"),
    );
    let form = form(&server, None).expect("form");
    assert_eq!(
        form.entry["args"],
        json!([
            "-y",
            "@example/hybrid-mcp-server@1.5.0",
            "--mode",
            "{mode}",
            "--verbose"
        ])
    );
    let off = apply(&form, &BTreeMap::new()).expect("filled");
    assert_eq!(
        off.entry["args"],
        json!(["-y", "@example/hybrid-mcp-server@1.5.0", "--mode", "local"])
    );
    let on = apply(&form, &answers(&[("verbose", "true")])).expect("filled");
    assert_eq!(
        on.entry["args"],
        json!(["-y", "@example/hybrid-mcp-server@1.5.0", "--mode", "local", "--verbose"])
    );
}

#[test]
fn a_program_found_by_name_or_by_path_and_hints_for_interpreters() {
    use super::runtime::{find, install_hint};
    let dir = crate::scratch::made_scratch_dir("registry-find");
    let uvx = dir.join(if cfg!(windows) { "uvx.cmd" } else { "uvx" });
    std::fs::write(&uvx, "#!/bin/sh\n").expect("write");
    let plain = dir.join("plain");
    std::fs::write(&plain, "not a program").expect("write");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&uvx, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    assert_eq!(find("uvx", Some(dir.as_os_str())), Some(uvx.clone()));
    assert_eq!(find("uvx", Some(dir.join("none").as_os_str())), None);
    assert_eq!(find("uvx", None), None);
    // By its path without the extension too: Windows adds it.
    let by_path = dir.join("uvx").display().to_string();
    assert_eq!(find(&by_path, None), Some(uvx.clone()));
    #[cfg(unix)]
    assert_eq!(find(&plain.display().to_string(), Some(dir.as_os_str())), None);
    assert_eq!(install_hint("uvx").map(|(p, _)| p), Some("uv"));
    assert!(install_hint("python3").is_some_and(|(_, i)| i.contains("python3")));
    assert!(install_hint("node").is_some_and(|(p, _)| p == "Node.js"));
    assert_eq!(install_hint("my-own-server"), None);
    let _ = std::fs::remove_dir_all(&dir);
}
