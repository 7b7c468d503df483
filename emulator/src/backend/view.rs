//! A window on a backend: some of its systems, under the Ids one BMC
//! endpoint gives them.
//!
//! Each endpoint of the process (and the main service root, for the systems
//! without an endpoint of their own) serves a `View`, so that one backend
//! serves a rack of BMCs: every system is in exactly one view; a single-
//! system endpoint whose profile has fixed Ids shows it as
//! `System.Embedded.1`, `1` or `Self`. Calls are passed through with the
//! backend's own Id; what comes back carries the view's.

use std::sync::Arc;

use async_trait::async_trait;

use super::{Backend, BackendError, Completion, Result};
use crate::model::{Change, MediaImage, MediaSlot, ResetType, System, SystemRef};

/// One system of a view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The Id clients see.
    pub id: String,
    /// The backend's Id.
    pub inner: String,
    pub name: String,
}

pub struct View {
    inner: Arc<dyn Backend>,
    members: Vec<Member>,
}

impl View {
    pub fn new(inner: Arc<dyn Backend>, members: Vec<Member>) -> Self {
        View { inner, members }
    }

    pub fn members(&self) -> &[Member] {
        &self.members
    }

    fn inner_id(&self, id: &str) -> Result<&str> {
        self.members
            .iter()
            .find(|m| m.id == id)
            .map(|m| m.inner.as_str())
            .ok_or_else(|| BackendError::NotFound(id.to_string()))
    }

    fn outer(&self, mut sys: System) -> System {
        if let Some(m) = self.members.iter().find(|m| m.inner == sys.id) {
            sys.id = m.id.clone();
        }
        sys
    }
}

#[async_trait]
impl Backend for View {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    async fn systems(&self) -> Result<Vec<SystemRef>> {
        Ok(self
            .members
            .iter()
            .map(|m| SystemRef {
                id: m.id.clone(),
                name: m.name.clone(),
            })
            .collect())
    }

    /// By the view's Id, the name, or the backend's Id (which then
    /// redirects to the view's, as a name does).
    async fn find(&self, id_or_name: &str) -> Result<Option<SystemRef>> {
        Ok(self
            .members
            .iter()
            .find(|m| m.id == id_or_name || m.name == id_or_name || m.inner == id_or_name)
            .map(|m| SystemRef {
                id: m.id.clone(),
                name: m.name.clone(),
            }))
    }

    async fn system(&self, id: &str) -> Result<System> {
        let sys = self.inner.system(self.inner_id(id)?).await?;
        Ok(self.outer(sys))
    }

    async fn reset(&self, id: &str, reset: ResetType) -> Result<()> {
        self.inner.reset(self.inner_id(id)?, reset).await
    }

    async fn apply(&self, id: &str, changes: Vec<Change>) -> Result<System> {
        let sys = self.inner.apply(self.inner_id(id)?, changes).await?;
        Ok(self.outer(sys))
    }

    async fn insert_media(&self, id: &str, slot: MediaSlot, img: MediaImage) -> Result<Completion> {
        self.inner.insert_media(self.inner_id(id)?, slot, img).await
    }

    fn manages_volumes(&self) -> bool {
        self.inner.manages_volumes()
    }

    async fn console(&self, id: &str) -> Result<super::SerialConsole> {
        self.inner.console(self.inner_id(id)?).await
    }

    /// The backend is flushed once, by whoever owns it, not per view.
    async fn flush(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::fake::{FakeBackend, FakeOptions};
    use crate::backend::machines::fake_systems;

    #[tokio::test]
    async fn a_view_shows_its_members_under_its_ids_only() {
        let systems = fake_systems(3);
        let inner_id = systems[1].id.clone();
        let backend: Arc<dyn Backend> =
            Arc::new(FakeBackend::new(systems, FakeOptions::default()).unwrap());
        let view = View::new(
            backend.clone(),
            vec![Member {
                id: "System.Embedded.1".into(),
                inner: inner_id.clone(),
                name: "node-1".into(),
            }],
        );
        let refs = view.systems().await.unwrap();
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0].id, "System.Embedded.1");
        let sys = view.system("System.Embedded.1").await.unwrap();
        assert_eq!(
            (sys.id.as_str(), sys.name.as_str()),
            ("System.Embedded.1", "node-1")
        );
        // The backend's Id and the name find it (and redirect to the view's Id).
        for key in [inner_id.as_str(), "node-1"] {
            assert_eq!(
                view.find(key).await.unwrap().unwrap().id,
                "System.Embedded.1"
            );
        }
        // Other systems of the backend are not there.
        assert!(view.find("node-0").await.unwrap().is_none());
        assert!(matches!(
            view.system(&inner_id).await,
            Err(BackendError::NotFound(_))
        ));
        // Changes reach the backend's system.
        view.reset("System.Embedded.1", ResetType::On)
            .await
            .unwrap();
        let after = backend.system(&inner_id).await.unwrap();
        assert_ne!(after.power, crate::model::PowerState::Off);
        let tagged = view
            .apply(
                "System.Embedded.1",
                vec![Change::Settings(crate::model::SystemSettings {
                    asset_tag: Some("rack-7".into()),
                    ..Default::default()
                })],
            )
            .await
            .unwrap();
        assert_eq!(
            tagged.id, "System.Embedded.1",
            "the answer carries the view's Id"
        );
        assert_eq!(
            backend.system(&inner_id).await.unwrap().bmc.asset_tag,
            "rack-7"
        );
    }
}
