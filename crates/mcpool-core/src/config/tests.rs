use super::*;

#[test]
fn max_message_bytes_defaults_and_is_checked() {
    let c = parse_str(
        r#"{"mcpServers": {
            "plain": {"command": "srv"},
            "raised": {"command": "srv", "maxMessageBytes": 67108864},
            "tiny": {"command": "srv", "maxMessageBytes": 1000},
            "text": {"command": "srv", "maxMessageBytes": "16MiB"}
        }}"#,
    );
    assert_eq!(c.servers["plain"].max_message_bytes, DEFAULT_MAX_MESSAGE_BYTES);
    assert_eq!(c.servers["raised"].max_message_bytes, 64 * 1024 * 1024);
    let texts: Vec<String> = c.problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        texts,
        vec![
            "/cfg/config.json: server 'tiny': field 'maxMessageBytes': expected a number of bytes from 65536 to 1073741824",
            "/cfg/config.json: server 'text': field 'maxMessageBytes': expected a number of bytes",
        ]
    );
}

#[test]
fn call_timeout_defaults_to_ten_minutes_and_zero_is_none() {
    let c = parse_str(
        r#"{"mcpServers": {
            "plain": {"command": "srv"},
            "short": {"command": "srv", "callTimeout": 1500},
            "none": {"url": "http://127.0.0.1:1/mcp", "callTimeout": 0},
            "negative": {"command": "srv", "callTimeout": -1},
            "text": {"command": "srv", "callTimeout": "10m"}
        }}"#,
    );
    assert_eq!(c.servers["plain"].call_timeout, Some(Duration::from_secs(600)));
    assert_eq!(c.servers["short"].call_timeout, Some(Duration::from_millis(1500)));
    assert_eq!(c.servers["none"].call_timeout, None);
    let texts: Vec<String> = c.problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        texts,
        vec![
            "/cfg/config.json: server 'negative': field 'callTimeout': expected a number of milliseconds (0 for no limit)",
            "/cfg/config.json: server 'text': field 'callTimeout': expected a number of milliseconds (0 for no limit)",
        ]
    );
}

fn parse_str(text: &str) -> Config {
    parse(Path::new("/cfg/config.json"), text).unwrap()
}

#[test]
fn claude_desktop_shape() {
    let c = parse_str(
        r#"{"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "srv", 3], "env": {"A": "1"}, "cwd": "work", "timeout": 5000},
            "web": {"url": "https://example.test/mcp", "headers": {"X-Key": "v"}},
            "old": {"url": "http://127.0.0.1:9/sse", "transport": "sse", "disabled": true}
        }}"#,
    );
    assert!(c.problems.is_empty(), "{:?}", c.problems);
    let fs = &c.servers["fs"];
    assert_eq!(fs.timeout, Duration::from_millis(5000));
    assert_eq!(
        fs.transport,
        TransportSpec::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "srv".into(), "3".into()],
            env: BTreeMap::from([("A".into(), "1".into())]),
            cwd: Some(PathBuf::from("/cfg/work")),
        }
    );
    assert_eq!(c.servers["web"].transport.kind(), "http");
    assert_eq!(c.servers["web"].timeout, DEFAULT_TIMEOUT);
    assert!(c.servers["old"].disabled);
    assert_eq!(c.servers["old"].transport.kind(), "sse");
}

#[test]
fn vscode_shape() {
    let c = parse_str(
        r#"{"inputs": [], "servers": {
            "gh": {"type": "http", "url": "https://api.example.test/mcp"},
            "local": {"type": "stdio", "command": "srv"},
            "legacy": {"type": "sse", "url": "http://127.0.0.1:1/sse"}
        }}"#,
    );
    assert!(c.problems.is_empty(), "{:?}", c.problems);
    assert_eq!(c.servers.len(), 3);
    assert_eq!(c.servers["legacy"].transport.kind(), "sse");
}

