//! VS Code's `inputs`: the values a file asks for with `${input:ID}`, each
//! declared once with the prompt to show and whether it is a secret. The
//! reader never asks for anything; an application (or the command, on a
//! terminal) reads [`ServersConfig::missing_inputs`], asks, and reads the
//! file again with the answers in [`Variables::with_input`](super::Variables::with_input).

use serde_json::{Map, Value};

use super::{EntryProblem, ServersConfig};

/// One declared input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    id: String,
    description: Option<String>,
    password: bool,
}

/// A registry server's variable as an input of its name, a secret asked
/// without echo.
#[cfg(feature = "registry")]
impl From<&crate::registry::Variable> for Input {
    fn from(variable: &crate::registry::Variable) -> Self {
        Input {
            id: variable.name().to_owned(),
            description: variable.description().map(str::to_owned),
            password: variable.is_secret(),
        }
    }
}

impl Input {
    /// What `${input:ID}` names.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The prompt the file gives for it.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// Whether it is a secret: asked for without echo, never shown.
    pub fn is_password(&self) -> bool {
        self.password
    }
}

/// The declared inputs of a JSON file; entries that are not objects with a
/// string `id` are passed over.
pub(super) fn read(file: &Map<String, Value>) -> Vec<Input> {
    let Some(Value::Array(inputs)) = file.get("inputs") else {
        return Vec::new();
    };
    inputs
        .iter()
        .filter_map(|input| {
            let id = input.get("id")?.as_str()?.to_owned();
            Some(Input {
                id,
                description: (input.get("description").and_then(Value::as_str)).map(str::to_owned),
                password: input.get("password").and_then(Value::as_bool) == Some(true),
            })
        })
        .collect()
}

/// Every `${input:...}` of `entry` (in any of its strings) that nothing
/// answers, each once, in the order met: all an entry needs asked at once,
/// not only the first its reading stopped at.
pub(super) fn unanswered(entry: &Value, variables: &super::Variables<'_>) -> Vec<String> {
    fn walk(value: &Value, variables: &super::Variables<'_>, ids: &mut Vec<String>) {
        match value {
            Value::String(text) => super::expand::unanswered_inputs(text, variables, ids),
            Value::Array(items) => items.iter().for_each(|item| walk(item, variables, ids)),
            Value::Object(fields) => fields.values().for_each(|item| walk(item, variables, ids)),
            _ => {}
        }
    }
    let mut ids = Vec::new();
    walk(entry, variables, &mut ids);
    ids
}

impl ServersConfig {
    /// The inputs the file declares (VS Code's `inputs`).
    pub fn inputs(&self) -> &[Input] {
        &self.inputs
    }

    /// The ids of the inputs some entry was refused for want of (and the
    /// names of registry servers' variables nothing answered, asked as
    /// inputs of those names), each once, in the order first met: what an
    /// application asks for before reading the file again.
    pub fn missing_inputs(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = Vec::new();
        for error in self.errors() {
            let missing = match error.problem() {
                EntryProblem::MissingInputs { ids } => ids,
                // A registry server's variable is asked as the input of
                // its name.
                EntryProblem::MissingServerVariables { names } => names,
                _ => continue,
            };
            for id in missing {
                if !ids.contains(&id.as_str()) {
                    ids.push(id);
                }
            }
        }
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::super::{EntryProblem, ServersConfig, Variables};

    #[test]
    fn declared_and_missing_inputs_are_known_before_anything_is_asked() {
        let text = r#"{
            "inputs": [ { "type": "promptString", "id": "key", "description": "API key",
                          "password": true },
                        { "id": "region" }, { "description": "no id" } ],
            "servers": {
                "a": { "url": "https://h.test/mcp", "headers": { "X-Key": "${input:key}" } },
                "b": { "url": "https://h.test/${input:region}/${input:key}" }
            } }"#;
        let none = |_: &str| None;
        let config = ServersConfig::parse_with(text, &none).unwrap();
        let declared: Vec<_> = config
            .inputs()
            .iter()
            .map(|i| (i.id(), i.is_password()))
            .collect();
        assert_eq!(declared, [("key", true), ("region", false)]);
        assert_eq!(config.inputs()[0].description(), Some("API key"));
        // Every input an entry needs, not only the first it stopped at
        // (issue 63, item 9: `b` was refused for `region` alone).
        assert_eq!(config.missing_inputs(), ["key", "region"]);
        let b = config.errors().find(|e| e.name() == "b").unwrap();
        assert!(
            matches!(b.problem(), EntryProblem::MissingInputs { ids } if ids == &["region", "key"]),
            "{:?}",
            b.problem()
        );
        let variables = Variables::new(&none)
            .with_input("key", "k")
            .with_input("region", "eu");
        let config = ServersConfig::parse_with_variables(text, &variables).unwrap();
        assert!(config.missing_inputs().is_empty());
        assert_eq!(config.servers().count(), 2);
    }
}
