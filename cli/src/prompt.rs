//! The `${input:ID}` values a config file asks for, asked on the terminal
//! (VS Code's `inputs`): each missing one once, with the file's
//! description as the prompt; a `password` input is read without echo
//! (rpassword) and never shown. Nothing is asked when stdin is not a
//! terminal: the entries that need an answer are then refused, naming the
//! input. The answers are kept for the run, so a reload asks nothing.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use mcp_connect::config::{ConfigFileError, Format, ServersConfig, Variables};

use super::output::shown;

/// The inputs answered on the terminal, by id, and whether the file is
/// read as the draft standard `mcp.json` (`--standard`).
#[derive(Default)]
pub(super) struct Answers(Vec<(String, String)>, bool);

impl Answers {
    /// No answer yet; the file read strictly as the standard when asked.
    pub(super) fn new(standard: bool) -> Self {
        Answers(Vec::new(), standard)
    }

    /// Reads `path` with these answers and the process's environment.
    pub(super) fn read(&self, path: &Path) -> Result<ServersConfig, ConfigFileError> {
        let env = |name: &str| std::env::var(name).ok();
        let variables = (self.0.iter()).fold(Variables::new(&env), |variables, (id, value)| {
            variables.with_input(id.as_str(), value.as_str())
        });
        let format = match self.1 {
            true => Format::Standard,
            false => Format::of_path(path),
        };
        ServersConfig::read_as(path, format, &variables)
    }

    /// Reads `path`, first asking on the terminal for every input an entry
    /// was refused for want of.
    pub(super) fn read_asking(&mut self, path: &Path) -> Result<ServersConfig, ConfigFileError> {
        let config = self.read(path)?;
        let missing = config.missing_inputs();
        if missing.is_empty() || !std::io::stdin().is_terminal() {
            return Ok(config);
        }
        for id in missing {
            let declared = config.inputs().iter().find(|input| input.id() == id);
            let label = declared.and_then(|input| input.description()).unwrap_or(id);
            let prompt = format!("{}: ", shown(label));
            let secret = declared.is_some_and(|input| input.is_password());
            match ask(&prompt, secret) {
                Ok(value) => self.0.push((id.to_owned(), value)),
                // No terminal after all: the entry stays refused.
                Err(_) => return Ok(config),
            }
        }
        self.read(path)
    }
}

/// One answer from the terminal, echoed or not.
fn ask(prompt: &str, secret: bool) -> std::io::Result<String> {
    if secret {
        return rpassword::prompt_password(prompt);
    }
    let mut tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")?;
    tty.write_all(prompt.as_bytes())?;
    tty.flush()?;
    let mut line = String::new();
    std::io::BufReader::new(tty).read_line(&mut line)?;
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}
