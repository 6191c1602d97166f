//! The command line of a stdio server, and where its program is.
//!
//! The program is looked up before anything is started, on the `PATH` the
//! child will run with (its own `env` when that sets `PATH`, else this
//! process's), as `execvp` would: a service or a desktop application often
//! has a shorter `PATH` than the shell its config was written in, and
//! "`npx` not found on /usr/bin:/bin" says what a bare ENOENT does not.

use std::ffi::OsString;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::transport::MissingProgram;

/// The command line of a stdio server.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct StdioCommand {
    pub(super) program: OsString,
    pub(super) args: Vec<OsString>,
    pub(super) env: Vec<(OsString, OsString)>,
    pub(super) current_dir: Option<PathBuf>,
}

impl StdioCommand {
    /// A program to run, found on `PATH` like a shell would.
    pub fn new(program: impl Into<OsString>) -> Self {
        StdioCommand {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            current_dir: None,
        }
    }

    /// Adds arguments.
    #[must_use]
    pub fn args<I, A>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the child. Values are never printed.
    #[must_use]
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        let (key, value) = (key.into(), value.into());
        // One value per variable, the last set, as `std::process::Command`.
        match self.env.iter_mut().find(|(known, _)| *known == key) {
            Some(set) => set.1 = value,
            None => self.env.push((key, value)),
        }
        self
    }

    /// Runs the child in `dir` (by default this process's directory).
    #[must_use]
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.current_dir = Some(dir.into());
        self
    }

    /// The program.
    pub fn program(&self) -> &OsString {
        &self.program
    }

    /// The arguments, in order.
    pub fn arguments(&self) -> &[OsString] {
        &self.args
    }

    /// The variables set for the child, in the order they were given.
    pub fn environment(&self) -> &[(OsString, OsString)] {
        &self.env
    }

    /// A stable 128-bit fingerprint (hex, SHA-256) of everything that
    /// selects the server this command starts: the program, the arguments,
    /// the environment set for it and its working directory. Two commands
    /// that differ only in a token in `env` (`github-work` and
    /// `github-personal`) or in `cwd` (two `node index.js` projects) are two
    /// servers. For keys that must not reveal any of it.
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut hash = Sha256::new();
        hash.update(b"mcp-connect stdio server v2\0");
        let mut part = |tag: &[u8], bytes: &[u8]| {
            // Length-prefixed, so no two different commands hash alike.
            hash.update(tag);
            hash.update((bytes.len() as u64).to_be_bytes());
            hash.update(bytes);
        };
        part(b"p", self.program.as_bytes());
        for arg in &self.args {
            part(b"a", arg.as_bytes());
        }
        for (key, value) in &self.env {
            part(b"k", key.as_bytes());
            part(b"v", value.as_bytes());
        }
        if let Some(dir) = &self.current_dir {
            part(b"d", dir.as_os_str().as_bytes());
        }
        crate::transport::redact::hex(&hash.finalize()[..16])
    }
}

impl fmt::Debug for StdioCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Arguments can carry tokens; show only the program and counts.
        f.debug_struct("StdioCommand")
            .field("program", &self.program)
            .field("args", &self.args.len())
            .field("env", &self.env.len())
            .finish()
    }
}

/// The `PATH` `execvp` searches when none is set.
const DEFAULT_PATH: &str = "/bin:/usr/bin";

impl StdioCommand {
    /// The `PATH` the child runs with: the last `PATH` its `env` sets,
    /// else this process's.
    fn child_path(&self) -> OsString {
        self.env
            .iter()
            .rev()
            .find(|(key, _)| key == "PATH")
            .map(|(_, value)| value.clone())
            .or_else(|| std::env::var_os("PATH"))
            .unwrap_or_else(|| DEFAULT_PATH.into())
    }

    /// Where the program is: a name with a `/` as written (relative to the
    /// child's working directory), a bare name in the first directory of
    /// the child's `PATH` that holds an executable file of that name.
    pub(crate) fn locate(&self) -> Result<PathBuf, MissingProgram> {
        let in_child_dir = |path: &Path| match &self.current_dir {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.to_path_buf(),
        };
        let missing = |path: Option<OsString>| MissingProgram {
            program: self.program.clone(),
            path,
        };
        if self.program.as_bytes().contains(&b'/') {
            let path = Path::new(&self.program);
            return if executable(&in_child_dir(path)) {
                Ok(path.to_path_buf())
            } else {
                Err(missing(None))
            };
        }
        if self.program.is_empty() {
            return Err(missing(None));
        }
        let path = self.child_path();
        std::env::split_paths(&path)
            .map(|dir| {
                // An empty entry is the working directory, as for execvp.
                let dir = if dir.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    dir
                };
                in_child_dir(&dir.join(&self.program))
            })
            .find(|candidate| executable(candidate))
            .ok_or_else(|| missing(Some(path)))
    }
}

fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_is_found_on_the_path_the_child_gets() {
        let sh = StdioCommand::new("sh").locate().unwrap();
        assert!(sh.is_absolute() && sh.ends_with("sh"), "{sh:?}");

        // The child's own PATH is searched, not this process's.
        let missing = StdioCommand::new("sh")
            .env("PATH", "/nonexistent/bin:/also/not")
            .locate()
            .unwrap_err();
        assert_eq!(missing.program(), "sh");
        assert_eq!(
            missing.to_string(),
            "no executable `sh` on the PATH the server runs with (/nonexistent/bin:/also/not)"
        );
        let dir = std::env::temp_dir().join(format!("mcp-locate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tool = dir.join("my-server");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        // Not executable: skipped, as execvp does.
        assert!(StdioCommand::new("my-server")
            .env("PATH", dir.as_os_str())
            .locate()
            .is_err());
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let found = StdioCommand::new("my-server")
            .env("PATH", "/nonexistent")
            .env("PATH", dir.as_os_str())
            .locate()
            .unwrap();
        assert_eq!(found, tool);

        // A name with a slash is not searched for; a relative one is in the
        // child's working directory.
        let relative = StdioCommand::new("./my-server").current_dir(&dir);
        assert_eq!(relative.locate().unwrap(), Path::new("./my-server"));
        let elsewhere = StdioCommand::new("./my-server").current_dir("/");
        let missing = elsewhere.locate().unwrap_err();
        assert_eq!(missing.path(), None);
        assert_eq!(missing.to_string(), "no executable file `./my-server`");
        assert!(StdioCommand::new("").locate().is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
