//! How a package of a `server.json` is started, and what the document may
//! not make the launcher do.
//!
//! A `server.json` is data written by whoever published the server (or by
//! whoever answers as a registry). It names a package; it never chooses a
//! program, an option of the runtime, or a variable that changes what the
//! runtime runs. So:
//!
//! - the program is the runtime of the package's `registryType` (`npx`,
//!   `uvx`, `docker`, `dnx`); a `runtimeHint` naming another refuses the
//!   package ([`Refusal::RuntimeHint`]);
//! - the identifier and the version are checked against what the registry
//!   type allows (an npm name, a PyPI project, an OCI reference, a NuGet
//!   id): neither can start with `-`, so neither is read as an option, and
//!   npm's goes after `--`;
//! - `runtimeArguments` are passed only where they change nothing of what
//!   runs: a container's `-e`/`--env`, `--init` and `--read-only`; any
//!   other refuses the package ([`Refusal::RuntimeArgument`]);
//! - an environment variable's name must be a variable name, and one the
//!   runtime or the loader reads to decide what runs (`NODE_OPTIONS`,
//!   `LD_PRELOAD`, `npm_config_*`, `PYTHONPATH`, `DOCKER_HOST`, ...)
//!   refuses the package ([`Refusal::ReservedVariable`]);
//! - `packageArguments` go after the package, to the server itself.
//!
//! The arguments are handed to the program as they are, never through a
//! shell.

use serde_json::Value;

use super::identifiers::{has_tag, npm_name, nuget_id, oci_reference, pypi_name, valid_version};
use super::{list, text};
use crate::transport::StdioCommand;

/// Why a package or a remote of a `server.json` is not used: what the
/// document asked that the launcher does not do. Names printed here are
/// checked to be variable names, so they carry no terminal control.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// `runtimeHint` names a program other than the registry type's runtime.
    #[error("its runtimeHint names a program other than the runtime of its registry type")]
    RuntimeHint,
    /// A `runtimeArguments` entry would change what the runtime runs.
    #[error("its runtimeArguments ask the runtime for more than the launcher allows")]
    RuntimeArgument,
    /// The identifier is not a package name of its registry type.
    #[error("its identifier is not a valid {registry} package name")]
    Identifier {
        /// The registry type.
        registry: &'static str,
    },
    /// The version is not one its registry type writes.
    #[error("its version is not a valid {registry} version")]
    Version {
        /// The registry type.
        registry: &'static str,
    },
    /// An environment or template variable's name is not a variable name.
    #[error("it names a variable with characters a variable name cannot have")]
    VariableName,
    /// A variable that changes what the runtime or the loader runs.
    #[error("it sets {variable}, which changes what its runtime runs")]
    ReservedVariable {
        /// The variable.
        variable: String,
    },
    /// A remote's URL or header uses a `{variable}` it does not declare.
    #[error("its URL or a header uses {{{variable}}} without declaring it")]
    UndeclaredVariable {
        /// The variable.
        variable: String,
    },
    /// An `mcpb` bundle's manifest starts something other than its server
    /// type's runtime on a file of the bundle, or a program of the bundle.
    #[error("its bundle's manifest starts a program other than its server type's runtime or a file of the bundle")]
    BundleProgram,
}

/// The registry types this launcher starts, each with its runtime.
const RUNTIMES: &[(&str, &str)] = &[
    ("npm", "npx"),
    ("pypi", "uvx"),
    ("oci", "docker"),
    ("nuget", "dnx"),
];

/// The runtime a registry type is started with.
pub(super) fn runtime_of(registry: &str) -> Option<&'static str> {
    RUNTIMES
        .iter()
        .find(|(kind, _)| *kind == registry)
        .map(|(_, runtime)| *runtime)
}

/// How one package is started.
pub(super) struct Plan {
    pub(super) program: String,
    /// Arguments before the package reference.
    before: Vec<String>,
    reference: Option<String>,
    /// Arguments after the package arguments.
    after: Vec<String>,
    /// Variables its bundle's manifest sets (already checked).
    preset: Vec<(String, String)>,
    container: bool,
}

