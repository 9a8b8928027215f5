//! The A2A agent's request handler (`doubleagent::agent::a2a::handle`).

use doubleagent::agent::a2a::handle;
use doubleagent::agent::{AgentRequest, Ctx};
use doubleagent::scenario::a2a::A2aAgent;

fn future_size<'a, Fut>(_: fn(Ctx<'a>, &'a A2aAgent, AgentRequest) -> Fut) -> usize {
    std::mem::size_of::<Fut>()
}

/// The server boxes an agent's future and hyper's task moves it, a copy on every call.
#[test]
fn a_call_future_stays_small() {
    let size = future_size(handle);
    assert!(size <= 1024, "a2a::handle's future is {size} bytes");
}
