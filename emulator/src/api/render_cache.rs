//! The last rendering of each System resource, reused while the system is
//! unchanged (the GET and the PATCH's If-Match check share it).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use super::json::Rendered;
use crate::model::System;

/// One system's resource as last rendered, and the system it shows.
pub struct SystemView {
    sys: System,
    /// What else the rendering shows that is not in `sys` (HPE's POST
    /// state, which moves with time).
    extra: u8,
    pub json: Value,
    pub rendered: Rendered,
}

/// The last rendering of each system's resource. Drivers poll a system far
/// more often than they change it, so a GET whose system equals the one
/// last rendered is answered with the same bytes and ETag, and a PATCH
/// checks against the same JSON. The rendering is a pure function of the
/// `System` (its profile included), `extra` and the service's fixed feature set, so
/// equality is the whole validity check: no write path has to remember to
/// invalidate anything.
#[derive(Default)]
pub struct RenderCache(RwLock<HashMap<String, Arc<SystemView>>>);

impl RenderCache {
    /// Entries kept at most (some 20 KiB each), so that a large inventory
    /// polled in full does not double its memory.
    const MAX: usize = 1024;

    pub fn get_or_render(
        &self,
        sys: &System,
        extra: u8,
        build: impl FnOnce() -> (Value, Rendered),
    ) -> Arc<SystemView> {
        let cached = self.read().get(&sys.id).cloned();
        if let Some(view) = cached.filter(|v| v.sys == *sys && v.extra == extra) {
            return view;
        }
        let (json, rendered) = build();
        let view = Arc::new(SystemView {
            sys: sys.clone(),
            extra,
            json,
            rendered,
        });
        let mut map = self.0.write().unwrap_or_else(|p| p.into_inner());
        if map.len() >= Self::MAX && !map.contains_key(&sys.id) {
            if let Some(k) = map.keys().next().cloned() {
                map.remove(&k);
            }
        }
        map.insert(sys.id.clone(), view.clone());
        view
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<SystemView>>> {
        self.0.read().unwrap_or_else(|p| p.into_inner())
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.read().len()
    }
}

#[cfg(test)]
mod tests {
    use super::{RenderCache, Rendered};
    use crate::api::json::Resource;
    use crate::config::test_system;
    use std::cell::Cell;

    fn render(renders: &Cell<u32>, tag: &str) -> (serde_json::Value, Rendered) {
        renders.set(renders.get() + 1);
        let body = serde_json::json!({"AssetTag": tag});
        let r = Resource::new(body.clone(), crate::profile::generic(), "GET").render();
        (body, r)
    }

    #[test]
    fn the_render_cache_answers_an_unchanged_system_and_only_that() {
        let cache = RenderCache::default();
        let renders = Cell::new(0);
        let mut sys = test_system("a");
        let first = cache.get_or_render(&sys, 0, || render(&renders, "1"));
        let again = cache.get_or_render(&sys, 0, || render(&renders, "unused"));
        assert_eq!(renders.get(), 1);
        assert_eq!(again.rendered.bytes, first.rendered.bytes);
        assert_eq!(again.json["AssetTag"], "1");
        // Any change to the machine is a new rendering, with a new ETag.
        sys.bmc.asset_tag = "changed".into();
        let changed = cache.get_or_render(&sys, 0, || render(&renders, "2"));
        assert_eq!(renders.get(), 2);
        assert_ne!(changed.rendered.etag, first.rendered.etag);
        sys.bmc.boot.http_boot_uri = Some("http://h/x.efi".into());
        cache.get_or_render(&sys, 0, || render(&renders, "3"));
        assert_eq!(renders.get(), 3);
        // What else the rendering shows (a POST state) is part of the key.
        cache.get_or_render(&sys, 2, || render(&renders, "4"));
        assert_eq!(renders.get(), 4);
        cache.get_or_render(&sys, 2, || render(&renders, "unused"));
        assert_eq!(renders.get(), 4);
        // Bounded: a large inventory polled in full keeps at most MAX.
        for i in 0..RenderCache::MAX + 10 {
            let s = test_system(&format!("n{i}"));
            cache.get_or_render(&s, 0, || render(&renders, "x"));
        }
        assert_eq!(cache.len(), RenderCache::MAX);
    }
}
