//! How a bundle's `manifest.json` starts it, within what a bundle may ask.
//!
//! The manifest's `server.mcp_config` gives `command`, `args` and `env`,
//! with `${__dirname}` the bundle's folder, `${HOME}` and
//! `${pathSeparator}` (`${/}`) filled; any other `${...}` (a
//! `${user_config...}` a person is meant to fill) refuses the bundle. What
//! the command may be follows `server.type`, as hosts start bundles:
//!
//! | `server.type` | program | what it runs |
//! |---|---|---|
//! | `node` | `node` | the first argument: a file of the bundle |
//! | `python` | `python3` or `python` (`-u` allowed before) | the first other argument: a file of the bundle |
//! | `uv` | `uv` | `--directory <bundle> run FILE` (either order of the first two): a file of the bundle |
//! | `binary` | a file of the bundle | itself |
//!
//! A file of the bundle is one the unpacked folder holds (a relative path
//! is taken from the folder), never a link out of it. Arguments after the
//! file are the server's own. A variable in `env` follows the rules of a
//! package's ([`Refusal::ReservedVariable`](super::super::Refusal)).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Bundle, BundleError};
use crate::registry::launch::check_variable;

/// The bundle of package `index`, started as the manifest in `dir` says.
pub(super) fn command(dir: &Path, index: usize) -> Result<Bundle, BundleError> {
    let text =
        std::fs::read_to_string(dir.join("manifest.json")).map_err(|_| BundleError::NoCommand)?;
    let manifest: Value = serde_json::from_str(&text).map_err(|_| BundleError::NoCommand)?;
    let server = &manifest["server"];
    let config = &server["mcp_config"];
    let fill = |value: &str| substitute(value, dir);
    let program = fill(config["command"].as_str().ok_or(BundleError::NoCommand)?)?;
    let args: Vec<String> = (config["args"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .map(fill)
        .collect::<Result<_, _>>()?;
    let env: Vec<(String, String)> = (config["env"].as_object().into_iter().flatten())
        .filter_map(|(name, value)| Some((name, value.as_str()?)))
        .map(|(name, value)| Ok((name.clone(), fill(value)?)))
        .collect::<Result<_, BundleError>>()?;
    for (name, _) in &env {
        check_variable(name).map_err(BundleError::Manifest)?;
    }
    let (program, args) = checked(server["type"].as_str(), program, args, dir)?;
    Ok(Bundle {
        package: index,
        program,
        args,
        env,
    })
}

/// The program and arguments, each file they run made an absolute path of
/// the bundle; refused when the manifest runs anything else.
fn checked(
    kind: Option<&str>,
    program: String,
    mut args: Vec<String>,
    dir: &Path,
) -> Result<(String, Vec<String>), BundleError> {
    let refused = || BundleError::Manifest(crate::registry::Refusal::BundleProgram);
    let root = dir.canonicalize().map_err(BundleError::Unpack)?;
    let runs = match (kind, program.as_str()) {
        (Some("node"), "node") => 0,
        (Some("python"), "python3" | "python") => {
            usize::from(args.first().is_some_and(|a| a == "-u"))
        }
        (Some("uv"), "uv") => {
            let directory = match args.get(..3) {
                Some([run, flag, at]) if run == "run" && flag == "--directory" => at,
                Some([flag, at, run]) if flag == "--directory" && run == "run" => at,
                _ => return Err(refused()),
            };
            let at = Path::new(directory).canonicalize().ok();
            if at.as_deref() != Some(root.as_path()) {
                return Err(refused());
            }
            3
        }
        (Some("binary"), _) => {
            let file = file_of(&root, &program).ok_or_else(refused)?;
            return Ok((file.to_string_lossy().into_owned(), args));
        }
        _ => return Err(refused()),
    };
    let file = (args.get(runs))
        .and_then(|arg| file_of(&root, arg))
        .ok_or_else(refused)?;
    args[runs] = file.to_string_lossy().into_owned();
    Ok((program, args))
}

/// `path` (relative to the bundle, or absolute) as a file of the bundle.
fn file_of(root: &Path, path: &str) -> Option<PathBuf> {
    let file = root.join(path).canonicalize().ok()?;
    (file.starts_with(root) && file.is_file()).then_some(file)
}

/// `value` with `${__dirname}`, `${HOME}` and `${pathSeparator}` (`${/}`)
/// filled; any other `${...}` refuses the bundle.
fn substitute(value: &str, dir: &Path) -> Result<String, BundleError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(open) = rest.find("${") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after.find('}').ok_or(BundleError::ManifestVariable)?;
        let home = || std::env::var("HOME").ok();
        let value: Option<String> = match &after[..close] {
            "__dirname" => Some(dir.to_string_lossy().into_owned()),
            "HOME" => home(),
            "pathSeparator" | "/" => Some(std::path::MAIN_SEPARATOR.to_string()),
            _ => None,
        };
        out.push_str(&value.ok_or(BundleError::ManifestVariable)?);
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}