#[test]
fn a_bad_entry_names_file_server_and_field_and_spares_the_others() {
    let c = parse_str(
        r#"{"mcpServers": {
            "good": {"command": "srv"},
            "badargs": {"command": "srv", "args": "oops"},
            "badurl": {"url": "not a url"},
            "none": {},
            "badtimeout": {"command": "x", "timeout": -4},
            "badenv": {"command": "x", "env": {"K": [1]}}
        }}"#,
    );
    assert_eq!(c.servers.keys().collect::<Vec<_>>(), vec!["good"]);
    let texts: Vec<String> = c.problems.iter().map(ToString::to_string).collect();
    expect_test::expect![[r#"
        [
            "/cfg/config.json: server 'badargs': field 'args': expected an array of strings",
            "/cfg/config.json: server 'badurl': field 'url': invalid URL: relative URL without a base",
            "/cfg/config.json: server 'none': needs either 'command' (a local server) or 'url' (a remote server)",
            "/cfg/config.json: server 'badtimeout': field 'timeout': expected a positive number of milliseconds",
            "/cfg/config.json: server 'badenv': field 'env.K': expected a string",
        ]
    "#]]
    .assert_debug_eq(&texts);
}

#[test]
fn oauth_settings_are_parsed_and_checked() {
    let c = parse_str(
        r#"{"oauthClientMetadataUrl": "https://example.test/mcpool/client.json", "mcpServers": {
            "full": {"url": "https://a.test/mcp", "oauth": {"clientId": "abc", "clientSecret": "${keyring:S}", "scopes": ["read", "write"], "redirectPort": 8765}},
            "empty": {"url": "https://b.test/mcp", "oauth": {}},
            "none": {"url": "https://c.test/mcp"},
            "local": {"command": "x", "oauth": {}},
            "lonesecret": {"url": "https://d.test/mcp", "oauth": {"clientSecret": "s"}},
            "badport": {"url": "https://d.test/mcp", "oauth": {"redirectPort": 70000}},
            "badscope": {"url": "https://d.test/mcp", "oauth": {"scopes": ["a b"]}},
            "typo": {"url": "https://d.test/mcp", "oauth": {"clientID": "x"}}
        }}"#,
    );
    assert_eq!(
        c.oauth_client_metadata_url.as_deref(),
        Some("https://example.test/mcpool/client.json")
    );
    assert_eq!(
        c.servers["full"].oauth,
        Some(OAuthSpec {
            client_id: Some("abc".into()),
            client_secret: Some("${keyring:S}".into()),
            scopes: Some(vec!["read".into(), "write".into()]),
            redirect_port: Some(8765),
        })
    );
    assert_eq!(c.servers["empty"].oauth, Some(OAuthSpec::default()));
    assert_eq!(c.servers["none"].oauth, None);
    let texts: Vec<String> = c.problems.iter().map(ToString::to_string).collect();
    expect_test::expect![[r#"
        [
            "/cfg/config.json: server 'local': field 'oauth': only a remote server (with 'url') signs in",
            "/cfg/config.json: server 'lonesecret': field 'oauth.clientSecret': a client secret needs oauth.clientId",
            "/cfg/config.json: server 'badport': field 'oauth.redirectPort': expected a port number (1-65535)",
            "/cfg/config.json: server 'badscope': field 'oauth.scopes[0]': expected a scope (a string without spaces)",
            "/cfg/config.json: server 'typo': field 'oauth.clientID': unknown field (expected clientId, clientSecret, scopes or redirectPort)",
        ]
    "#]]
    .assert_debug_eq(&texts);
    let bad = parse_str(r#"{"oauthClientMetadataUrl": "http://x.test/doc"}"#);
    assert_eq!(
        bad.problems[0].to_string(),
        "/cfg/config.json: field 'oauthClientMetadataUrl': expected an https URL with a path (the client ID metadata document)"
    );
}

#[test]
fn invalid_json_names_the_position() {
    let e = parse(Path::new("/x/c.json"), "{\"mcpServers\": {").unwrap_err();
    assert!(e.to_string().starts_with("/x/c.json: invalid JSON at line 1"), "{e}");
}

#[test]
fn absent_or_empty_file_is_an_empty_pool() {
    let dir = std::env::temp_dir().join(format!("mcpool-cfg-{}", std::process::id()));
    assert_eq!(load(&dir.join("missing.json")).unwrap(), Config::default());
    assert_eq!(parse_str("  "), Config::default());
}

#[test]
fn a_repeated_key_is_a_named_warning_and_the_later_value_is_used() {
    let c = parse_str(
        r#"{"mcpServers": {
            "a": {"command": "first"},
            "a": {"command": "second", "env": {"TOKEN": "1", "TOKEN": "2"}}
        }}"#,
    );
    assert_eq!(c.servers.keys().collect::<Vec<_>>(), vec!["a"]);
    let texts: Vec<(String, bool)> = c.problems.iter().map(|p| (p.to_string(), p.warning)).collect();
    expect_test::expect![[r#"
        [
            (
                "/cfg/config.json: server 'a': defined twice in 'mcpServers'; only the later entry is used",
                true,
            ),
            (
                "/cfg/config.json: server 'a': field 'env.TOKEN': appears twice; only the later value is used",
                true,
            ),
        ]
    "#]]
    .assert_debug_eq(&texts);
    let TransportSpec::Stdio { command, env, .. } = &c.servers["a"].transport else {
        panic!("not stdio")
    };
    assert_eq!((command.as_str(), env["TOKEN"].as_str()), ("second", "2"));
}

#[test]
fn comments_and_trailing_commas_are_allowed_and_errors_keep_their_line() {
    let c = parse_str("{\n  // a comment\n  \"mcpServers\": {\n    /* one */ \"a\": {\"command\": \"x\",},\n  },\n}\n");
    assert!(c.problems.is_empty(), "{:?}", c.problems);
    assert_eq!(c.servers.keys().collect::<Vec<_>>(), vec!["a"]);
    let e = parse(
        Path::new("/cfg/config.json"),
        "{\n// note\n\"mcpServers\": {\n  \"a\": nope\n}}",
    )
    .unwrap_err();
    assert!(e.to_string().contains("line 4"), "{e}");
}

#[test]
fn registries_are_base_urls() {
    let c = parse_str(r#"{"registries": ["https://registry.example.test/", "http://127.0.0.1:9/base"]}"#);
    assert_eq!(
        c.registries,
        Some(vec![
            "https://registry.example.test".to_string(),
            "http://127.0.0.1:9/base".to_string()
        ])
    );
    assert_eq!(parse_str("{}").registries, None);
    for (bad, field, words) in [
        (r#"{"registries": "https://r.test"}"#, "registries", "expected an array"),
        (r#"{"registries": [1]}"#, "registries[0]", "expected a URL"),
        (
            r#"{"registries": ["ftp://r.test"]}"#,
            "registries[0]",
            "expected an http or https URL",
        ),
        (
            r#"{"registries": ["https://r.test/?q=1"]}"#,
            "registries[0]",
            "without a query",
        ),
    ] {
        let c = parse_str(bad);
        assert_eq!(c.registries, None, "{bad}");
        let p = &c.problems[0];
        assert_eq!(p.field.as_deref(), Some(field), "{bad}: {p}");
        assert!(p.message.contains(words), "{bad}: {p}");
    }
}

#[test]
fn cwd_expands_the_home_folder_and_on_windows_percent_variables() {
    use super::entry::expand_cwd;
    let home = std::path::Path::new("/home/ada");
    let env = |name: &str| match name {
        "USERPROFILE" => Some(r"C:\Users\ada".to_string()),
        "PROJ" => Some("p1".to_string()),
        _ => None,
    };
    // The home folder joined as the platform joins paths.
    let work = home.join("work").to_string_lossy().into_owned();
    // Unix: `~/` only; a `%` is a character like any other.
    assert_eq!(expand_cwd("~/work", Some(home), &env, false), work);
    assert_eq!(expand_cwd(r"~\work", Some(home), &env, false), r"~\work");
    assert_eq!(expand_cwd("%PROJ%/x", Some(home), &env, false), "%PROJ%/x");
    assert_eq!(expand_cwd("~/work", None, &env, false), "~/work");
    // Windows: `~\` too, and `%NAME%` from the environment, as cmd reads it.
    assert_eq!(expand_cwd(r"~\work", Some(home), &env, true), work);
    assert_eq!(
        expand_cwd(r"%USERPROFILE%\src\%PROJ%", Some(home), &env, true),
        r"C:\Users\ada\src\p1"
    );
    // Unknown names, a lone `%` and `%%` stay as written.
    assert_eq!(expand_cwd(r"%NOPE%\a", Some(home), &env, true), r"%NOPE%\a");
    assert_eq!(expand_cwd("100% %PROJ%", Some(home), &env, true), "100% p1");
    assert_eq!(expand_cwd("a%%b", Some(home), &env, true), "a%%b");
}

#[test]
fn an_items_problem_names_its_index_or_key() {
    let c = parse_str(
        r#"{"mcpServers": {
            "badarg": {"command": "srv", "args": ["ok", 2, {"no": 1}]},
            "badheader": {"url": "https://example.test/mcp", "headers": {"X-Ok": "1", "X-Bad": null}},
            "badflag": {"command": "srv", "disabled": "yes"}
        }}"#,
    );
    let texts: Vec<String> = c.problems.iter().map(ToString::to_string).collect();
    expect_test::expect![[r#"
        [
            "/cfg/config.json: server 'badarg': field 'args[2]': expected a string",
            "/cfg/config.json: server 'badheader': field 'headers.X-Bad': expected a string",
            "/cfg/config.json: server 'badflag': field 'disabled': expected true or false",
        ]
    "#]]
    .assert_debug_eq(&texts);
}

#[test]
fn an_entry_written_from_its_type_reads_back_the_same() {
    let value = serde_json::json!({
        "type": "http", "url": "https://example.test/mcp",
        "headers": {"Z-Last": "1", "A-First": "${keyring:t}"},
        "oauth": {"clientId": "c", "scopes": ["read", "write"]},
        "timeout": 5000, "callTimeout": 0, "logArguments": true
    });
    let entry = Entry::read(&value).expect("reads");
    let map = entry.to_map();
    assert_eq!(
        map.keys().collect::<Vec<_>>(),
        [
            "type",
            "url",
            "headers",
            "oauth",
            "timeout",
            "callTimeout",
            "logArguments"
        ],
        "the type's order, absent fields left out"
    );
    let headers: Vec<_> = map["headers"].as_object().expect("object").keys().collect();
    assert_eq!(
        headers,
        ["Z-Last", "A-First"],
        "headers keep the order they were written in"
    );
    assert_eq!(Entry::read(&serde_json::Value::Object(map)).expect("reads back"), entry);
    let spec = entry
        .spec(
            Path::new("/cfg/config.json"),
            "remote",
            &crate::sandbox::Sandbox::default(),
        )
        .expect("a spec");
    assert_eq!(spec.call_timeout, None, "0 is no limit");
    assert!(spec.log_arguments);
}
