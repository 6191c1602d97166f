//! Each server's part of the catalogue, in shards.
//!
//! A published catalogue shares the parts with the group; the first change
//! after a publish must copy what it changes. One map of every server
//! copied once per burst of changes made a lazy start of 10,000 servers
//! O(n^2) (BTreeMap clones were the top user-space symbol); with the
//! servers spread over 64 maps by a hash of their name, a change copies
//! one of them, and a publish copies 64 pointers.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Part;

const SHARDS: usize = 64;

type Shard = BTreeMap<Arc<str>, Arc<Part>>;

#[derive(Debug, Clone, Default)]
pub(crate) struct Parts {
    /// Empty until the first part is set, then `SHARDS` long.
    shards: Vec<Arc<Shard>>,
}

/// FNV-1a: the shard of a server's name (no key an outsider chooses
/// reaches it but the server names the application gave).
fn shard_of(server: &str) -> usize {
    let hash = (server.bytes()).fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    (hash % SHARDS as u64) as usize
}

impl Parts {
    pub(crate) fn get(&self, server: &str) -> Option<&Arc<Part>> {
        self.shards.get(shard_of(server))?.get(server)
    }

    /// Sets (or, `None`, removes) `server`'s part.
    pub(crate) fn set(&mut self, server: &Arc<str>, part: Option<Part>) {
        if self.shards.is_empty() {
            self.shards = vec![Arc::default(); SHARDS];
        }
        let shard = Arc::make_mut(&mut self.shards[shard_of(server)]);
        match part {
            Some(part) => shard.insert(Arc::clone(server), Arc::new(part)),
            None => shard.remove(server),
        };
    }

    /// Every part, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &Arc<Part>)> {
        self.shards.iter().flat_map(|shard| shard.iter())
    }

    /// Every part, by server name.
    pub(crate) fn in_order(&self) -> Vec<(&Arc<str>, &Arc<Part>)> {
        let mut parts: Vec<_> = self.iter().collect();
        parts.sort_unstable_by_key(|(server, _)| *server);
        parts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_found_replaced_removed_and_listed_in_server_order() {
        let mut parts = Parts::default();
        let names: Vec<Arc<str>> = (0..200).map(|i| Arc::from(format!("s{i:03}"))).collect();
        for name in names.iter().rev() {
            parts.set(name, Some(Part::default()));
        }
        let published = parts.clone();
        parts.set(&names[7], None);
        assert!(parts.get("s007").is_none());
        assert!(published.get("s007").is_some(), "a published copy keeps it");
        let order: Vec<&str> = parts.in_order().iter().map(|(s, _)| &***s).collect();
        let expected: Vec<&str> = (names.iter().map(|s| &**s))
            .filter(|s| *s != "s007")
            .collect();
        assert_eq!(order, expected);
    }
}
