//! Reading the config file, and the `${input:ID}` values it asks for,
//! asked on the terminal (VS Code's `inputs`): each missing one once, with
//! the file's
//! description as the prompt; a `password` input is read without echo
//! (echo off before its prompt shows; rpassword reads it) and never shown. Nothing is asked when stdin is not a
//! terminal: the entries that need an answer are then refused, naming the
//! input. The answers are kept for the run, so a reload asks nothing. A
//! registry entry's secret variables are inputs too (its `server.json`
//! fetched before anything is asked, and again on a reload only when the
//! entry is new or changed).
//!
//! Nothing here holds the command past its first signal or its deadline:
//! the file is read on a blocking thread (a FIFO with no writer, a stalled
//! file system hold that thread only), the registry's documents are
//! fetched a few at a time, and each wait ends at the signal or at
//! `--deadline` ([`Bounded`]).

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use mcp_connect::config::{ConfigFileError, ConfigSource, Format, Input, ServersConfig};
use mcp_connect::registry::RegistryOptions;
use mcp_connect::transport::HttpClient;
use nix::sys::termios;
use tokio_util::sync::CancellationToken;

use super::output::shown;

/// The config file with its answers and registry documents (the library's
/// [`ConfigSource`]), and what bounds every wait.
pub(super) struct Answers {
    source: ConfigSource,
    bound: Bounded,
}

/// What ends a wait: the first signal, and a deadline.
#[derive(Clone)]
pub(super) struct Bounded {
    pub(super) cancel: CancellationToken,
    pub(super) limit: std::time::Duration,
}

impl Bounded {
    /// `work`'s output, or `None` when the signal or the limit came first.
    async fn wait<T>(&self, work: impl std::future::Future<Output = T>) -> Option<T> {
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => None,
            done = tokio::time::timeout(self.limit, work) => done.ok(),
        }
    }
}

/// A wait the signal or the deadline ended, as a file error.
fn ended() -> ConfigFileError {
    ConfigFileError::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "not read before the deadline or a signal",
    ))
}

impl Answers {
    /// No answer yet; the file at `path` read strictly as the standard
    /// when asked.
    pub(super) fn new(path: &Path, standard: bool, bound: Bounded) -> Self {
        let source = ConfigSource::new(path);
        let source = match standard {
            true => source.with_format(Format::Standard),
            false => source,
        };
        Answers { source, bound }
    }

    /// Reads the file, fetching its registry entries' `server.json`
    /// through `client` as `options` say, then asking on the terminal for
    /// every input an entry was refused for want of.
    pub(super) async fn read_asking(
        &mut self,
        client: &HttpClient,
        options: &RegistryOptions,
    ) -> Result<ServersConfig, ConfigFileError> {
        let config = self.reread(client, options).await?;
        let missing = config.missing_inputs();
        match ask_for(config.inputs(), &missing) {
            Some(given) => {
                for (id, value) in given {
                    self.source.answer(id, value);
                }
                self.bound
                    .wait(self.source.read_known())
                    .await
                    .unwrap_or_else(|| Err(ended()))
            }
            None => Ok(config),
        }
    }

    /// Reads the file again, fetching the `server.json` of every registry
    /// entry not fetched before from the same source (on a reload: an
    /// entry that is new or changed); nothing is asked (a reload runs
    /// unattended). Ends at the first signal or the deadline.
    pub(super) async fn reread(
        &mut self,
        client: &HttpClient,
        options: &RegistryOptions,
    ) -> Result<ServersConfig, ConfigFileError> {
        let bound = self.bound.clone();
        match bound.wait(self.source.read(client, options)).await {
            Some(read) => read,
            // The deadline cut the registry's fetches: what the file says
            // with the documents fetched so far.
            None if !bound.cancel.is_cancelled() => bound
                .wait(self.source.read_known())
                .await
                .unwrap_or_else(|| Err(ended())),
            None => Err(ended()),
        }
    }
}

/// The answers to `missing` asked on the terminal, each with its declared
/// prompt (a `password` input without echo); `None` when there is nothing
/// to ask or no terminal to ask on: the entries stay refused.
pub(super) fn ask_for(declared: &[Input], missing: &[&str]) -> Option<Vec<(String, String)>> {
    if missing.is_empty() || !std::io::stdin().is_terminal() {
        return None;
    }
    let mut given = Vec::new();
    for id in missing {
        let input = declared.iter().find(|input| input.id() == *id);
        let label = input.and_then(|input| input.description()).unwrap_or(id);
        let prompt = format!("{}: ", shown(label));
        let secret = input.is_some_and(|input| input.is_password());
        given.push(((*id).to_owned(), ask(&prompt, secret).ok()?));
    }
    Some(given)
}

/// One answer from the terminal, echoed or not.
fn ask(prompt: &str, secret: bool) -> std::io::Result<String> {
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")?;
    // For a secret, echo goes off before the prompt shows: an answer typed
    // or pasted the moment it appears is never echoed (rpassword alone
    // shows the prompt first, and a fast answer was echoed: found by the
    // pty test under load). rpassword then reads it, and the guard puts
    // the terminal back as it was.
    let _restore = secret.then(|| EchoOff::new(&tty)).transpose()?;
    let mut shown = &tty;
    shown.write_all(prompt.as_bytes())?;
    shown.flush()?;
    if secret {
        return rpassword::read_password();
    }
    let mut line = String::new();
    std::io::BufReader::new(&tty).read_line(&mut line)?;
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}

/// The terminal without echo until dropped, then as it was.
struct EchoOff<'a> {
    tty: &'a std::fs::File,
    original: termios::Termios,
}

impl<'a> EchoOff<'a> {
    fn new(tty: &'a std::fs::File) -> std::io::Result<Self> {
        let original = termios::tcgetattr(tty)?;
        let mut quiet = original.clone();
        quiet.local_flags.remove(termios::LocalFlags::ECHO);
        termios::tcsetattr(tty, termios::SetArg::TCSANOW, &quiet)?;
        Ok(EchoOff { tty, original })
    }
}

impl Drop for EchoOff<'_> {
    fn drop(&mut self) {
        // Nothing better to do if the terminal is gone.
        let _ = termios::tcsetattr(self.tty, termios::SetArg::TCSANOW, &self.original);
    }
}
