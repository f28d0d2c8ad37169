use super::*;

#[test]
fn references_are_found_and_resolved() {
    let store = MemoryStore::default();
    store.set("GH", "ghp_123").unwrap();
    assert_eq!(references("Bearer ${keyring:GH}"), vec!["GH"]);
    assert_eq!(resolve_value("Bearer ${keyring:GH}", &store).unwrap(), "Bearer ghp_123");
    assert_eq!(resolve_value("plain", &store).unwrap(), "plain");
    assert_eq!(
        resolve_value("${keyring:GH}${keyring:GH}", &store).unwrap(),
        "ghp_123ghp_123"
    );
    assert_eq!(
        resolve_value("${keyring:NOPE}", &store).unwrap_err().to_string(),
        "the secret 'NOPE' is not in the keyring; set it with `mcpool secret set NOPE`"
    );
    assert_eq!(
        parse_value("${keyring:unterminated"),
        vec![Part::Text("${keyring:unterminated")]
    );
}

/// A remote server `name` at `url` with `headers`, as the config gives it.
fn http_spec(name: &str, url: &str, headers: BTreeMap<String, String>) -> crate::config::ServerSpec {
    crate::config::ServerSpec {
        name: name.into(),
        disabled: false,
        timeout: std::time::Duration::from_secs(1),
        max_message_bytes: crate::config::DEFAULT_MAX_MESSAGE_BYTES,
        call_timeout: Some(crate::config::DEFAULT_CALL_TIMEOUT),
        log_arguments: false,
        oauth: None,
        sandbox: Default::default(),
        transport: crate::config::TransportSpec::Http {
            url: url.into(),
            headers,
        },
    }
}

#[test]
fn specs_resolve_and_errors_are_redacted() {
    let store = MemoryStore::default();
    store.set("K", "s3cr3t-value").unwrap();
    let headers = [("Authorization".to_string(), "Bearer ${keyring:K}".to_string())].into();
    let spec = http_spec("r", "https://h.example/mcp?key=${keyring:K}", headers);
    let r = resolve_spec(&spec, &store).unwrap();
    let crate::config::TransportSpec::Http { url, headers } = &r.spec.transport else {
        panic!()
    };
    assert_eq!(url, "https://h.example/mcp?key=s3cr3t-value");
    assert_eq!(headers["Authorization"], "Bearer s3cr3t-value");
    assert_eq!(
        redact(
            "error sending request for url (https://h.example/mcp?key=s3cr3t-value)",
            &r.secret_values
        ),
        "error sending request for url (https://h.example/mcp?key=[secret])"
    );
    let mut missing = spec.clone();
    missing.transport = crate::config::TransportSpec::Stdio {
        command: "x".into(),
        args: vec![],
        env: [("T".to_string(), "${keyring:GONE}".to_string())].into(),
        cwd: None,
    };
    assert_eq!(
        resolve_spec(&missing, &store).err(),
        Some(ResolveError::Missing { name: "GONE".into() })
    );
}

#[test]
fn log_text_is_redacted_of_every_value_resolved_so_far() {
    let store = MemoryStore::default();
    store.set("L", "log-secret-\"q\"").unwrap();
    let mut spec = http_spec("l", "https://h.example/mcp?k=${keyring:L}", Default::default());
    assert_eq!(redact_resolved("before log-secret-\"q\""), "before log-secret-\"q\"");
    resolve_spec(&spec, &store).unwrap();
    let line = format!(
        "url: {:?}, raw: {}",
        "https://h.example/mcp?k=log-secret-\"q\"", "log-secret-\"q\""
    );
    let redacted = redact_resolved(&line);
    assert!(!redacted.contains("log-secret"), "{redacted}");
    spec.name = "again".into();
    resolve_spec(&spec, &store).unwrap();
    assert_eq!(
        RESOLVED
            .lock()
            .unwrap()
            .iter()
            .filter(|v| v.starts_with("log-secret"))
            .count(),
        1
    );
}

#[test]
fn names_are_listed_without_values() {
    let store = MemoryStore::default();
    let secrets = Secrets::new(Arc::new(store.clone()));
    secrets.set("B", "two").unwrap();
    secrets.set("A", "one").unwrap();
    secrets.set("A", "uno").unwrap();
    assert_eq!(secrets.list().unwrap().into_iter().collect::<Vec<_>>(), vec!["A", "B"]);
    assert_eq!(secrets.get("A").unwrap().as_deref(), Some("uno"));
    assert!(secrets.remove("A").unwrap());
    assert!(!secrets.remove("A").unwrap());
    assert_eq!(secrets.list().unwrap().len(), 1);
    assert!(matches!(secrets.set("__x", "v"), Err(SecretError::InvalidName(_))));
    assert!(!store.dump()[INDEX_ENTRY].contains("two"));
}