impl Plan {
    /// The plan of a stdio `package` whose runtime this launcher knows:
    /// `Ok(None)` for another transport or registry type, `Err` for a
    /// package the document may not have started this way.
    pub(super) fn of(package: &Value) -> Result<Option<Plan>, Refusal> {
        let stdio = package.get("transport").and_then(|t| text(t, "type")) == Some("stdio");
        let (Some(kind), Some(id), true) = (
            text(package, "registryType"),
            text(package, "identifier"),
            stdio,
        ) else {
            return Ok(None);
        };
        let Some(runtime) = runtime_of(kind) else {
            return Ok(None);
        };
        if text(package, "runtimeHint").is_some_and(|hint| hint != runtime) {
            return Err(Refusal::RuntimeHint);
        }
        let version = text(package, "version");
        let registry = RUNTIMES.iter().find(|(k, _)| *k == kind).map(|(k, _)| *k);
        let registry = registry.unwrap_or("unknown");
        let valid_id = match kind {
            "npm" => npm_name(id),
            "pypi" => pypi_name(id),
            "oci" => oci_reference(id),
            _ => nuget_id(id),
        };
        if !valid_id {
            return Err(Refusal::Identifier { registry });
        }
        if version.is_some_and(|version| !valid_version(kind, version)) {
            return Err(Refusal::Version { registry });
        }
        let with = |separator: &str| match version {
            Some(version) => format!("{id}{separator}{version}"),
            None => id.to_owned(),
        };
        let strings = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect();
        let (before, reference, after, container) = match kind {
            "npm" => (strings(&["-y", "--"]), with("@"), Vec::new(), false),
            "pypi" => (Vec::new(), with("=="), Vec::new(), false),
            "oci" => {
                let image = match version {
                    Some(_) if !id.contains('@') && !has_tag(id) => with(":"),
                    _ => id.to_owned(),
                };
                (strings(&["run", "-i", "--rm"]), image, Vec::new(), true)
            }
            _ => (Vec::new(), with("@"), strings(&["--yes", "--"]), false),
        };
        let mut plan = Plan {
            program: runtime.to_owned(),
            before,
            reference: Some(reference),
            after,
            preset: Vec::new(),
            container,
        };
        plan.before.extend(runtime_arguments(package, container)?);
        Ok(Some(plan))
    }

    /// The plan of an unpacked `mcpb` bundle: its manifest's program,
    /// arguments and variables, checked when it was read.
    pub(super) fn bundle(program: String, args: Vec<String>, env: Vec<(String, String)>) -> Plan {
        Plan {
            program,
            before: args,
            reference: None,
            after: Vec::new(),
            preset: env,
            container: false,
        }
    }

    /// The command, or every required variable nothing answers. A fixed
    /// `value` is set as it is; otherwise the answer, else the `default`.
    /// `inherited` says whether the child gets a variable from this
    /// process's environment anyway (a container never does: its
    /// variables are passed by name, so only answered ones are).
    pub(super) fn command(
        self,
        package: &Value,
        answer: &dyn Fn(&str) -> Option<String>,
        inherited: &dyn Fn(&str) -> bool,
    ) -> Result<StdioCommand, Missing> {
        let mut args = self.before;
        let mut set = self.preset;
        let mut missing = Vec::new();
        for variable in list(package, "environmentVariables") {
            let Some(name) = text(variable, "name") else {
                continue;
            };
            // Checked by `check_variables` before: a name a variable may have.
            let fixed = text(variable, "value").filter(|value| !value.contains('{'));
            let default = text(variable, "default").filter(|value| !value.contains('{'));
            let value = (fixed.map(str::to_owned))
                .or_else(|| answer(name))
                .or_else(|| default.map(str::to_owned));
            let required = variable.get("isRequired") == Some(&Value::Bool(true));
            match value {
                Some(value) => set.push((name.to_owned(), value)),
                None if required && !self.container && inherited(name) => continue,
                None if required => {
                    missing.push(name.to_owned());
                    continue;
                }
                None => continue,
            }
            if self.container {
                args.extend(["-e".to_owned(), name.to_owned()]);
            }
        }
        if !missing.is_empty() {
            return Err(Missing(missing));
        }
        args.extend(self.reference);
        args.extend(self.after);
        args.extend(package_arguments(package));
        let command = StdioCommand::new(self.program).args(args);
        Ok((set.into_iter()).fold(command, |command, (name, value)| command.env(name, value)))
    }
}

/// The required variables of a package that nothing answers.
pub(super) struct Missing(pub(super) Vec<String>);

/// Refuses a package whose environment variables are not variable names
/// or change what its runtime runs.
pub(super) fn check_variables(package: &Value) -> Result<(), Refusal> {
    for variable in list(package, "environmentVariables") {
        if let Some(name) = text(variable, "name") {
            check_variable(name)?;
        }
    }
    Ok(())
}

/// A variable a document (or a bundle) may set for its server: a name, and
/// not one that changes what the runtime or the dynamic loader runs.
pub(super) fn check_variable(name: &str) -> Result<(), Refusal> {
    if !is_variable_name(name) {
        return Err(Refusal::VariableName);
    }
    if changes_what_runs(name) {
        return Err(Refusal::ReservedVariable {
            variable: name.to_owned(),
        });
    }
    Ok(())
}

