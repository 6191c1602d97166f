//! What a person may be asked for to start or reach a registry server:
//! each package's environment variables without a fixed value that are
//! required or secret, and each remote's URL and header template
//! variables, as VS Code turns them into `${input:...}` prompts. An input's
//! id is the variable's name, so the answer reaches the variable of that
//! name ([`ServerJson::request_with`]'s `answer`).

use serde_json::Value;

use super::{list, text, ServerJson};

/// A variable a registry server needs that a person may give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    name: String,
    description: Option<String>,
    secret: bool,
}

impl Variable {
    /// Its name: the environment variable, or the template variable.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the `server.json` says it is.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// Whether it is a secret (`isSecret`): asked without echo, never shown.
    pub fn is_secret(&self) -> bool {
        self.secret
    }
}

impl ServerJson {
    /// The variables a person may supply, each once, in the order the
    /// `server.json` gives them; a secret is marked to be asked without
    /// echo and never shown.
    pub fn inputs(&self) -> Vec<Variable> {
        let mut inputs: Vec<Variable> = Vec::new();
        let mut add = |name: &str, declared: &Value| {
            if inputs.iter().any(|input| input.name == name) {
                return;
            }
            inputs.push(Variable {
                name: name.to_owned(),
                description: text(declared, "description").map(str::to_owned),
                secret: declared.get("isSecret") == Some(&Value::Bool(true)),
            });
        };
        for package in list(&self.server, "packages") {
            for variable in list(package, "environmentVariables") {
                let Some(name) = text(variable, "name") else {
                    continue;
                };
                let fixed = text(variable, "value").is_some_and(|value| !value.contains('{'));
                let wanted = [("isRequired"), ("isSecret")]
                    .iter()
                    .any(|flag| variable.get(*flag) == Some(&Value::Bool(true)));
                if !fixed && wanted {
                    add(name, variable);
                }
            }
        }
        for remote in list(&self.server, "remotes") {
            let headers = list(remote, "headers").filter_map(|header| header.get("variables"));
            for variables in remote.get("variables").into_iter().chain(headers) {
                for (name, declared) in variables.as_object().into_iter().flatten() {
                    add(name, declared);
                }
            }
        }
        inputs
    }
}
