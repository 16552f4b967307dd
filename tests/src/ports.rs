//! Free TCP ports on 127.0.0.1.

use std::net::TcpListener;

/// A port that was free a moment ago. The kernel does not hand a just-closed ephemeral
/// port out again at once, so the gap until a server binds it is safe enough for tests.
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}
