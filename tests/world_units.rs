//! A world's extensions (`doubleagent::world`): one instance per type, made on first use.

use std::sync::Arc;

use doubleagent::world::World;
use doubleagent::Scenario;

#[derive(Default)]
struct First(std::sync::atomic::AtomicU64);

#[derive(Default)]
struct Second(u8);

#[test]
fn an_extension_is_made_once_and_then_found() {
    let world = World::new(Arc::new(Scenario::quickstart()), None);
    let a = world.extension::<First>();
    a.0.store(7, std::sync::atomic::Ordering::Relaxed);
    let b = world.extension::<Second>();
    assert_eq!(b.0, 0);
    // The same instance every time.
    assert!(std::ptr::eq(a, world.extension::<First>()));
    assert_eq!(
        world
            .extension::<First>()
            .0
            .load(std::sync::atomic::Ordering::Relaxed),
        7
    );
    assert!(std::ptr::eq(b, world.extension::<Second>()));
}
