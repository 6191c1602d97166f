//! [`FileTokenStore`]: tokens in a JSON file, for the command and for
//! services that restart; not for replicas that share tokens (Redis is).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, PoisonError};

use futures_util::future::BoxFuture;

use super::TokenKey;
use super::{StoreError, TokenStore};
use crate::store::Tokens;

/// Tokens kept in a JSON file (for the command, and for services that
/// restart), created readable and writable by its owner only (`0600`) and
/// replaced whole on every save, so a crash never leaves half a file.
pub struct FileTokenStore {
    path: std::path::PathBuf,
    lock: Mutex<()>,
}

impl FileTokenStore {
    /// A store in `path` (created on the first save).
    pub fn new(path: impl Into<std::path::PathBuf>) -> Self {
        FileTokenStore {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }

    fn read(&self) -> HashMap<String, Tokens> {
        std::fs::read(&self.path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    fn write(&self, map: &HashMap<String, Tokens>) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(map).map_err(std::io::Error::other)?;
        crate::store::write_private(&self.path, &bytes)
    }
}

impl fmt::Debug for FileTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileTokenStore").finish_non_exhaustive()
    }
}

impl TokenStore for FileTokenStore {
    fn load<'a>(&'a self, key: &'a TokenKey) -> BoxFuture<'a, Result<Option<Tokens>, StoreError>> {
        let _held = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let found = self.read().remove(&key.canonical());
        Box::pin(async move { Ok(found) })
    }

    fn save<'a>(
        &'a self,
        key: &'a TokenKey,
        tokens: &'a Tokens,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let saved = {
            let _held = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
            let mut map = self.read();
            map.insert(key.canonical(), tokens.clone());
            self.write(&map).map_err(StoreError::from)
        };
        Box::pin(async move { saved })
    }

    fn forget<'a>(&'a self, key: &'a TokenKey) -> BoxFuture<'a, Result<(), StoreError>> {
        let forgotten = {
            let _held = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
            let mut map = self.read();
            if map.remove(&key.canonical()).is_some() {
                self.write(&map).map_err(StoreError::from)
            } else {
                Ok(())
            }
        };
        Box::pin(async move { forgotten })
    }
}

#[cfg(test)]
mod file_tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;
    use crate::store::TokenResponse;

    #[tokio::test]
    async fn a_file_store_is_private_and_survives_a_new_value() {
        let dir = std::env::temp_dir().join(format!("mcp-connect-tokens-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokens.json");
        let tokens = serde_json::from_str::<TokenResponse>(
            r#"{"access_token":"a","refresh_token":"r","token_type":"DPoP"}"#,
        )
        .unwrap()
        .into_tokens(None);
        assert!(tokens.is_dpop_bound());
        let key = TokenKey::new("https://x/mcp", "https://as", "");
        let store = FileTokenStore::new(&path);
        store.save(&key, &tokens).await.unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            FileTokenStore::new(&path).load(&key).await.unwrap(),
            Some(tokens)
        );
        store.forget(&key).await.unwrap();
        assert_eq!(store.load(&key).await.unwrap(), None);
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Issue 24, item 3.13: a store that cannot be written says so.
    #[tokio::test]
    async fn a_file_store_that_cannot_be_written_reports_it() {
        let path = std::env::temp_dir()
            .join(format!("mcp-connect-missing-{}", std::process::id()))
            .join("tokens.json");
        let tokens = serde_json::from_str::<TokenResponse>(r#"{"access_token":"a"}"#)
            .unwrap()
            .into_tokens(None);
        let error = FileTokenStore::new(&path)
            .save(&TokenKey::new("https://x/mcp", "https://as", ""), &tokens)
            .await
            .unwrap_err();
        let io = std::error::Error::source(&error)
            .and_then(|e| e.downcast_ref::<std::io::Error>())
            .unwrap();
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    }
}