/// `[A-Za-z_][A-Za-z0-9_]*`, at most 128 characters.
pub(super) fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 128
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Variables read by the dynamic loader, the shells, the runtimes this
/// launcher starts (node and npm, Python and uv, Docker, .NET) and the
/// interpreters a package may run, to decide what code runs or from
/// where. Compared without case: npm reads `npm_config_*` in any case.
fn changes_what_runs(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "PATH",
        "HOME",
        "SHELL",
        "ENV",
        "BASH_ENV",
        "IFS",
        "CDPATH",
        "PS4",
        "PROMPT_COMMAND",
        "CLASSPATH",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "PERL5LIB",
        "PERL5OPT",
        "PERLLIB",
        "RUBYOPT",
        "RUBYLIB",
        "GCONV_PATH",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_CACHE_HOME",
    ];
    const PREFIXES: &[&str] = &[
        "LD_",
        "DYLD_",
        "NODE_",
        "NPM_",
        "YARN_",
        "PNPM_",
        "COREPACK_",
        "BUN_",
        "DENO_",
        "PYTHON",
        "PIP_",
        "UV_",
        "VIRTUAL_ENV",
        "CONDA",
        "DOCKER_",
        "BUILDKIT",
        "DOTNET_",
        "NUGET_",
        "COREHOST_",
        "MSBUILD",
        "GIT_",
        "SSL_",
        "CURL_",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "MCP_CONNECT_",
    ];
    /// Harmless variables under a reserved prefix, common in server.json.
    const ALLOWED: &[&str] = &[
        "NODE_ENV",
        "NODE_NO_WARNINGS",
        "PYTHONUNBUFFERED",
        "PYTHONIOENCODING",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONUTF8",
    ];
    let upper = name.to_ascii_uppercase();
    if ALLOWED.contains(&upper.as_str()) {
        return false;
    }
    EXACT.contains(&upper.as_str()) || PREFIXES.iter().any(|prefix| upper.starts_with(prefix))
}

/// The runtime arguments a package may give: for a container, `-e` /
/// `--env` with a variable (its name checked as any other), `--init`,
/// `--read-only`; nothing for the other runtimes.
fn runtime_arguments(package: &Value, container: bool) -> Result<Vec<String>, Refusal> {
    let mut out = Vec::new();
    for argument in list(package, "runtimeArguments") {
        let value = text(argument, "value").or_else(|| text(argument, "default"));
        let name = text(argument, "name");
        match (container, text(argument, "type"), name, value) {
            (true, Some("named"), Some("-e" | "--env"), Some(value)) => {
                let variable = value.split_once('=').map_or(value, |(name, _)| name);
                check_variable(variable)?;
                out.extend(["--env".to_owned(), value.to_owned()]);
            }
            (true, Some("named"), Some(flag @ ("--init" | "--read-only")), None) => {
                out.push(flag.to_owned());
            }
            _ => return Err(Refusal::RuntimeArgument),
        }
    }
    Ok(out)
}

/// A package's arguments, for the server itself, each with its value.
fn package_arguments(package: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for argument in list(package, "packageArguments") {
        let value = text(argument, "value").or_else(|| text(argument, "default"));
        match (text(argument, "type"), text(argument, "name"), value) {
            (Some("named"), Some(name), Some(value)) => {
                out.extend([name.to_owned(), value.to_owned()]);
            }
            (Some("named"), Some(name), None) => out.push(name.to_owned()),
            (_, _, Some(value)) => out.push(value.to_owned()),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_that_change_what_runs_are_refused() {
        for reserved in [
            "NODE_OPTIONS",
            "LD_PRELOAD",
            "npm_config_registry",
            "PYTHONPATH",
            "DOCKER_HOST",
            "PATH",
            "BASH_ENV",
            "UV_INDEX_URL",
        ] {
            assert!(
                matches!(
                    check_variable(reserved),
                    Err(Refusal::ReservedVariable { .. })
                ),
                "{reserved}"
            );
        }
        for bad in ["A-B", "1X", "", "X Y", "\u{1b}[2J"] {
            assert_eq!(check_variable(bad), Err(Refusal::VariableName), "{bad}");
        }
        for fine in ["API_KEY", "NODE_ENV", "FILES_ROOT", "PYTHONUNBUFFERED"] {
            assert_eq!(check_variable(fine), Ok(()), "{fine}");
        }
    }
}
