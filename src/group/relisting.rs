//! What the supervisor lists, kind by kind, into the member's listing;
//! when it may list again and why a listing failed are `listing.rs`'s.

use std::sync::{Arc, PoisonError};

use mcp_connect_layers::FailureKind;

use super::catalogue::Listing;
use super::health::HealthState;
use super::listing::{on_transport, ListingFailed};
use super::member::Supervisor;
use crate::client::ClientError;
use crate::inbound::ListKind;
use crate::protocol::{ListPrompts, ListResourceTemplates, ListResources};

impl Supervisor {
    /// The group's remembered listings and this member's key in them.
    fn remembered(&self) -> Option<(super::RememberedListings, String)> {
        let group = self.group.upgrade()?;
        let listings = group.remembered.clone()?;
        Some((listings, self.member.remember_as.clone()?))
    }

    /// What is remembered of this member's listing.
    pub(super) fn remembered_listing(&self) -> Option<super::catalogue::Listing> {
        let (listings, key) = self.remembered()?;
        listings.get(&key)
    }

    /// [`publish`](Self::publish)es what the server just listed, and
    /// remembers it.
    pub(super) fn publish_listed(&self, listing: Listing) {
        if let Some((listings, key)) = self.remembered() {
            listings.put(&key, &listing);
        }
        self.publish(Some(listing));
    }

    /// Lists everything the server's capabilities offer, on the current
    /// session, and publishes it; a usable member is then ready.
    pub(super) async fn refresh(&mut self) -> Result<(), ListingFailed> {
        let generation = self.member.client.generation();
        // Made right after an establishment: in its trace, not traces of
        // their own.
        let session = self.member.client.session().await.ok();
        let work = Box::pin(self.list_everything());
        let listed = match session {
            Some((session, _)) => session.within_establishment(work).await,
            None => work.await,
        };
        // Done with this session's listing, however it went (a shutdown
        // waits for it: `ServerGroup::shutdown_within`).
        self.member.listed.send_replace(generation);
        listed
    }

    async fn list_everything(&mut self) -> Result<(), ListingFailed> {
        let mut listing = Listing::default();
        for kind in [ListKind::Tools, ListKind::Prompts, ListKind::Resources] {
            self.list(kind, &mut listing).await?;
        }
        self.publish_listed(listing);
        self.set(HealthState::Ready);
        Ok(())
    }

    /// Lists one kind again after the server said it changed.
    pub(super) async fn refresh_kind(&mut self, kind: ListKind) -> Result<(), ListingFailed> {
        let current = self
            .member
            .listing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let Some(current) = current else {
            return Ok(());
        };
        let mut listing = (*current).clone();
        self.list(kind, &mut listing).await?;
        self.publish_listed(listing);
        Ok(())
    }

    /// One listing, into `listing`. Tools are always asked for (servers
    /// that forget to declare the capability are common, and a server
    /// without tools answers with an error, which leaves the list empty);
    /// prompts and resources only when the server's capabilities offer
    /// them, which saves two requests per server that has neither. A
    /// failure on transport, or a refusal of the session the client kept,
    /// is the caller's to handle; a server that declines the listing (a
    /// JSON-RPC error, an HTTP error status) leaves that kind empty; any
    /// other failure (a timeout, a size or page limit, an answer that is no
    /// listing) is the member's, its error kept.
    pub(super) async fn list(
        &self,
        kind: ListKind,
        listing: &mut Listing,
    ) -> Result<(), ListingFailed> {
        let client = &self.member.client;
        let offered = match kind {
            ListKind::Tools => true,
            _ => match client.session().await {
                Ok((session, _)) => {
                    let key = match kind {
                        ListKind::Prompts => "prompts",
                        _ => "resources",
                    };
                    session.capabilities().get(key).is_some()
                }
                Err(error) => return Err(ListingFailed::Transport(error.failure())),
            },
        };
        if !offered {
            return Ok(());
        }
        let kept = |result: Result<(), ClientError>| match result {
            Err(error) if on_transport(&error) => Err(ListingFailed::Transport(error.failure())),
            Err(error @ ClientError::RefusedAgain { .. }) => {
                Err(ListingFailed::Refused(error.failure()))
            }
            Err(error)
                if matches!(
                    error.failure().kind,
                    FailureKind::Rpc | FailureKind::HttpStatus
                ) =>
            {
                Ok(())
            }
            Err(error) => Err(ListingFailed::Unserved(self.keep(error))),
            Ok(()) => Ok(()),
        };
        match kind {
            ListKind::Tools => kept(client.list_tools().await.map(|listed| {
                let names = listed.tools.iter().map(|tool| tool.name.as_str());
                listing.unmatched = self.member.filter.unmatched(names);
                let before = (self.member.listing.lock())
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .as_ref()
                    .map(|before| before.unmatched.clone());
                let new = before.is_none_or(|before| before != listing.unmatched);
                for pattern in listing.unmatched.iter().filter(|_| new) {
                    tracing::warn!(
                        target: "mcp_connect::group",
                        server = %self.member.name,
                        pattern = %pattern,
                        "a tool filter pattern matches none of the server's tools"
                    );
                }
                listing.tools = listed
                    .tools
                    .into_iter()
                    .filter(|tool| self.member.filter.allows_tool(tool))
                    .map(Arc::new)
                    .collect();
            })),
            ListKind::Prompts => kept(client.send(ListPrompts::all()).await.map(|prompts| {
                listing.prompts = prompts.items.into_iter().map(Arc::new).collect();
            })),
            _ => {
                kept(client.send(ListResources::all()).await.map(|resources| {
                    listing.resources = resources.items.into_iter().map(Arc::new).collect();
                }))?;
                let templates = client.send(ListResourceTemplates::all()).await;
                kept(templates.map(|templates| {
                    listing.templates = templates.items.into_iter().map(Arc::new).collect();
                }))
            }
        }
    }
}
