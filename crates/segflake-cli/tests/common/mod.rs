//! What the tests that start servers share: free ports, waiting for a port, a child
//! process on a throwaway directory that is killed (and its directory removed) on drop, and
//! a minimal HTTP client.

use std::io::{Read, Write};
use std::net::TcpStream;
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

// Each test binary compiles this module and uses part of it.
#[allow(dead_code)]
mod http {
    use super::*;

    pub struct Reply {
        pub status: u16,
        /// The status line and headers, lower-cased.
        pub head: String,
        pub body: String,
    }

    impl Reply {
        pub fn json(&self) -> serde_json::Value {
            serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
        }

        pub fn code(&self) -> String {
            self.json()["code"].as_str().unwrap_or_default().to_string()
        }
    }

    /// One HTTP/1.1 request on a new connection to 127.0.0.1:`port`.
    pub fn request(port: u16, method: &str, path: &str, headers: &[&str]) -> Reply {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut req =
            format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
        for h in headers {
            req.push_str(h);
            req.push_str("\r\n");
        }
        req.push_str("\r\n");
        s.write_all(req.as_bytes()).unwrap();
        let mut raw = String::new();
        s.read_to_string(&mut raw).unwrap();
        let (head, body) = raw.split_once("\r\n\r\n").expect("a complete response");
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        Reply {
            status,
            head: head.to_ascii_lowercase(),
            body: body.to_string(),
        }
    }

    pub fn get(port: u16, path: &str) -> Reply {
        request(port, "GET", path, &[])
    }
}
#[allow(unused_imports)]
pub use http::{get, request, Reply};
