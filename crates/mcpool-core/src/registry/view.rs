//! The JSON views of registry results that the control API and `mcpool
//! registry search --json` show: a search row and an add form.

use serde_json::{json, Value};

use super::{Choice, Form, Found, PlanError};

/// One search result: enough for a list row and to tell what adding needs.
pub fn summary(found: &Found) -> Value {
    let s = &found.server;
    let form = super::form(s, None);
    let kind = match &form {
        Ok(f) => f.kind,
        Err(_) if s.packages.is_empty() && !s.remotes.is_empty() => "remote",
        Err(_) => "local",
    };
    let mut row = json!({
        "name": s.name,
        "description": s.description,
        "version": s.version(),
        "kind": kind,
        "packages": s.packages.iter().map(|p| p.registry_type.as_str()).collect::<Vec<_>>(),
        "remotes": s.remotes.iter().map(|r| r.kind.as_str()).collect::<Vec<_>>(),
        "needs": form.as_ref().map(needs).unwrap_or_default(),
        "registry": found.registry,
    });
    if let Some(obj) = row.as_object_mut() {
        if let Some(title) = &s.title {
            obj.insert("title".into(), json!(title));
        }
        if let Some(url) = s.repository.as_ref().and_then(|r| r.url.as_ref()) {
            obj.insert("repository".into(), json!(url));
        }
        if let Err(e) = &form {
            obj.insert("problem".into(), json!(e.to_string()));
        }
    }
    row
}

/// The variables a user must give: required and without a default.
pub fn needs(form: &Form) -> Vec<String> {
    form.variables
        .iter()
        .filter(|v| v.required && v.default.as_deref().is_none_or(str::is_empty))
        .map(|v| v.name.clone())
        .collect()
}

/// The add form as `/api/registry/server` answers it.
pub fn form_view(found: &Found, choice: Option<Choice>, path: Option<&std::ffi::OsStr>) -> Result<Value, PlanError> {
    let s = &found.server;
    let form = super::form(s, choice)?;
    let runtime = super::runtime_for(&form.entry, path);
    let mut view = serde_json::to_value(&form).unwrap_or_default();
    if let Some(obj) = view.as_object_mut() {
        obj.insert(
            "choices".into(),
            json!(super::choices(s)
                .into_iter()
                .map(|c| json!({"choice": c.to_string(), "label": super::label(s, c)}))
                .collect::<Vec<_>>()),
        );
        obj.insert("needs".into(), json!(needs(&form)));
        obj.insert("registry".into(), json!(found.registry));
        obj.insert("title".into(), json!(s.title));
        obj.insert("description".into(), json!(s.description));
        obj.insert(
            "runtime".into(),
            match runtime {
                Some(r) => json!({
                    "command": r.command,
                    "provider": r.provider,
                    "present": r.present,
                    "install": r.missing_sentence(),
                }),
                None => Value::Null,
            },
        );
    }
    Ok(view)
}
