//! What the tests that start servers share: free ports, waiting for a port, and a child
//! process on a throwaway directory that is killed (and its directory removed) on drop.

use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Waits until something accepts connections on `port` of the loopback (at most 30 s).
pub fn wait_for_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "no server on port {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A server process on a throwaway directory, listening on `port`; killed on drop.
pub struct Server {
    pub child: Child,
    pub port: u16,
    pub dir: PathBuf,
}

// Each test binary compiles this module and uses part of it.
#[allow(dead_code)]
impl Server {
    /// `127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
