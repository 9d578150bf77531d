//! MCP sessions every replica can continue: rmcp's [`SessionStore`] over the hub's
//! [`crate::records`] ([`Kind::Mcp`], sealed under the session id).
//!
//! rmcp keeps a live session in the memory of the replica that opened it. A request for a session
//! this replica does not hold (another replica opened it, or this one restarted) loads the record,
//! and rmcp replays the client's `initialize` into a fresh in-memory session, which starts its
//! `list_changed` watcher like any other. The record names the session's space (workspace cluster,
//! user, groups): a store serves only its own space, so a session id cannot be carried to another
//! workspace or user on any replica (rmcp then answers 404 and the client re-initializes). One user
//! keeps at most [`Kind::cap_per_owner`] sessions per replica.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::{SessionState, SessionStore, SessionStoreError};

use crate::records::{Kind, Records};

/// How long a session record lives without a `DELETE` (the client then re-initializes).
pub const MCP_SESSION_TTL: Duration = Duration::from_secs(24 * 3600);

/// (cluster, user, groups): who may use the sessions of one space.
pub type SessionSpace = (String, String, Vec<String>);

#[derive(serde::Serialize, serde::Deserialize)]
struct Stored {
    space: SessionSpace,
    state: SessionState,
}

/// The records of one session space.
pub struct SpaceStore {
    records: Records,
    space: SessionSpace,
}

impl SpaceStore {
    pub fn new(records: Records, space: SessionSpace) -> Self {
        Self { records, space }
    }

    /// The stored state, if the record belongs to this store's space.
    pub fn admit(&self, stored_space: &SessionSpace) -> bool {
        *stored_space == self.space
    }

    async fn load_inner(&self, id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let found = self.records.get::<Stored>(Kind::Mcp, id).await?;
        Ok(found.and_then(|(s, _)| self.admit(&s.space).then_some(s.state)))
    }

    async fn store_inner(&self, id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let ttl = jiff::SignedDuration::try_from(MCP_SESSION_TTL).unwrap_or_default();
        let stored = Stored {
            space: self.space.clone(),
            state: state.clone(),
        };
        // Counted as the user's: an agent that opens session after session ends its own oldest
        // ([`crate::records::owners`]), whatever the sessions' lifetime.
        self.records
            .put_owned(Kind::Mcp, id, &self.space.1, &stored, self.records.now() + ttl)
            .await?;
        Ok(())
    }

    async fn delete_inner(&self, id: &str) -> Result<(), SessionStoreError> {
        // Only the space's own session may be ended from it.
        if self
            .records
            .get::<Stored>(Kind::Mcp, id)
            .await?
            .is_some_and(|(s, _)| self.admit(&s.space))
        {
            self.records.delete(Kind::Mcp, id).await?;
        }
        Ok(())
    }
}

type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, SessionStoreError>> + Send + 'a>>;

// rmcp declares the trait with `async_trait`; these are its desugared signatures.
impl SessionStore for SpaceStore {
    fn load<'life0, 'life1, 'async_trait>(
        &'life0 self,
        session_id: &'life1 str,
    ) -> StoreFuture<'async_trait, Option<SessionState>>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(self.load_inner(session_id))
    }

    fn store<'life0, 'life1, 'life2, 'async_trait>(
        &'life0 self,
        session_id: &'life1 str,
        state: &'life2 SessionState,
    ) -> StoreFuture<'async_trait, ()>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        'life2: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(self.store_inner(session_id, state))
    }

    fn delete<'life0, 'life1, 'async_trait>(&'life0 self, session_id: &'life1 str) -> StoreFuture<'async_trait, ()>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(self.delete_inner(session_id))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use rmcp::model::{ClientCapabilities, Implementation, InitializeRequestParams};

    use super::*;
    use crate::catalog::clock::ManualClock;

    fn space(cluster: &str, user: &str) -> SessionSpace {
        (cluster.into(), user.into(), vec!["devs".into()])
    }

    #[tokio::test]
    async fn a_session_is_loaded_only_in_its_own_space() {
        let clock = Arc::new(ManualClock::new("2026-01-01T00:00:00Z".parse().unwrap()));
        let records = Records::in_process(clock);
        let mine = SpaceStore::new(records.clone(), space("c1", "alice"));
        let state = SessionState::new(InitializeRequestParams::new(
            ClientCapabilities::default(),
            Implementation::new("client", "1"),
        ));
        mine.store("sid", &state).await.unwrap();
        assert!(mine.load("sid").await.unwrap().is_some());
        assert!(mine.load("other").await.unwrap().is_none());
        for (other, what) in [
            (space("c2", "alice"), "another workspace"),
            (space("c1", "bob"), "another user"),
            (("c1".into(), "alice".into(), vec!["admins".into()]), "other groups"),
        ] {
            let store = SpaceStore::new(records.clone(), other);
            assert!(store.load("sid").await.unwrap().is_none(), "{what}");
            store.delete("sid").await.unwrap();
            assert!(mine.load("sid").await.unwrap().is_some(), "{what} cannot end it");
        }
        mine.delete("sid").await.unwrap();
        assert!(mine.load("sid").await.unwrap().is_none());
    }

    /// An agent that opens session after session holds at most the cap: its oldest are ended.
    #[tokio::test]
    async fn one_users_sessions_are_capped() {
        let clock = Arc::new(ManualClock::new("2026-01-01T00:00:00Z".parse().unwrap()));
        let records = Records::in_process(clock);
        let state = SessionState::new(InitializeRequestParams::new(
            ClientCapabilities::default(),
            Implementation::new("client", "1"),
        ));
        let cap = Kind::Mcp.cap_per_owner();
        // The cap is the user's, across the workspaces the sessions are for.
        for i in 0..=cap {
            let store = SpaceStore::new(records.clone(), space(&format!("c{}", i % 2), "alice"));
            store.store(&format!("sid{i}"), &state).await.unwrap();
        }
        let bob = SpaceStore::new(records.clone(), space("c0", "bob"));
        bob.store("bob1", &state).await.unwrap();
        let first = SpaceStore::new(records.clone(), space("c0", "alice"));
        assert!(first.load("sid0").await.unwrap().is_none(), "the oldest was ended");
        let last = SpaceStore::new(records.clone(), space(&format!("c{}", cap % 2), "alice"));
        assert!(last.load(&format!("sid{cap}")).await.unwrap().is_some());
        assert!(
            bob.load("bob1").await.unwrap().is_some(),
            "another user's are not counted"
        );
    }
}
