//! The hub's watches under races (see the parent module).

use super::*;

fn watched(hub: &Hub, sub: u64, dir: &Path) -> bool {
    let st = hub.state();
    st.by_wd
        .values()
        .flatten()
        .any(|e| e.sub == sub && e.path == dir && matches!(e.kind, Kind::Target { top: true, .. }))
}

/// CI failure of `watch::directories_made_after_the_start_are_watched_at_once`:
/// `mkdir -p a/b` made `b` after `resolve` saw `a` without it and before
/// `a` was watched; nothing told the source, and `a/b` waited for the
/// hourly scan. Raced here a few hundred times, with the path made on
/// another thread while the hub resolves.
#[test]
fn a_directory_made_while_its_parent_is_being_watched_is_watched() {
    let hub = Hub::get().unwrap();
    let root = tempfile::tempdir().unwrap();
    for i in 0..300 {
        let top = root.path().join(format!("r{i}"));
        let dir = top.join("a/b/c");
        let sub = hub.subscribe(&[(dir.clone(), false)]);
        let maker = {
            let dir = dir.clone();
            std::thread::spawn(move || std::fs::create_dir_all(dir).unwrap())
        };
        // The hub resolves on every event of the parents, as the path grows.
        maker.join().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !watched(hub, sub.id, &dir) {
            assert!(std::time::Instant::now() < deadline, "round {i}: {} is not watched", dir.display());
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(sub);
    }
}
