//! Building a form's shape from one package or remote: the command and
//! its arguments (npx, uvx, docker, dnx), env and headers as templates of
//! literal text and variables, and the variables themselves in the order
//! they are met.

use std::collections::BTreeMap;

use super::plan::{remote_kind, PlanError, Target, Variable, RUNNABLE};
use super::server_json::{Input, Package, Remote};

/// A piece of a value: literal text or a variable's value.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Seg {
    Lit(String),
    Var(String),
}

pub(super) type Template = Vec<Seg>;

/// Arguments that appear together or not at all (`--host VALUE`): left
/// out when an optional variable they use, or one named in `when`, has no
/// value.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ArgGroup {
    pub(super) args: Vec<Template>,
    pub(super) when: Vec<String>,
    /// A boolean flag's variable: the group is there only when it is `true`.
    pub(super) switch: Option<String>,
}

impl ArgGroup {
    fn of(args: Vec<Template>) -> Self {
        ArgGroup {
            args,
            when: Vec::new(),
            switch: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Field {
    pub(super) name: String,
    pub(super) value: Template,
    pub(super) secret: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Shape {
    Local {
        command: String,
        args: Vec<ArgGroup>,
        env: Vec<Field>,
    },
    Remote {
        kind: &'static str,
        url: Template,
        headers: Vec<Field>,
    },
}

/// Collects the variables while the shape is built.
pub(super) struct Builder<'a> {
    server: &'a str,
    pub(super) variables: Vec<Variable>,
}

impl<'a> Builder<'a> {
    pub(super) fn new(server: &'a str) -> Self {
        Builder {
            server,
            variables: Vec::new(),
        }
    }

    /// Registers `input` as the variable `name` (the first one of a name wins:
    /// inputs sharing a name share its value).
    fn variable(&mut self, name: &str, input: &Input, target: Target) -> Seg {
        if !self.variables.iter().any(|v| v.name == name) {
            self.variables.push(Variable {
                name: name.to_string(),
                description: input.description.clone(),
                required: input.is_required,
                secret: input.is_secret,
                default: input.default.clone(),
                target,
                format: input.format.clone().filter(|f| f != "string"),
                choices: input.choices.clone(),
            });
        }
        Seg::Var(name.to_string())
    }

    fn is_secret(&self, t: &Template) -> bool {
        t.iter().any(|s| match s {
            Seg::Var(v) => self.variables.iter().any(|x| &x.name == v && x.secret),
            Seg::Lit(_) => false,
        })
    }

    /// `input`'s value: its `value` template (whose `{names}` are its
    /// `variables`; other braces stay as they are), else a variable of its
    /// own called `own_name`.
    fn value(&mut self, input: &Input, own_name: &str, target: Target) -> Template {
        match &input.value {
            Some(v) => self.template(v, &input.variables, target),
            None => vec![self.variable(own_name, input, target)],
        }
    }

    fn template(&mut self, text: &str, vars: &BTreeMap<String, Input>, target: Target) -> Template {
        let mut out = Vec::new();
        let mut lit = String::new();
        let mut rest = text;
        while let Some(start) = rest.find('{') {
            let after = &rest[start + 1..];
            let Some(end) = after.find('}') else { break };
            let key = &after[..end];
            match vars.get(key) {
                Some(input) => {
                    lit.push_str(&rest[..start]);
                    if !lit.is_empty() {
                        out.push(Seg::Lit(std::mem::take(&mut lit)));
                    }
                    out.push(self.variable(key, input, target));
                }
                None => lit.push_str(&rest[..start + 1 + end + 1]),
            }
            rest = &after[end + 1..];
        }
        lit.push_str(rest);
        if !lit.is_empty() {
            out.push(Seg::Lit(lit));
        }
        out
    }

    fn argument(&mut self, arg: &Input, index: usize) -> Result<ArgGroup, PlanError> {
        let named = arg.kind.as_deref() == Some("named");
        let own = match (&arg.value_hint, &arg.name) {
            (Some(hint), _) => hint.clone(),
            (None, Some(flag)) if named => flag.trim_start_matches('-').to_string(),
            _ => format!("arg{}", index + 1),
        };
        if let (true, Some(flag), None, Some("boolean")) = (named, &arg.name, &arg.value, arg.format.as_deref()) {
            // `--verbose` alone: a yes/no question, not a value after the flag.
            self.variable(&own, arg, Target::Arg);
            return Ok(ArgGroup {
                args: vec![vec![Seg::Lit(flag.clone())]],
                when: Vec::new(),
                switch: Some(own),
            });
        }
        let value = self.value(arg, &own, Target::Arg);
        if self.is_secret(&value) {
            return Err(self.secret_outside(&value, "a command-line argument"));
        }
        Ok(match (named, &arg.name) {
            (true, Some(flag)) => ArgGroup::of(vec![vec![Seg::Lit(flag.clone())], value]),
            _ => ArgGroup::of(vec![value]),
        })
    }

    fn secret_outside(&self, t: &Template, place: &'static str) -> PlanError {
        let variable = t
            .iter()
            .find_map(|s| match s {
                Seg::Var(v) if self.variables.iter().any(|x| &x.name == v && x.secret) => Some(v.clone()),
                _ => None,
            })
            .unwrap_or_default();
        PlanError::SecretOutsideKeyring {
            server: self.server.to_string(),
            variable,
            place,
        }
    }

    fn fields(&mut self, inputs: &[Input], target: Target) -> Vec<Field> {
        let mut out = Vec::new();
        for input in inputs {
            let Some(name) = input.name.clone().filter(|n| !n.is_empty()) else {
                continue;
            };
            let value = self.value(input, &name, target);
            let secret = input.is_secret || self.is_secret(&value);
            out.push(Field { name, value, secret });
        }
        out
    }

    pub(super) fn package(&mut self, p: &Package) -> Result<Shape, PlanError> {
        let server = self.server.to_string();
        if !RUNNABLE.contains(&p.registry_type.as_str()) {
            return Err(PlanError::Unsupported {
                server,
                registry_type: p.registry_type.clone(),
            });
        }
        if let Some(t) = p.transport.as_ref().filter(|t| !t.kind.is_empty() && t.kind != "stdio") {
            return Err(PlanError::NotStdio {
                server,
                transport: t.kind.clone(),
            });
        }
        let version = p.version.as_deref().filter(|v| !v.is_empty() && *v != "latest");
        let oci = p.registry_type == "oci";
        let mut env = self.fields(&p.environment_variables, Target::Env);
        let mut runtime = Vec::new();
        for (i, arg) in p.runtime_arguments.iter().enumerate() {
            // docker's `-e NAME={secret}`: the value goes through the
            // environment (`-e NAME` passes it on), which the keyring fills.
            if oci && matches!(arg.name.as_deref(), Some("-e" | "--env")) {
                if let Some((name, rest)) = arg.value.as_deref().and_then(|v| v.split_once('=')) {
                    let value = self.template(rest, &arg.variables, Target::Env);
                    if self.is_secret(&value) || arg.is_secret {
                        env.push(Field {
                            name: name.to_string(),
                            value,
                            secret: true,
                        });
                        continue;
                    }
                }
            }
            runtime.push(self.argument(arg, i)?);
        }
        let mut package_args = Vec::new();
        for (i, arg) in p.package_arguments.iter().enumerate() {
            package_args.push(self.argument(arg, i)?);
        }
        let lit = |s: &str| ArgGroup::of(vec![vec![Seg::Lit(s.to_string())]]);
        let id = p.identifier.clone();
        let (command, mut args) = match p.registry_type.as_str() {
            "npm" => {
                let mut args = vec![lit("-y")];
                args.extend(runtime);
                args.push(lit(&version.map_or(id.clone(), |v| format!("{id}@{v}"))));
                ("npx", args)
            }
            "pypi" => {
                let mut args = runtime;
                args.push(lit(&version.map_or(id.clone(), |v| format!("{id}=={v}"))));
                ("uvx", args)
            }
            "nuget" => {
                let mut args = runtime;
                args.push(lit(&version.map_or(id.clone(), |v| format!("{id}@{v}"))));
                args.push(lit("--yes"));
                if !package_args.is_empty() {
                    args.push(lit("--"));
                }
                ("dnx", args)
            }
            _ => {
                let mut args = vec![lit("run"), lit("-i"), lit("--rm")];
                args.extend(runtime);
                // Without `-e NAME` docker keeps the variable from the container.
                for f in &env {
                    args.push(ArgGroup {
                        args: vec![vec![Seg::Lit("-e".into())], vec![Seg::Lit(f.name.clone())]],
                        // Left out with the variable when it has no value.
                        when: vars(&f.value),
                        switch: None,
                    });
                }
                args.push(lit(&image(&id, version)));
                ("docker", args)
            }
        };
        args.extend(package_args);
        Ok(Shape::Local {
            command: command.to_string(),
            args,
            env,
        })
    }

    pub(super) fn remote(&mut self, r: &Remote) -> Result<Shape, PlanError> {
        let kind = remote_kind(r).ok_or_else(|| PlanError::Unsupported {
            server: self.server.to_string(),
            registry_type: format!("'{}' remote", r.kind),
        })?;
        let url = self.template(&r.url, &r.variables, Target::Url);
        if self.is_secret(&url) {
            return Err(self.secret_outside(&url, "the URL"));
        }
        let headers = self.fields(&r.headers, Target::Header);
        Ok(Shape::Remote { kind, url, headers })
    }
}

fn vars(t: &Template) -> Vec<String> {
    t.iter()
        .filter_map(|s| match s {
            Seg::Var(v) => Some(v.clone()),
            Seg::Lit(_) => None,
        })
        .collect()
}

/// An OCI reference with a tag: the older documents give the tag as
/// `version` beside a bare image name.
fn image(id: &str, version: Option<&str>) -> String {
    let last = id.rsplit('/').next().unwrap_or(id);
    match version {
        Some(v) if !last.contains(':') && !id.contains('@') => format!("{id}:{v}"),
        _ => id.to_string(),
    }
}
